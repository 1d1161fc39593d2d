"""The OpenAI front's added latency for a non-streamed request, side by side.

A real `python -m horde serve` on SQLite and a real scripted worker long-polling with
an empty queue. Alternating, one request at a time:

* front:  the OpenAI SDK's chat.completions.create through /v1 (one HTTP call that
          returns when the worker's submit wakes the waiter);
* completions: the OpenAI SDK's completions.create through /v1/completions, served by a
          text job (the same worker pops chat and text: --kinds chat,text);
* native: POST /api/v2/generate/chat/async, then GET .../status/<id> every 10 ms until
          the state is final: a polling proxy's best case;
* worker: the worker's own time, from the jobs table (chat_jobs.started_at, set when its
          pop claims the job, to ended_at, set when its submit lands).

Each path also gets the server's mean CPU per request (from /proc; one request runs at a time).
Last, the OpenAI SDK and a plain http.client call a local server that answers at once (bench/_canned.py):
the difference is the SDK's own time, part of every front figure, and the added latency is also printed
without it.

With --llama, the same comparison against a real llama-server on the tiny model: the
Horde path (/v1 → openai-backend worker → llama-server) and a direct call to
llama-server's /v1/chat/completions.

    .venv/bin/python bench/front.py
    .venv/bin/python bench/front.py -n 20 --llama
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _support as S
import openai
import requests
from sqlalchemy import select

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.chat.models import ChatJob
from horde.config import Settings
from horde.runtime import Runtime
from horde.text.models import TextJob
from tests.support.processes import Server, Worker, base_env

MODEL = "bench/front-model"
LLAMA_MODEL = "bench/llama-tiny"
FINAL = ("done", "faulted", "cancelled")
SERVER_SETTINGS = {"HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000, "HORDE_SWEEP_INTERVAL_S": 1}


class Sample:
    """One timed request: elapsed (perf_counter), wall-clock bounds, and the Horde request id."""

    def __init__(self, elapsed: float, request_id: str | None, wall_start: float, wall_end: float):
        self.elapsed, self.request_id, self.wall_start, self.wall_end = elapsed, request_id, wall_start, wall_end
        #: The server's CPU seconds from this request's start to the next one's (its idle gap included).
        self.server_cpu_s: float | None = None


class Horde:
    """A server process on a fresh SQLite file, with a requester key and a worker owner key."""

    def __init__(self):
        self.database = S.SqliteBenchDatabase("horde-bench-front-")
        self.runtime = Runtime.build(Settings.from_env({}, database_url=self.database.url))
        init_schema(self.runtime)
        with self.runtime.db.transaction() as session:
            _, self.client_key = accounts.create_user(session, f"bench-client-{uuid.uuid4().hex[:6]}", kudos=100_000)
            _, self.owner_key = accounts.create_user(session, f"bench-owner-{uuid.uuid4().hex[:6]}", trusted=True)
        self.env = base_env(self.database.url, **SERVER_SETTINGS)
        self.server = None
        self.workers: list[Worker] = []
        try:
            self.server = Server(self.env)
        except BaseException:
            self.close()
            raise
        self.url = self.server.url

    def worker(self, models, *args) -> Worker:
        worker = Worker(
            self.server, self.owner_key, f"bench-worker-{uuid.uuid4().hex[:6]}", list(models), *args, env=self.env
        )
        self.workers.append(worker)
        return worker

    def job_times(self, request_ids) -> dict[str, tuple[float, float]]:
        """request id -> (started_at, ended_at) of its submitted job, as epoch seconds."""
        with self.runtime.db.transaction() as session:
            rows = [
                row
                for table in (ChatJob, TextJob)
                for row in session.execute(
                    select(table.request_id, table.started_at, table.ended_at).where(
                        table.request_id.in_(list(request_ids)), table.state == "submitted"
                    )
                ).all()
            ]
        epoch = lambda moment: moment.replace(tzinfo=dt.UTC).timestamp()  # noqa: E731
        return {request_id: (epoch(started), epoch(ended)) for request_id, started, ended in rows if ended}

    def close(self) -> None:
        for worker in self.workers:
            S.stop_and_remove_log(worker)
        if self.server is not None:
            S.stop_and_remove_log(self.server)
        self.runtime.close()
        self.database.drop()


def front_call(client: openai.OpenAI, body: dict) -> Sample:
    wall_start, started = time.time(), time.perf_counter()
    raw = client.chat.completions.with_raw_response.create(**body)
    completion = raw.parse()
    elapsed, wall_end = time.perf_counter() - started, time.time()
    if not completion.choices or completion.choices[0].message.content is None:
        raise RuntimeError(f"front: unexpected answer {completion}")
    return Sample(elapsed, raw.headers.get("x-request-id"), wall_start, wall_end)


def completions_call(client: openai.OpenAI, body: dict) -> Sample:
    wall_start, started = time.time(), time.perf_counter()
    raw = client.completions.with_raw_response.create(**body)
    completion = raw.parse()
    elapsed, wall_end = time.perf_counter() - started, time.time()
    if not completion.choices or not isinstance(completion.choices[0].text, str):
        raise RuntimeError(f"completions: unexpected answer {completion}")
    return Sample(elapsed, raw.headers.get("x-request-id"), wall_start, wall_end)


def native_call(session: requests.Session, url: str, body: dict, poll_s: float) -> Sample:
    wall_start, started = time.time(), time.perf_counter()
    response = session.post(url + "/api/v2/generate/chat/async", json=body, timeout=30)
    if response.status_code != 202:
        raise RuntimeError(f"native async: HTTP {response.status_code} {response.text[:300]}")
    request_id = response.json()["id"]
    deadline = started + 60
    while True:
        status = session.get(f"{url}/api/v2/generate/chat/status/{request_id}", timeout=30)
        status.raise_for_status()
        view = status.json()
        if view["state"] in FINAL:
            elapsed, wall_end = time.perf_counter() - started, time.time()
            if view["state"] != "done" or not view.get("reply"):
                raise RuntimeError(f"native: request ended {view['state']}: {view.get('faulted')}")
            return Sample(elapsed, request_id, wall_start, wall_end)
        if time.perf_counter() > deadline:
            raise RuntimeError(f"native: request {request_id} not done after 60 s")
        time.sleep(poll_s)


def client_floor(n: int, warmup: int, body: dict, gap_s: float) -> tuple[float, float]:
    """Medians (s) of a call to a local server that answers at once (bench/_canned.py): by the OpenAI SDK as
    front_call makes it, and by a plain http.client POST of the same body. Their difference is the SDK's own
    time, which every figure of the front's path includes."""
    canned = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_canned.py"))], stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(canned.stdout.readline())
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="canned", max_retries=0, timeout=30)
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        payload = json.dumps(body).encode()

        def plain_call() -> Sample:
            wall_start, started = time.time(), time.perf_counter()
            plain.request("POST", "/v1/chat/completions", payload, {"Content-Type": "application/json"})
            answer = json.loads(plain.getresponse().read())
            elapsed = time.perf_counter() - started
            if not answer["choices"]:
                raise RuntimeError("canned: no choices")
            return Sample(elapsed, None, wall_start, time.time())

        calls = [("sdk", lambda: front_call(client, body)), ("plain", plain_call)]
        alternate(warmup, calls, gap_s)
        results = alternate(n, calls, gap_s)
        plain.close()
        return S.median([s.elapsed for s in results["sdk"]]), S.median([s.elapsed for s in results["plain"]])
    finally:
        canned.kill()
        canned.wait()


