"""A batch through scripted workers: lines per second, the server's CPU per line, and the memory the server holds
while it reads and writes the batch's files, for two sizes of the same count of lines.

One `python -m horde serve` process (SQLite by default; --backend postgresql or both), scripted worker processes
that answer at once, and the OpenAI SDK: upload the JSONL file, create the batch, poll it until it completed,
download its output file. For each size (the lines' prompts padded to --pad characters, so that the file's bytes
differ by an order of magnitude while its count of lines does not), printed:

- lines/s: the lines over the time from the batch's creation to its completion (what the driver, the queue and the
  workers sustain together);
- CPU ms/line: the server process's user + system CPU over that time, per line (its pops and submits included);
- the server's peak RSS growth (VmHWM less the RSS before; /proc/PID/clear_refs resets the peak) while the upload is
  received (the file streamed into the database), while the batch runs (the file validated and read line by line,
  the output written line by line), and while the output file is downloaded.

    .venv/bin/python bench/batch.py                       # 10,000 lines, prompts of 40 and 2,000 characters
    .venv/bin/python bench/batch.py --lines 2000 --pad 40 --pad 8000 --backend both

The venv imports this checkout; run it from another checkout (with that checkout's venv) to measure that code.
"""

from __future__ import annotations

import io
import json
import sys
import time
import uuid
from pathlib import Path

import _support as S
import openai

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.processes import Server, Worker, base_env

MODEL = "bench/batch-model"
WORKERS, THREADS = 2, 16
POLL_S = 0.5
RUN_TIMEOUT_S = 3600.0
RULES = {"rules": [{"match": {}, "reply": {"content": "You wrote: {last_user}"}}]}


def batch_file(lines: int, pad: int) -> bytes:
    filler = "x" * max(0, pad - 12)
    rows = []
    for number in range(lines):
        body = {
            "model": MODEL,
            "messages": [{"role": "user", "content": f"line {number:06d} {filler}"}],
            "max_tokens": 16,
        }
        rows.append(
            json.dumps({"custom_id": f"l{number}", "method": "POST", "url": "/v1/chat/completions", "body": body})
        )
    return ("\n".join(rows) + "\n").encode()


def peak_growth_mb(pid: int, action) -> tuple[float, object]:
    """The process's peak RSS growth while `action` runs, in MB, and what the action returned."""
    before = S.rss_kib(pid)
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    result = action()
    return (_status_kib(pid, "VmHWM") - before) / 1024, result


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def run_one(server: Server, client: openai.OpenAI, lines: int, pad: int) -> list:
    pid = server.popen.pid
    data = io.BytesIO(batch_file(lines, pad))
    upload_mb, uploaded = peak_growth_mb(pid, lambda: client.files.create(file=("bench.jsonl", data), purpose="batch"))
    data.close()

    def run():
        cpu_before, started = S.cpu_seconds(pid), time.monotonic()
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        deadline = started + RUN_TIMEOUT_S
        while batch.status not in ("completed", "failed", "expired", "cancelled"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the batch did not end in {RUN_TIMEOUT_S} s: {batch}")
            time.sleep(POLL_S)
            batch = client.batches.retrieve(batch.id)
        return batch, time.monotonic() - started, S.cpu_seconds(pid) - cpu_before

    run_mb, (batch, elapsed_s, cpu_s) = peak_growth_mb(pid, run)
    if batch.status != "completed" or batch.request_counts.completed != lines:
        raise SystemExit(f"the batch did not complete every line: {batch}")

    def download():
        size = 0
        with client.files.with_streaming_response.content(batch.output_file_id) as answer:
            for piece in answer.iter_bytes():
                size += len(piece)
        return size

    download_mb, output_bytes = peak_growth_mb(pid, download)
    S.log(f"{lines} lines, pad {pad}: {elapsed_s:.1f} s")
    return [
        lines,
        f"{uploaded.bytes / 1e6:.1f}",
        f"{output_bytes / 1e6:.1f}",
        f"{lines / elapsed_s:.0f}",
        f"{cpu_s / lines * 1000:.2f}",
        f"{upload_mb:.1f}",
        f"{run_mb:.1f}",
        f"{download_mb:.1f}",
    ]


def measure(backend: str, admin_url: str, args) -> list[list]:
    database = (
        S.PostgresBenchDatabase(admin_url) if backend == "postgresql" else S.SqliteBenchDatabase("horde-bench-batch-")
    )
    runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
    init_schema(runtime)
    with runtime.db.transaction() as session:
        _, client_key = accounts.create_user(session, f"bench-client-{uuid.uuid4().hex[:6]}", kudos=10**9)
        _, owner_key = accounts.create_user(session, f"bench-owner-{uuid.uuid4().hex[:6]}", trusted=True)
    env = base_env(
        database.url,
        HORDE_RATE_LIMIT_PER_MINUTE=10**9,
        HORDE_BATCH_MAX_IN_FLIGHT=args.in_flight,
        HORDE_FILE_STORE_MAX_BYTES=10**11,
        HORDE_HTTP_BODY_TIMEOUT_S=600,
    )
    rules = Path(S.tempfile.mkdtemp(prefix="horde-bench-batch-rules-")) / "rules.json"
    rules.write_text(json.dumps(RULES))
    server = Server(env)
    workers = [
        Worker(
            server,
            owner_key,
            f"bench-batch-{n}",
            [MODEL],
            "--backend",
            "scripted",
            "--rules",
            str(rules),
            "--threads",
            str(THREADS),
            "--wait",
            "5",
            env=env,
        )
        for n in range(WORKERS)
    ]
    rows = []
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=client_key, max_retries=0, timeout=600)
        for pad in args.pad:
            rows.append([backend, pad, *run_one(server, client, args.lines, pad)])
    finally:
        for worker in workers:
            S.stop_and_remove_log(worker)
        S.stop_and_remove_log(server)
        runtime.close()
        database.drop()
    return rows


def main(argv=None) -> int:
    parser = S.backends_parser(__doc__)
    parser.set_defaults(backend="sqlite")
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--pad", type=int, action="append", help="prompt characters (default: 40 and 2,000)")
    parser.add_argument("--in-flight", type=int, default=128, help="HORDE_BATCH_MAX_IN_FLIGHT")
    args = parser.parse_args(argv)
    args.pad = args.pad or [40, 2000]
    speed = S.machine_speed_s()
    rows = S.rows_of_each_backend(args, measure)
    headers = [
        "backend",
        "pad",
        "lines",
        "file MB",
        "output MB",
        "lines/s",
        "CPU ms/line",
        "upload peak MB",
        "run peak MB",
        "download peak MB",
    ]
    print(S.table(headers, rows))
    print(
        f"workers: {WORKERS} scripted x {THREADS} threads; HORDE_BATCH_MAX_IN_FLIGHT {args.in_flight}; "
        f"machine: a Python loop of 10,000,000 additions took {speed:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
