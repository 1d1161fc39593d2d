"""The stats endpoints on an old Horde's tables: what one call costs with N past requests, on SQLite and PostgreSQL.

`GET /api/v2/stats/chat/totals`, `/stats/text/totals` and `/stats/text/models` answer anyone, without a key. A fresh
database (bench/_history.py writes N finished chat requests, a day old and older, one a second) and a server on it
(`python -m horde serve`); once its sweeper has rolled the history up (decision 0026; a checkout without the rollup
is measured at once), each endpoint is called K times in turn. Printed per endpoint: the latency's median and p90,
and the server's and (PostgreSQL on this machine) the database's CPU ms per call.

    .venv/bin/python bench/stats.py                              # both backends, 300,000 past requests
    .venv/bin/python bench/stats.py --backend sqlite --history 100000 --calls 20

Run it from another checkout with `PYTHONPATH=.` to measure that checkout's server side by side.
"""

from __future__ import annotations

import time
import uuid

import _history
import _support as S
import requests
from sqlalchemy import func, inspect, select

from horde.accounts import service as accounts
from horde.timeutil import utcnow
from tests.support.processes import Server, base_env

ENDPOINTS = ("/api/v2/stats/chat/totals", "/api/v2/stats/text/totals", "/api/v2/stats/text/models")
CALL_TIMEOUT_S = 300.0
#: How long the sweeper may take to roll the history up (a day of it per sweep, a sweep a second).
ROLLUP_WAIT_S = 300.0
#: The rollup has caught up once its mark stands within this of the present minus its lag (a minute, and a sweep).
CAUGHT_UP_SLACK_S = 65


def main() -> None:
    parser = S.backends_parser(__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=300_000, help="past requests written first (default 300000)")
    parser.add_argument("--calls", type=int, default=30, help="calls per endpoint (default 30)")
    args = parser.parse_args()
    rows = S.rows_of_each_backend(args, measure)
    headers = ["server", "past requests", "endpoint", *S.CALL_HEADERS]
    print(f"stats endpoints: {args.calls} calls each, in turn, after the sweeper's rollup (if any) caught up")
    print(S.table(headers, rows))
    print(f"machine: a Python loop of 10,000,000 additions took {S.machine_speed_s():.2f} s")


def measure(backend: str, admin_url: str, args) -> list[list]:
    with S.fresh_runtime(backend, admin_url, "stats") as runtime:
        with runtime.db.transaction() as session:
            tag = uuid.uuid4().hex[:6]
            client, _ = accounts.create_user(session, f"bench-stats-client-{tag}")
            owner, _ = accounts.create_user(session, f"bench-stats-owner-{tag}", trusted=True)
            client_id, owner_id = client.id, owner.id
        started = time.monotonic()
        _history.fill(runtime, args.history, [client_id], owner_id)
        if runtime.db.is_postgresql:
            with runtime.db.autocommit() as session:
                session.connection().exec_driver_sql("ANALYZE")
        S.log(f"{backend}: {args.history} past requests written in {time.monotonic() - started:.1f} s")
        server = Server(base_env(runtime.db.url))
        try:
            S.log(f"{backend}: {caught_up(runtime)}")
            return _calls(backend, runtime, server, args)
        finally:
            S.stop_and_remove_log(server)


def _calls(backend: str, runtime, server: Server, args) -> list[list]:
    rows = []
    with requests.Session() as http:
        for endpoint in ENDPOINTS:  # a call each first: the server's connections are open when counted
            http.get(server.url + endpoint, timeout=CALL_TIMEOUT_S).raise_for_status()
        backends = S.database_backends(runtime)
        for endpoint in ENDPOINTS:

            def call(endpoint=endpoint):
                http.get(server.url + endpoint, timeout=CALL_TIMEOUT_S).raise_for_status()

            figures = S.timed_calls(server.popen.pid, backends, args.calls, call)
            rows.append([S.server_label(backend), args.history, endpoint, *figures])
    return rows


def caught_up(runtime) -> str:
    """Wait for the server's sweeper to roll the history up: how long it took, or why nothing was waited for."""
    with runtime.db.read() as session:
        if not inspect(session.connection()).has_table("served_marks"):
            return "this checkout keeps no rollup: measured at once"
    from horde.stats.models import ServedMark
    from horde.stats.rollup import ROLLUP_LAG_S

    marks = select(func.min(ServedMark.rolled_until), func.count())

    started = time.monotonic()
    while time.monotonic() - started < ROLLUP_WAIT_S:
        with runtime.db.read() as session:
            oldest, series = session.execute(marks).one()
        if (
            series == 2
            and oldest is not None
            and (utcnow() - oldest).total_seconds() < ROLLUP_LAG_S + CAUGHT_UP_SLACK_S
        ):
            return f"the sweeper's rollup reached the present in {time.monotonic() - started:.1f} s"
        time.sleep(0.5)
    raise SystemExit(f"the sweeper's rollup did not reach the present within {ROLLUP_WAIT_S:.0f} s")


if __name__ == "__main__":
    main()
