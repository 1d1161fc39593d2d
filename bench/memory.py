"""Memory one request makes a server hold, per endpoint: the peak RSS growth for a pathological body, as a ratio
to the body's size.

One `python -m horde serve` process on SQLite, with a text and a chat worker declared (native pops, no worker
process), so that a body that passes screening is admitted. For each endpoint the body carries B empty
content blocks (`{"type": "text", "text": ""}`, 26 bytes each, the shape of the issue's count_tokens bodies)
where that endpoint reads content; B is given by --blocks, by default the largest count the Horde accepts
(request_json.MAX_BODY_CONTAINERS less the body's other objects and arrays; where the module has no such
limit, 99,990 as well) and a million, the issue's. The body is sent on a raw socket; once the answer's first
bytes arrive (a stream's headers, a 202, a 400), the connection closes.

Before each body the process's peak RSS is reset to its RSS (`/proc/PID/clear_refs`, 5); after it, the peak
(VmHWM) less that RSS is the growth. Printed per endpoint and block count: the body's size, the HTTP status,
the growth in MB, and growth / body size.

    .venv/bin/python bench/memory.py
    .venv/bin/python bench/memory.py --blocks 1000000 --endpoint /v1/messages/count_tokens

The venv imports this checkout; run it from another checkout (with that checkout's venv) to measure that code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import uuid
from pathlib import Path

import _support as S
import requests

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.config import Settings
from horde.http import request_json
from horde.runtime import Runtime
from tests.support.processes import Server, base_env

MODEL = "bench/memory-model"
BLOCK = {"type": "text", "text": ""}
ISSUE_BLOCKS = 1_000_000
ANSWER_TIMEOUT_S = 600.0
#: The objects and arrays of a body besides its blocks, at most (the body, its messages, one message, its list).
OTHER_CONTAINERS = 10


def bodies(blocks: int) -> dict[str, dict]:
    """Each endpoint's body with `blocks` empty content blocks where it reads content."""
    content = [BLOCK] * blocks
    messages = [{"role": "user", "content": content}]
    return {
        "/v1/chat/completions": {"model": MODEL, "messages": messages, "stream": True, "max_tokens": 16},
        "/v1/messages": {"model": MODEL, "messages": messages, "stream": True, "max_tokens": 16},
        "/v1/messages/count_tokens": {"model": MODEL, "messages": messages},
        "/v1/responses": {
            "model": MODEL,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": ""}] * blocks}],
            "stream": True,
        },
        "/v1/completions": {"model": MODEL, "prompt": "x", "stream": True, "max_tokens": 16, "stop": content},
        "/api/v2/generate/text/async": {"models": [MODEL], "prompt": "x", "params": {"stop_sequence": content}},
        "/api/v2/generate/chat/async": {"model": MODEL, "messages": messages, "max_tokens": 16},
    }


def rss_kib(pid: int) -> int:
    return _status_kib(pid, "VmRSS")


def peak_kib(pid: int) -> int:
    return _status_kib(pid, "VmHWM")


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def send(port: int, path: str, body: bytes, key: str) -> int:
    """POST `body`; the status of the answer, once its first bytes arrived."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nAuthorization: Bearer {key}\r\n"
        f"apikey: {key}\r\nx-api-key: {key}\r\nanthropic-version: 2023-06-01\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S) as sock:
        with contextlib.suppress(OSError):  # refused from its Content-Length (413) before it was all sent
            sock.sendall(head.encode() + body)
        try:
            first = sock.recv(65536)
        except OSError:
            first = b""
    return int(first.split()[1]) if first.startswith(b"HTTP/") else 0


def declare_workers(url: str, key: str) -> None:
    for kind in ("chat", "text"):
        body = {
            "name": f"bench-memory-{kind}-{uuid.uuid4().hex[:6]}",
            "models": [MODEL],
            "max_length": 512,
            "max_context_length": 8192,
            "threads": 50,
            "wait": 0,
        }
        answer = requests.post(f"{url}/api/v2/generate/{kind}/pop", json=body, headers={"apikey": key}, timeout=30)
        answer.raise_for_status()


def accepted_blocks() -> int:
    limit = getattr(request_json, "MAX_BODY_CONTAINERS", None)
    return (limit or 100_000) - OTHER_CONTAINERS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, action="append", help="block counts (default: the largest accepted, 1M)")
    parser.add_argument("--endpoint", action="append", help="only these endpoints (default: all seven)")
    args = parser.parse_args(argv)
    counts = args.blocks or [accepted_blocks(), ISSUE_BLOCKS]

    database = S.SqliteBenchDatabase("horde-bench-memory-")
    runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
    init_schema(runtime)
    with runtime.db.transaction() as session:
        _, client_key = accounts.create_user(session, f"bench-client-{uuid.uuid4().hex[:6]}", kudos=10**9)
        _, owner_key = accounts.create_user(session, f"bench-owner-{uuid.uuid4().hex[:6]}", trusted=True)
    server = Server(
        base_env(
            database.url,
            HORDE_RATE_LIMIT_PER_MINUTE=10**9,
            HORDE_MAX_MESSAGES=10**6,
            HORDE_HTTP_BODY_TIMEOUT_S=600,
        )
    )
    pid = server.popen.pid
    rows = []
    speed = S.machine_speed_s()
    try:
        declare_workers(server.url, owner_key)
        for count in counts:
            for path, body in bodies(count).items():
                if args.endpoint and path not in args.endpoint:
                    continue
                raw = json.dumps(body).encode()
                del body
                requests.get(server.url + "/health", timeout=ANSWER_TIMEOUT_S)  # the last call's work is over
                before = rss_kib(pid)
                reset_peak(pid)
                status = send(server.port, path, raw, client_key)
                growth_mb = (peak_kib(pid) - before) / 1024
                size_mb = len(raw) / 1024 / 1024
                S.log(f"{path} {count} blocks: {status}, +{growth_mb:.0f} MB")
                rows.append([path, count, f"{size_mb:.1f}", status, f"{growth_mb:.1f}", f"{growth_mb / size_mb:.1f}"])
    finally:
        S.stop_and_remove_log(server)
        runtime.close()
        database.drop()
    print(S.table(["endpoint", "blocks", "body MB", "HTTP", "peak RSS growth MB", "growth / body"], rows))
    print(f"machine: a Python loop of 10,000,000 additions took {speed:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