def row(name: str, values: list[float], reference: float | None = None) -> list:
    med = S.median(values)
    ratio = f"{med / reference:.2f}" if reference else ""
    return [name, len(values), S.ms(med), S.ms(S.percentile(values, 99)), ratio]


def latency_table(baseline: str, paths: list[tuple[str, list[float]]], baseline_median: float) -> str:
    """One row per path: n, median and p99 in ms, and its median over the baseline's."""
    headers = ["path", "n", "median ms", "p99 ms", f"÷ {baseline} median"]
    return S.table(headers, [row(name, values, baseline_median) for name, values in paths])


def phases(samples: list[Sample], jobs: dict) -> tuple[list[float], list[float], list[float]]:
    """(request sent → job claimed, claimed → submitted, submitted → answer received), seconds."""
    before, worker, after = [], [], []
    for sample in samples:
        if sample.request_id in jobs:
            started, ended = jobs[sample.request_id]
            before.append(started - sample.wall_start)
            worker.append(ended - started)
            after.append(sample.wall_end - ended)
    return before, worker, after


def alternate(n: int, calls: list, gap_s: float, server_cpu_s=None) -> dict[str, list[Sample]]:
    """Run the calls in turn n times (order flipped every other round), pausing gap_s after each. With
    `server_cpu_s` (the server's CPU seconds so far), each sample gets the server's CPU until the next call:
    one call runs at a time, so what the server spends meanwhile is that call's (and its share of idle)."""
    results = {name: [] for name, _ in calls}
    previous = None  # (sample, the server's CPU seconds when it started)
    for index in range(n):
        for name, call in calls if index % 2 == 0 else calls[::-1]:
            started_cpu_s = server_cpu_s() if server_cpu_s else 0.0
            if previous is not None and server_cpu_s:
                previous[0].server_cpu_s = started_cpu_s - previous[1]
            sample = call()
            results[name].append(sample)
            previous = (sample, started_cpu_s)
            time.sleep(gap_s)  # the worker is back in its long-poll: idle
    if previous is not None and server_cpu_s:
        previous[0].server_cpu_s = server_cpu_s() - previous[1]
    return results


