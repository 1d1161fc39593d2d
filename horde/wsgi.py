"""WSGI entry point for production: `gunicorn -k gevent 'horde.wsgi:app'`.

Each gunicorn worker imports it after gevent patched the process: it joins the run's metrics directory,
creates the schema (safe when several start at once; a database that lacks a migration stops the start with one
line naming `python -m horde db upgrade`), starts that process's sweeper (and, on SQLite, its
log's checkpoints), and adds the drain to gunicorn's SIGTERM handling (set gunicorn's --graceful-timeout
above HORDE_DRAIN_S).
"""

import os
import sys

from horde.config import Settings
from horde.observability import metrics

settings = Settings.from_env()
metrics.use_multiprocess_dir(settings.metrics_dir or metrics.run_directory(os.getppid()))

from horde.app import create_app, init_schema  # noqa: E402  (after the metrics directory is chosen)
from horde.events.drain import chain_sigterm  # noqa: E402
from horde.migrations.runner import SchemaBehind  # noqa: E402
from horde.ops.housekeeping import start_housekeeping  # noqa: E402
from horde.runtime import Runtime  # noqa: E402

#: gunicorn's exit code of a worker that failed to boot: its master stops instead of forking it again.
WORKER_BOOT_ERROR = 3

runtime = Runtime.build(settings)
try:
    init_schema(runtime)
except SchemaBehind as refused:  # one line naming the command, not a traceback per process
    print(refused, file=sys.stderr, flush=True)
    raise SystemExit(WORKER_BOOT_ERROR) from None
app = create_app(runtime=runtime)
start_housekeeping(runtime)
chain_sigterm(runtime)
