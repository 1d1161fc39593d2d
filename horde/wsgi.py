"""WSGI entry point for production: `gunicorn -k gevent 'horde.wsgi:app'`.

Each gunicorn worker imports it after gevent patched the process: it creates
the schema (safe when several start at once) and starts that process's sweeper.
"""

from horde.app import create_app, init_schema
from horde.config import Settings
from horde.runtime import Runtime
from horde.server import start_sweeper

runtime = Runtime.build(Settings.from_env())
init_schema(runtime)
app = create_app(runtime=runtime)
start_sweeper(runtime)