def cpu_line(labelled: list[tuple[str, list[Sample]]]) -> str:
    """Mean server CPU per request by path: /proc counts in clock ticks (10 ms), so a mean over many
    requests, never a median, says what one costs."""
    parts = []
    for label, samples in labelled:
        spent = [sample.server_cpu_s for sample in samples if sample.server_cpu_s is not None]
        if spent:
            parts.append(f"{label} {sum(spent) / len(spent) * 1000:.2f}")
    return "server CPU per request (mean ms, from its start to the next request's, idle gap included): " + ", ".join(
        parts
    )


def print_phases(labelled: list[tuple[str, list[Sample]]], jobs: dict) -> None:
    rows = []
    for label, samples in labelled:
        before, worker, after = phases(samples, jobs)
        rows.append(
            [
                label,
                S.ms(S.median(before)),
                S.ms(S.median(worker)),
                S.ms(S.median(after)),
                S.ms(S.median([s.elapsed for s in samples])),
            ]
        )
    print("where the time goes (medians, ms; server clock = client clock, same machine):")
    print(S.table(["path", "sent→claimed", "claimed→submitted", "submitted→answered", "total"], rows))


def dump(args, labelled) -> None:
    if args.dump:
        for label, samples in labelled:
            S.log(f"{label} ms: " + " ".join(S.ms(s.elapsed) for s in samples))


