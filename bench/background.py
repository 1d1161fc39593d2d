"""Background responses: what keeping a stream's progress costs a progress post, and what a replay costs.

In one process, through the app (Flask's test client, no HTTP), on a fresh SQLite database and on PostgreSQL when
it answers:

* progress post, plain stream: a chat request queued natively and popped; --posts progress posts, each adding
  16 characters to the text. This is every request that is not a background stream: its post must cost what it
  cost before (the `--compare` row, when given, is another checkout's, measured the same way in a subprocess).
* progress post, background stream: the same posts for a `background: true, stream: true` response, whose every
  post is kept as the delta it added (horde/background/progress_log.py).
* replay: GET /v1/responses/{id}?stream=true of that response once finished (every event rendered from the kept
  posts), and resumed near its end (`starting_after`): milliseconds per replay and events per millisecond.

Printed per row: calls, p50 and p90 ms, this process's CPU ms per call (SQLite's work included), and PostgreSQL's
backends' CPU ms per call when they run on this machine.

    .venv/bin/python bench/background.py
    .venv/bin/python bench/background.py --backend sqlite --posts 400 --compare ../main   # before and after
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
import uuid

import _support as S

#: A row of this checkout, or of the --compare checkout.
ROW_HEADERS = ["checkout", "backend", "measure", *S.CALL_HEADERS]
PIECE = "sixteen chars.. "
MODEL = "bench/background"


def _declaration(name: str) -> dict:
    return {
        "name": name,
        "models": [MODEL],
        "max_length": 4096,
        "max_context_length": 8192,
        "threads": 4,
        "bridge_agent": "bench:1:local",
    }


class Posts:
    """One app on a fresh database, a worker owner and a client with kudos."""

    def __init__(self, runtime):
        from horde.accounts import service as accounts
        from horde.app import create_app

        self.runtime = runtime
        self.client = create_app(runtime=runtime).test_client()
        with runtime.db.transaction() as session:
            _, self.owner = accounts.create_user(session, f"owner-{uuid.uuid4().hex[:6]}", trusted=True)
            _, self.key = accounts.create_user(session, f"client-{uuid.uuid4().hex[:6]}", kudos=1_000_000)
        self.worker = _declaration(f"bench-{uuid.uuid4().hex[:6]}")
        self.pop()

    def pop(self) -> str | None:
        answer = self.client.post("/api/v2/generate/chat/pop", json=self.worker, headers={"apikey": self.owner})
        assert answer.status_code == 200, answer.json
        return answer.json["id"]

    def plain(self) -> str:
        body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4096}
        answer = self.client.post("/api/v2/generate/chat/async", json=body, headers={"apikey": self.key})
        assert answer.status_code == 202, answer.json
        return answer.json["id"]

    def background_stream(self) -> str:
        body = {"model": MODEL, "input": "Hi", "background": True, "stream": True, "max_output_tokens": 4096}
        answer = self.client.post(
            "/v1/responses", json=body, headers={"Authorization": f"Bearer {self.key}"}, buffered=False
        )
        assert answer.status_code == 200, answer.get_data()
        request_id = answer.headers["x-request-id"]
        answer.close()
        return request_id

    def post_each(self, job: str, posts: int, database_pids: list[int]) -> list[str]:
        text = []

        def post():
            text.append(PIECE)
            answer = self.client.post(
                "/api/v2/generate/chat/progress",
                json={"id": job, "content": "".join(text)},
                headers={"apikey": self.owner},
            )
            assert answer.status_code == 200 and not answer.json["cancel"], answer.json

        row = S.timed_calls(os.getpid(), database_pids, posts, post)
        submitted = self.client.post(
            "/api/v2/generate/chat/submit", json={"id": job, "content": "".join(text)}, headers={"apikey": self.owner}
        )
        assert submitted.status_code == 200, submitted.json
        return row

    def replay(self, request_id: str, after: int | None) -> int:
        query = "?stream=true" + ("" if after is None else f"&starting_after={after}")
        answer = self.client.get(
            f"/v1/responses/resp_{request_id.replace('-', '')}{query}",
            headers={"Authorization": f"Bearer {self.key}"},
            buffered=False,
        )
        events = b"".join(answer.response).count(b"\ndata: ")
        answer.close()
        return events


def measure(backend: str, admin_url: str, args) -> list[list]:
    rows = []
    with S.fresh_runtime(backend, admin_url, "background") as runtime:
        posts = Posts(runtime)
        pids = S.database_backends(runtime)
        posts.plain()
        rows.append([backend, "progress post, plain stream", *posts.post_each(posts.pop(), args.posts, pids)])
        if importlib.util.find_spec("horde.background") is None:
            return rows  # a checkout from before background responses
        request_id = posts.background_stream()
        rows.append([backend, "progress post, background stream", *posts.post_each(posts.pop(), args.posts, pids)])
        events = posts.replay(request_id, None)
        for label, after in (("replay, every event", None), ("replay, the last 5 events", events - 6)):
            started = time.perf_counter()
            row = S.timed_calls(os.getpid(), pids, args.replays, lambda after=after: posts.replay(request_id, after))
            rate = events * args.replays / ((time.perf_counter() - started) * 1000)
            rows.append([backend, f"{label} ({events} events, {rate:.0f} rendered/ms)", *row])
    return rows


def main(argv=None) -> int:
    parser = S.backends_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=300, help="progress posts per request (default 300)")
    parser.add_argument("--replays", type=int, default=20, help="replays of the finished stream (default 20)")
    parser.add_argument("--compare", help="another checkout (its root): the same measures of its code, first")
    parser.add_argument("--rows-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)  # the request log of every call
    rows = []
    if args.compare:
        rows += _rows_of(args.compare, argv if argv is not None else sys.argv[1:])
    this = S.rows_of_each_backend(args, measure)
    if args.rows_json:
        print(json.dumps(this))
        return 0
    rows += [["this", *row] for row in this]
    print(S.table(ROW_HEADERS, rows))
    print(f"machine: a Python loop of 10,000,000 additions took {S.machine_speed_s():.2f} s")
    return 0


def _rows_of(checkout: str, argv: list[str]) -> list[list]:
    """This bench run on another checkout's code (its own horde first on the path)."""
    own = [
        arg for index, arg in enumerate(argv) if arg != "--compare" and (index == 0 or argv[index - 1] != "--compare")
    ]
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    found = subprocess.run(
        [sys.executable, __file__, *own, "--rows-json"], env=env, check=True, capture_output=True, text=True
    )
    return [[os.path.basename(os.path.abspath(checkout)), *row] for row in json.loads(found.stdout.splitlines()[-1])]


if __name__ == "__main__":
    sys.exit(main())
