"""Conversation affinity with real llama.cpp workers: the prompt cache's share and the time to first token, with
affinity off (HORDE_AFFINITY_WAIT_MS=0) and on, side by side in one run.

W llama-servers serve the generated tiny model (tests/support/llama_backend; its byte-level tokenizer makes a
character about a token), each with S slots (`--parallel S`), each behind its own reference worker
(`python -m horde worker --backend openai`), all popping one `python -m horde serve` on a fresh SQLite file. C
conversations run at once through the OpenAI SDK (streamed, with usage), shaped like an agent's: a long system
prompt that every conversation shares (an agent's instructions and tools), then turns whose new text is the size
of a tool's result (a file read, a command's output: 1,500 to 3,000 tokens each by default), private to the
conversation, so that a late turn's prompt is mostly the conversation's own history. Every turn resends the
whole history, T turns, optionally after the time the agent's tool takes to run (`--tool-ms`). The clients name
no conversation: the Horde knows each by its leading messages.

The modes alternate, rounds times: off, on, off, on, ... Each round's system prompt starts with a fresh nonce, so no
round reads the caches another one left; the llama-servers stay up between rounds.

Printed: the workload's shape (the prompt tokens of the first and the last turn, the shared system prompt's share
of them); per mode, for the turns after the first, the share of prompt tokens served from the workers' caches
(the workers' reports, `usage.prompt_tokens_details.cached_tokens`), the time to first token p50 and p99 (to the
first streamed content), and the total time of the rounds; where that time goes (the request's admission, its
wait in the queue until a worker claimed it, and from the claim to the first token, of which llama.cpp's own
prompt processing, read from its log); then whether the targets are met: with affinity on, at least 80 % of the
later turns' prompt tokens from cache, and a TTFT p50 at least 2x lower than with it off.

    .venv/bin/python bench/affinity.py              # 3 workers x 2 slots, 6 conversations x 8 turns, 2 rounds
    .venv/bin/python bench/affinity.py --conversations 12   # more conversations than slots
    .venv/bin/python bench/affinity.py --tool-ms 1000       # the agent's tools run a second between turns
    .venv/bin/python bench/affinity.py --workers 2 --turns 4 --rounds 1 --build

The machine may be shared: compare the modes of one run, not runs of different days.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime as dt
import json
import random
import re
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import _support as S
import openai
from sqlalchemy import func, select

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.chat.models import ChatJob, ChatRequest
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.processes import Server, Worker, base_env

MODEL = "bench/llama-affinity"
CACHE_SHARE_TARGET = 0.80
TTFT_SPEEDUP_TARGET = 2.0
#: llama-server's log line for each request's prompt processing: the milliseconds and the tokens it processed
#: (those not read from the slot's cache).
PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
WORDS = (
    "horde",
    "worker",
    "kudos",
    "queue",
    "prompt",
    "cache",
    "slot",
    "model",
    "token",
    "stream",
    "reply",
    "conversation",
    "turn",
    "request",
    "volunteer",
    "server",
    "client",
    "answer",
    "history",
    "context",
    "system",
    "tool",
    "claim",
    "admission",
    "priority",
)


@dataclass
class Turn:
    mode: str
    round: int
    conversation: int
    turn: int
    prompt_tokens: int
    cached_tokens: int
    ttft_s: float
    elapsed_s: float
    worker: str | None
    request_id: str | None
    sent_at: float  # wall clock (time.time()), to compare with the Horde's timestamps
    first_at: float
    #: From the Horde's rows, read after the round: the request's admission (created_at) and its claim (the
    #: first job's started_at), wall clock.
    admitted_at: float | None = None
    claimed_at: float | None = None
    #: llama.cpp's prompt processing of this turn (its log), when matched.
    prompt_ms: float | None = None


def text_of(rng: random.Random, characters: int) -> str:
    words: list[str] = []
    while sum(len(word) + 1 for word in words) < characters:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:characters]


def chars_range(text: str) -> tuple[int, int]:
    """`1500-3000` (each turn's size drawn between) or `2000` (every turn's)."""
    low, _, high = text.partition("-")
    bounds = (int(low), int(high or low))
    if not 0 < bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"not a size or a range of sizes: {text}")
    return bounds


class Horde:
    """One server on a fresh SQLite file with HORDE_AFFINITY_WAIT_MS as given, and a worker per llama-server."""

    def __init__(self, wait_ms: int, llama_urls: list[str], threads: int):
        self.database = S.SqliteBenchDatabase("horde-bench-affinity-")
        self.runtime = Runtime.build(Settings.from_env({}, database_url=self.database.url))
        init_schema(self.runtime)
        with self.runtime.db.transaction() as session:
            _, self.client_key = accounts.create_user(session, f"bench-client-{uuid.uuid4().hex[:6]}", kudos=1_000_000)
            _, owner_key = accounts.create_user(session, f"bench-owner-{uuid.uuid4().hex[:6]}", trusted=True)
        settings = {"HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000, "HORDE_AFFINITY_WAIT_MS": wait_ms}
        self.env = base_env(self.database.url, **settings)
        self.server: Server | None = None
        self.workers: list[Worker] = []
        try:
            self.server = Server(self.env)
            for index, url in enumerate(llama_urls):
                args = ["--backend", "openai", "--backend-url", url, "--wait", "20", "--threads", str(threads)]
                name = f"bench-affinity-{index}-{uuid.uuid4().hex[:6]}"
                self.workers.append(Worker(self.server, owner_key, name, [MODEL], *args, env=self.env))
        except BaseException:
            self.close()
            raise
        self.url = self.server.url

    def add_timestamps(self, turns: list[Turn]) -> None:
        """Each turn's admission and claim, from the request rows and their first job."""
        ids = [turn.request_id for turn in turns if turn.request_id]
        claims = (
            select(ChatJob.request_id, func.min(ChatJob.started_at).label("claimed_at"))
            .where(ChatJob.request_id.in_(ids))
            .group_by(ChatJob.request_id)
            .subquery()
        )
        query = select(ChatRequest.id, ChatRequest.created_at, claims.c.claimed_at).join(
            claims, claims.c.request_id == ChatRequest.id, isouter=True
        )
        with self.runtime.db.transaction() as session:
            rows = {row.id: row for row in session.execute(query.where(ChatRequest.id.in_(ids)))}
        for turn in turns:
            row = rows.get(turn.request_id)
            if row is not None:
                turn.admitted_at = wall(row.created_at)
                turn.claimed_at = wall(row.claimed_at)

    def close(self) -> None:
        for worker in self.workers:
            S.stop_and_remove_log(worker)
        if self.server is not None:
            S.stop_and_remove_log(self.server)
        self.runtime.close()
        self.database.drop()