def scripted_bench(args) -> None:
    rules_dir = tempfile.TemporaryDirectory(prefix="horde-bench-rules-")
    rules = Path(rules_dir.name) / "rules.json"
    rules.write_text(json.dumps({"rules": [{"match": {}, "reply": {"content": "The bench answer: {last_user}"}}]}))
    try:
        horde = Horde()
    except BaseException:
        rules_dir.cleanup()
        raise
    try:
        horde.worker([MODEL], "--backend", "scripted", "--rules", str(rules), "--wait", "20", "--kinds", "chat,text")
        client = openai.OpenAI(base_url=horde.url + "/v1", api_key=horde.client_key, max_retries=0, timeout=60)
        session = requests.Session()
        session.headers.update({"apikey": horde.client_key})
        body = {"model": MODEL, "messages": [{"role": "user", "content": "Say something short."}], "max_tokens": 32}
        text_body = {"model": MODEL, "prompt": "Say something short.", "max_tokens": 32}
        calls = [
            ("front", lambda: front_call(client, body)),
            ("completions", lambda: completions_call(client, text_body)),
            ("native", lambda: native_call(session, horde.url, body, args.poll_ms / 1000)),
        ]
        alternate(args.warmup, calls, args.gap_ms / 1000)
        S.log(f"scripted: {args.n} front, {args.n} completions and {args.n} native requests, alternating")
        results = alternate(args.n, calls, args.gap_ms / 1000, lambda: S.cpu_seconds(horde.server.popen.pid))
        front, native, text = results["front"], results["native"], results["completions"]
        jobs = horde.job_times([s.request_id for s in front + native + text])
        dump(args, [("front", front), ("completions", text), ("native", native)])
        _, worker_front, _ = phases(front, jobs)
        _, worker_native, _ = phases(native, jobs)
        worker_all = worker_front + worker_native
        front_s, native_s = [s.elapsed for s in front], [s.elapsed for s in native]
        native_med = S.median(native_s)
        print(
            f"Non-streamed request, scripted worker long-polling (--wait 20), SQLite, {args.n} each, "
            f"alternating; native polls every {args.poll_ms:g} ms"
        )
        paths = [
            ("front /v1 (OpenAI SDK)", front_s),
            ("front /v1/completions (OpenAI SDK)", [s.elapsed for s in text]),
            ("native async + status poll", native_s),
            ("worker pop→submit (jobs table)", worker_all),
        ]
        print(latency_table("native", paths, native_med))
        front_med, worker_med = S.median(front_s), S.median(worker_all)
        print(
            f"front/native median ratio: {front_med / native_med:.2f}; added latency over the worker's own time "
            f"(median - worker median): front {(front_med - worker_med) * 1000:.2f} ms, "
            f"native {(native_med - worker_med) * 1000:.2f} ms"
        )
        print_phases([("front", front), ("completions", text), ("native", native)], jobs)
        print(cpu_line([("front", front), ("completions", text), ("native (its polls included)", native)]))
        sdk_s, plain_s = client_floor(args.n, args.warmup, body, args.gap_ms / 1000)
        print(
            f"the OpenAI SDK's own time: a call to a local server that answers at once took {sdk_s * 1000:.2f} ms "
            f"by the SDK and {plain_s * 1000:.2f} ms by http.client (medians); without the SDK's "
            f"{(sdk_s - plain_s) * 1000:.2f} ms, the front's added latency is "
            f"{(front_med - worker_med - (sdk_s - plain_s)) * 1000:.2f} ms"
        )
    finally:
        horde.close()
        rules_dir.cleanup()


def llama_bench(args) -> None:
    try:
        from tests.support import llama_backend as lb
    except ImportError as exc:
        print(f"llama: skipped, tests.support.llama_backend cannot be imported ({exc})")
        return
    binary = lb.default_cache_dir() / lb.BINARY_NAME
    if not binary.is_file():
        if not args.build:
            print(
                f"llama: skipped, llama-server is not built ({binary} is missing); pass --build to build it "
                "(about 5-8 minutes on 2 cores)"
            )
            return
        binary = lb.build_llama_server()
    model_dir = tempfile.TemporaryDirectory(prefix="horde-bench-llama-")
    try:
        llama_compare(args, lb, binary, lb.write_tiny_model(Path(model_dir.name) / "tiny.gguf", seed=0))
    finally:
        model_dir.cleanup()


