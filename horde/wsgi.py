"""WSGI entry point for production: `gunicorn -k gevent 'horde.wsgi:app'`.

Creates the schema on import, which is this module's one job.
"""

from horde.app import create_app, init_schema
from horde.config import Settings
from horde.runtime import Runtime

runtime = Runtime.build(Settings.from_env())
init_schema(runtime)
app = create_app(runtime=runtime)
