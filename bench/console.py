"""The account console's reads on a long ledger: what a ledger page, the balance history and the usage cost with N
past entries, on SQLite and PostgreSQL.

A fresh database per size: one user with N ledger entries (a charge or a reward every few minutes, the newest now,
so the last 30 days hold a share of them) and a usage row per day, and a server on it (`python -m horde serve`).
Each read is called K times in turn with the user's key: the first page of the ledger (50 entries), a page deep in
it (its cursor taken from a walk of 20 pages), the 30 days' balance history and usage. A page should cost the same at
10,000 and 200,000 entries (its own rows); the history and usage read the window's entries or days.

    .venv/bin/python bench/console.py                               # both backends, 10,000 and 200,000 entries
    .venv/bin/python bench/console.py --backend sqlite --sizes 10000 --calls 20
"""

from __future__ import annotations

import datetime as dt
import random
import time
import uuid

import _support as S
import requests
from sqlalchemy import insert, update

from horde.accounts import service as accounts
from horde.accounts.models import KudosEntry, User
from horde.stats.models import UserUsageDay
from horde.timeutil import utcnow
from tests.support.processes import Server, base_env

CALL_TIMEOUT_S = 60.0
INSERT_CHUNK = 5_000
#: The span of the history: the entries are spread evenly over it, the newest now.
HISTORY_DAYS = 120
DEEP_PAGES = 20


def main() -> None:
    parser = S.backends_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,200000", help="ledger entries, comma-separated (10000,200000)")
    parser.add_argument("--calls", type=int, default=30, help="calls per read (default 30)")
    args = parser.parse_args()
    rows = S.rows_of_each_backend(args, measure)
    print(f"console reads: {args.calls} calls each, in turn, one user's ledger of each size")
    print(S.table(["server", "ledger entries", "read", *S.CALL_HEADERS], rows))
    print(f"machine: a Python loop of 10,000,000 additions took {S.machine_speed_s():.2f} s")


def measure(backend: str, admin_url: str, args) -> list[list]:
    rows = []
    for size in (int(size) for size in args.sizes.split(",")):
        with S.fresh_runtime(backend, admin_url, "console") as runtime:
            started = time.monotonic()
            user_id, key = _fill(runtime, size)
            if runtime.db.is_postgresql:
                with runtime.db.autocommit() as session:
                    session.connection().exec_driver_sql("ANALYZE")
            S.log(f"{backend}: {size} ledger entries written in {time.monotonic() - started:.1f} s")
            server = Server(base_env(runtime.db.url))
            try:
                rows += _calls(backend, runtime, server, args, size, user_id, key)
            finally:
                S.stop_and_remove_log(server)
    return rows


def _fill(runtime, size: int) -> tuple[int, str]:
    """One user with `size` entries over HISTORY_DAYS and a usage row per day; its id and key."""
    rng = random.Random(size)
    with runtime.db.transaction() as session:
        user, key = accounts.create_user(session, f"bench-console-{uuid.uuid4().hex[:6]}")
        user_id = user.id
    now = utcnow()
    step = dt.timedelta(days=HISTORY_DAYS) / size
    balance = 0
    for first in range(0, size, INSERT_CHUNK):
        entries = []
        for index in range(first, min(size, first + INSERT_CHUNK)):
            amount = rng.randint(1, 30) * (1 if rng.random() < 0.6 else -1)
            kind = "reward" if amount > 0 else "charge"
            at = now - (size - index) * step
            entries.append({"user_id": user_id, "amount": amount, "kind": kind, "created_at": at, "request_id": None})
            balance += amount
        with runtime.db.transaction() as session:
            session.execute(insert(KudosEntry), entries)
    days = [
        {"user_id": user_id, "day": now.date() - dt.timedelta(days=back), "requests": 100, "tokens": 10_000}
        for back in range(HISTORY_DAYS)
    ]
    with runtime.db.transaction() as session:
        session.execute(insert(UserUsageDay), days)
        session.execute(update(User).where(User.id == user_id).values(kudos=balance))
    return user_id, key


def _calls(backend: str, runtime, server: Server, args, size: int, user_id: int, key: str) -> list[list]:
    base = f"{server.url}/api/v2/users/{user_id}"
    rows = []
    with requests.Session() as http:
        http.headers["apikey"] = key

        def get(path: str) -> dict:
            answer = http.get(base + path, timeout=CALL_TIMEOUT_S)
            answer.raise_for_status()
            return answer.json()

        cursor = get("/ledger")["next_cursor"]
        for _ in range(DEEP_PAGES):
            cursor = get(f"/ledger?cursor={cursor}")["next_cursor"]
        reads = {
            "ledger, first page": "/ledger",
            f"ledger, page {DEEP_PAGES + 2}": f"/ledger?cursor={cursor}",
            "balance_history, 30 days": "/balance_history?days=30",
            "usage, 30 days": "/usage?days=30",
        }
        backends = S.database_backends(runtime)
        for name, path in reads.items():
            get(path)
            figures = S.timed_calls(server.popen.pid, backends, args.calls, lambda path=path: get(path))
            rows.append([S.server_label(backend), size, name, *figures])
    return rows


if __name__ == "__main__":
    main()