def llama_compare(args, lb, binary, model_path) -> None:
    horde = None
    extra = ["-t", str(args.llama_threads)] if args.llama_threads else []
    with lb.LlamaServer(binary, model_path, ctx=4096, parallel=1, extra_args=extra) as llama:
        try:
            horde = Horde()
            horde.worker(
                [LLAMA_MODEL], "--backend", "openai", "--backend-url", llama.url, "--wait", "20", "--kinds", "chat,text"
            )
            llama_model = requests.get(llama.v1_url + "/models", timeout=10).json()["data"][0]["id"]
            horde_client = openai.OpenAI(
                base_url=horde.url + "/v1", api_key=horde.client_key, max_retries=0, timeout=120
            )
            direct_client = openai.OpenAI(base_url=llama.v1_url, api_key="none", max_retries=0, timeout=120)
            body = {
                "messages": [{"role": "user", "content": "Write one short sentence about the sea."}],
                "max_tokens": 32,
                "temperature": 0,
                "seed": 1234,
            }
            tokens = set()

            def direct_call() -> Sample:
                wall_start, started = time.time(), time.perf_counter()
                completion = direct_client.chat.completions.create(**dict(body, model=llama_model))
                elapsed = time.perf_counter() - started
                tokens.add(completion.usage.completion_tokens if completion.usage else None)
                return Sample(elapsed, None, wall_start, time.time())

            text_body = {"prompt": "The sea is", "max_tokens": 32, "temperature": 0, "seed": 1234}
            calls = [
                ("horde", lambda: front_call(horde_client, dict(body, model=LLAMA_MODEL))),
                ("completions", lambda: completions_call(horde_client, dict(text_body, model=LLAMA_MODEL))),
                ("direct", direct_call),
            ]
            alternate(args.warmup, calls, args.gap_ms / 1000)
            S.log(f"llama: {args.n} requests through the Horde and {args.n} direct, alternating")
            results = alternate(args.n, calls, args.gap_ms / 1000)
            via, direct, text = results["horde"], results["direct"], results["completions"]
            jobs = horde.job_times([s.request_id for s in via + text])
            dump(args, [("horde", via), ("direct", direct)])
            _, worker, _ = phases(via, jobs)
            via_s, direct_s = [s.elapsed for s in via], [s.elapsed for s in direct]
            direct_med = S.median(direct_s)
            print()
            print(
                f"llama-server (tiny model, ctx 4096, 1 slot, -t {args.llama_threads or 'default'}), max_tokens 32, "
                f"temperature 0, seed 1234, {args.n} each, alternating; completion tokens: "
                f"{sorted(t for t in tokens if t is not None)}"
            )
            paths = [
                ("Horde /v1 → openai worker → llama", via_s),
                ("Horde /v1/completions → worker → llama", [s.elapsed for s in text]),
                ("direct llama-server /v1", direct_s),
                ("worker pop→submit (jobs table)", worker),
            ]
            print(latency_table("direct", paths, direct_med))
            print(
                f"Horde added latency (difference of medians): {(S.median(via_s) - direct_med) * 1000:.2f} ms "
                f"(worker job time - direct: {(S.median(worker) - direct_med) * 1000:.2f} ms)"
            )
            print_phases([("Horde /v1", via), ("Horde /v1/completions", text)], jobs)
        finally:
            if horde is not None:
                horde.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=50, help="requests per path (default 50)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed requests per path first (default 5)")
    parser.add_argument("--poll-ms", type=float, default=10, help="native status poll interval (default 10)")
    parser.add_argument(
        "--gap-ms",
        type=float,
        default=100,
        help="pause after each request so that the worker is idle again (default 100)",
    )
    parser.add_argument("--llama", action="store_true", help="also measure against a real llama-server")
    parser.add_argument(
        "--llama-threads",
        type=int,
        default=1,
        help="llama-server -t (default 1: its spinning threads otherwise starve the Horde on 2 cores; "
        "0 = llama-server's default)",
    )
    parser.add_argument("--build", action="store_true", help="with --llama: build llama-server when not cached")
    parser.add_argument("--dump", action="store_true", help="print every sample to stderr")
    parser.add_argument("--no-scripted", action="store_true", help="skip the scripted-worker comparison")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if not args.no_scripted:
        scripted_bench(args)
    if args.llama:
        llama_bench(args)
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
