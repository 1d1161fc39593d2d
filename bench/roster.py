"""Admission's roster on a Horde with many retired workers: what a refusal of their model costs, chat and text.

A model that only retired workers declared is still known, so `/v1/chat/completions` and `/v1/completions` refuse it
with 503 `no_eligible_worker`; each refusal reads the roster afresh (a worker might have come online on another
process within the second), and anyone can send such a request as often as the rate limit allows. A fresh database
gets N retired workers (each declared a chat and a text model and last popped a day ago: one statement), a server
on it (`python -m horde serve`), and K refusals of each endpoint in turn. Printed per endpoint: the latency's median
and p90, and the server's and (PostgreSQL on this machine) the database's CPU ms per call.

    .venv/bin/python bench/roster.py                                 # both backends, 10,000 retired workers
    .venv/bin/python bench/roster.py --backend sqlite --retired 1000 --calls 50

Run it from another checkout with `PYTHONPATH=.` to measure that checkout's server side by side.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid

import _history
import _support as S
import requests
from sqlalchemy import inspect, text

from horde.accounts import service as accounts
from horde.timeutil import utcnow
from tests.support.processes import Server, base_env

CHAT_MODEL, TEXT_MODEL = "bench-retired-chat-model", "bench-retired-text-model"
CALLS = {
    "/v1/chat/completions": {"model": CHAT_MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16},
    "/v1/completions": {"model": TEXT_MODEL, "prompt": "Once", "max_tokens": 16},
}
RETIRED_AGE = dt.timedelta(days=1)
SERVER_SETTINGS = {"HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000}


def main() -> None:
    parser = S.backends_parser(__doc__.splitlines()[0])
    parser.add_argument("--retired", type=int, default=10_000, help="retired workers written first (default 10000)")
    parser.add_argument("--calls", type=int, default=100, help="refusals per endpoint (default 100)")
    args = parser.parse_args()
    rows = S.rows_of_each_backend(args, measure)
    headers = ["server", "retired workers", "endpoint", *S.CALL_HEADERS]
    print(f"refusals of a model only retired workers declared (503 no_eligible_worker): {args.calls} each, in turn")
    print(S.table(headers, rows))
    print(f"machine: a Python loop of 10,000,000 additions took {S.machine_speed_s():.2f} s")


def measure(backend: str, admin_url: str, args) -> list[list]:
    with S.fresh_runtime(backend, admin_url, "roster") as runtime:
        with runtime.db.transaction() as session:
            tag = uuid.uuid4().hex[:6]
            _, client_key = accounts.create_user(session, f"bench-roster-client-{tag}", kudos=100_000)
            owner, _ = accounts.create_user(session, f"bench-roster-owner-{tag}", trusted=True)
            owner_id = owner.id
        started = time.monotonic()
        retire_workers(runtime, args.retired, owner_id)
        S.log(f"{backend}: {args.retired} retired workers written in {time.monotonic() - started:.1f} s")
        server = Server(base_env(runtime.db.url, **SERVER_SETTINGS))
        try:
            return _refusals(backend, runtime, server, client_key, args)
        finally:
            S.stop_and_remove_log(server)


def _refusals(backend: str, runtime, server: Server, client_key: str, args) -> list[list]:
    headers, rows = {"Authorization": f"Bearer {client_key}"}, []
    with requests.Session() as http:
        for endpoint, body in CALLS.items():  # a call each first: the server's connections are open when counted
            _refused(http.post(server.url + endpoint, json=body, headers=headers))
        backends = S.database_backends(runtime)
        for endpoint, body in CALLS.items():

            def call(endpoint=endpoint, body=body):
                _refused(http.post(server.url + endpoint, json=body, headers=headers))

            figures = S.timed_calls(server.popen.pid, backends, args.calls, call)
            rows.append([S.server_label(backend), args.retired, endpoint, *figures])
    return rows


def _refused(answer: requests.Response) -> None:
    """The bench measures the refusal of a known model that no online worker serves, and nothing else."""
    code = answer.json().get("error", {}).get("code") if answer.status_code != 200 else None
    if (answer.status_code, code) != (503, "no_eligible_worker"):
        raise SystemExit(f"expected 503 no_eligible_worker, got {answer.status_code}: {answer.text[:300]}")


def retire_workers(runtime, count: int, owner_id: int) -> None:
    """`count` workers of `owner_id` that declared CHAT_MODEL and TEXT_MODEL on their last pops, a day ago; the
    models are remembered as their first pops did (in the tables of known models this checkout has)."""
    with runtime.db.transaction() as session:
        connection = session.connection()
        _history.retired_workers(connection, count, owner_id, "retired", CHAT_MODEL, utcnow() - RETIRED_AGE, TEXT_MODEL)
        for table, model in (("known_models", CHAT_MODEL), ("known_text_models", TEXT_MODEL)):
            if inspect(connection).has_table(table):
                connection.execute(
                    text(f"INSERT INTO {table} (name, first_declared_at) VALUES (:name, :at)"),
                    {"name": model, "at": utcnow()},
                )


if __name__ == "__main__":
    main()