def wall(moment: dt.datetime | None) -> float | None:
    """A naive UTC timestamp of the Horde's as time.time() counts."""
    return None if moment is None else moment.replace(tzinfo=dt.UTC).timestamp()


def converse(
    client: openai.OpenAI, mode: str, round_index: int, index: int, system: str, args, rng: random.Random
) -> list[Turn]:
    """One conversation: T turns, each resending the whole history, streamed."""
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Question {index}: " + text_of(rng, rng.randint(*args.user_chars))},
    ]
    turns = []
    for turn in range(args.turns):
        sent_at, started = time.time(), time.perf_counter()
        first_token = None
        content, usage, x_horde = [], None, {}
        stream = client.chat.completions.create(
            model=MODEL,
            messages=messages,
            max_tokens=args.max_tokens,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                first_token = first_token or time.perf_counter()
                content.append(chunk.choices[0].delta.content)
            if chunk.usage is not None:
                usage = chunk.usage
            x_horde = (chunk.model_extra or {}).get("x_horde") or x_horde
        ended = time.perf_counter()
        details = usage.prompt_tokens_details if usage is not None else None
        ttft = (first_token or ended) - started
        turns.append(
            Turn(
                mode,
                round_index,
                index,
                turn,
                usage.prompt_tokens if usage is not None else 0,
                (details.cached_tokens or 0) if details is not None else 0,
                ttft,
                ended - started,
                x_horde.get("worker_name"),
                x_horde.get("request_id"),
                sent_at,
                sent_at + ttft,
            )
        )
        if args.tool_ms and turn < args.turns - 1:  # the agent runs the tool whose result the next turn sends
            time.sleep(rng.uniform(0.5, 1.5) * args.tool_ms / 1000)
        messages += [
            {"role": "assistant", "content": "".join(content) or "..."},
            # the next turn's new text: a tool's result, as an agent sends it back
            {"role": "user", "content": text_of(rng, rng.randint(*args.user_chars))},
        ]
    return turns


def run_round(mode: str, horde: Horde, args, round_index: int) -> tuple[list[Turn], float, str]:
    rng = random.Random(args.seed * 1000 + round_index)
    nonce = f"[{mode} round {round_index} {uuid.uuid4().hex}] "
    system = nonce + text_of(rng, args.system_chars)
    client = openai.OpenAI(base_url=horde.url + "/v1", api_key=horde.client_key, max_retries=0, timeout=600)
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(args.conversations) as pool:
        futures = [
            pool.submit(converse, client, mode, round_index, index, system, args, random.Random(rng.random()))
            for index in range(args.conversations)
        ]
        turns = [turn for future in futures for turn in future.result()]
    return turns, time.perf_counter() - started, system


def prompt_evals(log_text: str) -> list[tuple[float, int]]:
    """(ms, tokens) of each request's prompt processing in a llama-server's log."""
    return [(float(ms), int(tokens)) for ms, tokens in PROMPT_EVAL.findall(log_text)]


def match_prompt_evals(turns: list[Turn], evals: list[tuple[float, int]]) -> None:
    """Each turn's prompt processing: the log's entry of as many tokens as the turn's prompt had uncached (the
    worker's report), taken once. A round's turns have distinct sizes but for chance; a turn left without one
    stays unmatched."""
    by_tokens: dict[int, list[float]] = collections.defaultdict(list)
    for ms, tokens in evals:
        by_tokens[tokens].append(ms)
    for turn in turns:
        candidates = by_tokens.get(turn.prompt_tokens - turn.cached_tokens)
        if candidates:
            turn.prompt_ms = candidates.pop(0)


def count_tokens(url: str, text: str) -> int:
    request = urllib.request.Request(
        url + "/tokenize", json.dumps({"content": text}).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as response:
        return len(json.loads(response.read())["tokens"])


def p50(values) -> float:
    values = [value for value in values if value is not None]
    return S.median(values)


def mean(values) -> float:
    values = [value for value in values if value is not None]
    return sum(values) / len(values) if values else float("nan")


def summary(mode: str, turns: list[Turn], total_s: float) -> dict:
    later = [turn for turn in turns if turn.turn > 0]
    first = [turn for turn in turns if turn.turn == 0]
    prompt = sum(turn.prompt_tokens for turn in later)
    cached = sum(turn.cached_tokens for turn in later)
    conversations = {(turn.round, turn.conversation) for turn in turns}
    stays = [
        len({turn.worker for turn in turns if (turn.round, turn.conversation) == key and turn.worker}) == 1
        for key in conversations
    ]
    timed = [turn for turn in later if turn.admitted_at is not None and turn.claimed_at is not None]
    return {
        "mode": mode,
        "share": cached / prompt if prompt else 0.0,
        "ttft_p50": S.median([turn.ttft_s for turn in later]),
        "ttft_p99": S.percentile([turn.ttft_s for turn in later], 99),
        "first_ttft_p50": S.median([turn.ttft_s for turn in first]),
        "turn_p50": S.median([turn.elapsed_s for turn in later]),
        "total_s": total_s,
        "prompt_tokens": prompt,
        "one_worker": sum(stays),
        "conversations": len(stays),
        "uncached_p50": p50([turn.prompt_tokens - turn.cached_tokens for turn in later]),
        "admission_p50": p50([turn.admitted_at - turn.sent_at for turn in timed]),
        "queue_p50": p50([turn.claimed_at - turn.admitted_at for turn in timed]),
        "claim_to_first_p50": p50([turn.first_at - turn.claimed_at for turn in timed]),
        "prompt_ms_p50": p50([turn.prompt_ms for turn in later]),
        # of the claim to the first token, what is not llama.cpp's prompt processing: the worker's request, the
        # server's template and tokens, the first token's way back through the worker and the Horde
        "rest_p50": p50(
            [turn.first_at - turn.claimed_at - turn.prompt_ms / 1000 for turn in timed if turn.prompt_ms is not None]
        ),
        "prompt_ms_mean": mean([turn.prompt_ms for turn in later]),
        "matched": sum(turn.prompt_ms is not None for turn in later),
        "later": len(later),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=3, help="llama-servers, each behind its worker (default 3)")
    parser.add_argument("--slots", type=int, default=2, help="slots per llama-server (--parallel; default 2)")
    parser.add_argument("--conversations", type=int, default=0, help="at once (default: workers x slots)")
    parser.add_argument("--turns", type=int, default=8, help="turns per conversation (default 8)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each mode, alternating (default 2)")
    parser.add_argument(
        "--system-chars",
        type=int,
        default=10_000,
        help="the shared system prompt, ~tokens (default 10000: an agent's instructions and tools)",
    )
    parser.add_argument(
        "--user-chars",
        type=chars_range,
        default=(1500, 3000),
        help="each turn's new text, ~tokens, a size or a range (default 1500-3000: a tool's result)",
    )
    parser.add_argument(
        "--tool-ms",
        type=int,
        default=0,
        help="the time the agent's tool runs between a reply and the next turn, p50 ms (0.5x-1.5x; default 0)",
    )
    parser.add_argument("--max-tokens", type=int, default=16, help="each reply (default 16)")
    parser.add_argument("--wait-ms", type=int, default=300, help="HORDE_AFFINITY_WAIT_MS when on (default 300)")
    parser.add_argument(
        "--ctx-per-slot", type=int, default=40960, help="context per slot, the tiny model's too (default 40960)"
    )
    parser.add_argument("--llama-threads", type=int, default=1, help="llama-server -t (default 1; 2 cores shared)")
    parser.add_argument("--build", action="store_true", help="build llama-server when it is not cached")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.conversations = args.conversations or args.workers * args.slots
    needed = args.system_chars + args.turns * (args.user_chars[1] + args.max_tokens * 2) + 300
    if needed > args.ctx_per_slot:
        parser.error(f"the conversations need ~{needed} tokens a slot: raise --ctx-per-slot or lower the turns")

    from tests.support import llama_backend as lb

    binary = lb.default_cache_dir() / lb.BINARY_NAME
    if not binary.is_file():
        if not args.build:
            print(f"skipped: llama-server is not built ({binary} is missing); pass --build to build it")
            return 0
        binary = lb.build_llama_server()
    model_dir = tempfile.TemporaryDirectory(prefix="horde-bench-affinity-")
    model = lb.write_tiny_model(Path(model_dir.name) / "tiny.gguf", seed=0, context_length=args.ctx_per_slot)
    extra = ["-t", str(args.llama_threads)] if args.llama_threads else []
    servers = [
        lb.LlamaServer(binary, model, ctx=args.ctx_per_slot * args.slots, parallel=args.slots, extra_args=extra)
        for _ in range(args.workers)
    ]
    results: dict[str, list] = {"off": [], "on": []}
    totals: dict[str, float] = {"off": 0.0, "on": 0.0}
    speeds: list[float] = []
    system_tokens: list[int] = []
    try:
        for server in servers:
            server.start()
        urls = [server.url for server in servers]
        slot_ctx = servers[0].props().get("default_generation_settings", {}).get("n_ctx")
        for round_index in range(args.rounds):
            for mode, wait_ms in (("off", 0), ("on", args.wait_ms)):
                S.log(f"round {round_index + 1}: affinity {mode} (HORDE_AFFINITY_WAIT_MS={wait_ms})")
                speeds.append(S.machine_speed_s())
                horde = Horde(wait_ms, urls, args.slots)
                logs = [len(server.log_text()) for server in servers]
                try:
                    turns, total_s, system = run_round(mode, horde, args, round_index)
                    horde.add_timestamps(turns)
                finally:
                    horde.close()
                evals = [
                    entry
                    for server, at in zip(servers, logs, strict=True)
                    for entry in prompt_evals(server.log_text()[at:])
                ]
                match_prompt_evals(turns, evals)
                system_tokens.append(count_tokens(urls[0], system))
                results[mode] += turns
                totals[mode] += total_s
    finally:
        for server in servers:
            server.stop()
        model_dir.cleanup()

    everything = results["off"] + results["on"]
    firsts = [turn.prompt_tokens for turn in everything if turn.turn == 0]
    lasts = [turn.prompt_tokens for turn in everything if turn.turn == args.turns - 1]
    later = [turn for turn in everything if turn.turn > 0]
    shared = S.median(system_tokens)
    shared_share = shared * len(later) / max(1, sum(turn.prompt_tokens for turn in later))
    rows = [summary(mode, results[mode], totals[mode]) for mode in ("off", "on")]
    print()
    print(
        f"{args.workers} llama-servers (tiny model, {args.slots} slots of {slot_ctx} tokens, "
        f"-t {args.llama_threads}), each behind a worker; {args.conversations} conversations at once x "
        f"{args.turns} turns, max_tokens {args.max_tokens}, tool time {args.tool_ms} ms; {args.rounds} round(s) per "
        f"mode, alternating; HORDE_AFFINITY_WAIT_MS {args.wait_ms} when on; "
        f"speed probe {min(speeds):.2f}-{max(speeds):.2f} s"
    )
    print(
        f"Workload: a shared system prompt of {shared:.0f} tokens, then {args.user_chars[0]}-{args.user_chars[1]} "
        f"characters of private text a turn (a tool's result). Prompt tokens p50: first turn {S.median(firsts):.0f}, "
        f"last turn {S.median(lasts):.0f}; the shared prompt is {shared / S.median(lasts) * 100:.0f} % of the last "
        f"turn's and {shared_share * 100:.0f} % of all later turns' prompt tokens, the private history the rest."
    )
    print("Figures of the turns after the first (TTFT: to the first streamed content):")
    print(
        S.table(
            [
                "affinity",
                "cached share",
                "TTFT p50 ms",
                "TTFT p99 ms",
                "turn p50 ms",
                "1st TTFT p50 ms",
                "total s",
                "one worker",
            ],
            [
                [
                    row["mode"],
                    f"{row['share'] * 100:.1f} %",
                    S.ms(row["ttft_p50"]),
                    S.ms(row["ttft_p99"]),
                    S.ms(row["turn_p50"]),
                    S.ms(row["first_ttft_p50"]),
                    f"{row['total_s']:.2f}",
                    f"{row['one_worker']}/{row['conversations']}",
                ]
                for row in rows
            ],
        )
    )
    print(
        "Where a later turn's TTFT goes, p50 ms: the client's request to its admission (created_at), the admission "
        "to the claim (the first job's started_at: the queue, and with affinity the reservation's wait), the claim "
        "to the first streamed token; llama.cpp's prompt processing of the turn (its log, matched by the "
        "uncached tokens), the rest of the claim to the first token (each turn's), and the uncached tokens a turn:"
    )
    print(
        S.table(
            [
                "affinity",
                "to admission",
                "queue",
                "claim to 1st token",
                "llama prompt p50",
                "llama prompt mean",
                "rest",
                "matched",
                "uncached tokens p50",
            ],
            [
                [
                    row["mode"],
                    S.ms(row["admission_p50"]),
                    S.ms(row["queue_p50"]),
                    S.ms(row["claim_to_first_p50"]),
                    f"{row['prompt_ms_p50']:.1f}",
                    f"{row['prompt_ms_mean']:.1f}",
                    S.ms(row["rest_p50"]),
                    f"{row['matched']}/{row['later']}",
                    f"{row['uncached_p50']:.0f}",
                ]
                for row in rows
            ],
        )
    )
    off, on = rows
    speedup = off["ttft_p50"] / on["ttft_p50"] if on["ttft_p50"] else float("nan")
    share_met = on["share"] >= CACHE_SHARE_TARGET
    speed_met = speedup >= TTFT_SPEEDUP_TARGET
    print(
        f"target: with affinity on, >= {CACHE_SHARE_TARGET * 100:.0f} % of later turns' prompt tokens from cache: "
        f"{on['share'] * 100:.1f} % -> {'met' if share_met else 'NOT met'}"
    )
    print(
        f"target: TTFT p50 at least {TTFT_SPEEDUP_TARGET:.0f}x lower with affinity on: {speedup:.2f}x -> "
        f"{'met' if speed_met else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
