"""Conversation affinity with real llama.cpp workers: the prompt cache's share and the time to first token, with
affinity off (HORDE_AFFINITY_WAIT_MS=0) and on, side by side in one run.

W llama-servers serve the generated tiny model (tests/support/llama_backend; its byte-level tokenizer makes a
character a token), each with S slots (`--parallel S`), each behind its own reference worker
(`python -m horde worker --backend openai`), all popping one `python -m horde serve` on a fresh SQLite file. C
conversations run at once through the OpenAI SDK (streamed, with usage): each shares a long system prompt (2,000+
tokens), starts with its own question, and resends its growing history on every turn, T turns. The clients name
no conversation: the Horde knows each by its leading messages.

The modes alternate, rounds times: off, on, off, on, ... Each round's system prompt starts with a fresh nonce, so no
round reads the caches another one left; the llama-servers stay up between rounds.

Printed per mode, for the turns after the first: the share of prompt tokens served from the workers' caches (the
workers' reports, `usage.prompt_tokens_details.cached_tokens`), the time to first token p50 and p99 (to the first
streamed content), and the total time of the rounds; then whether the targets are met: with affinity on, at
least 80 % of the later turns' prompt tokens from cache, and a TTFT p50 at least 2x lower than with it off.

    .venv/bin/python bench/affinity.py              # 3 workers x 2 slots, 6 conversations x 10 turns, 2 rounds
    .venv/bin/python bench/affinity.py --workers 2 --turns 6 --rounds 1 --build

The machine may be shared: compare the modes of one run, not runs of different days.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import random
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import _support as S
import openai

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.processes import Server, Worker, base_env

MODEL = "bench/llama-affinity"
CACHE_SHARE_TARGET = 0.80
TTFT_SPEEDUP_TARGET = 2.0
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


def text_of(rng: random.Random, characters: int) -> str:
    words: list[str] = []
    while sum(len(word) + 1 for word in words) < characters:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:characters]


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

    def close(self) -> None:
        for worker in self.workers:
            S.stop_and_remove_log(worker)
        if self.server is not None:
            S.stop_and_remove_log(self.server)
        self.runtime.close()
        self.database.drop()


def converse(
    client: openai.OpenAI, mode: str, round_index: int, index: int, system: str, args, rng: random.Random
) -> list[Turn]:
    """One conversation: T turns, each resending the whole history, streamed."""
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Question {index}: " + text_of(rng, args.user_chars)},
    ]
    turns = []
    for turn in range(args.turns):
        started = time.perf_counter()
        first_token = None
        content, usage, worker = [], None, None
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
            worker = (chunk.model_extra or {}).get("x_horde", {}).get("worker_name") or worker
        ended = time.perf_counter()
        details = usage.prompt_tokens_details if usage is not None else None
        turns.append(
            Turn(
                mode,
                round_index,
                index,
                turn,
                usage.prompt_tokens if usage is not None else 0,
                (details.cached_tokens or 0) if details is not None else 0,
                (first_token or ended) - started,
                ended - started,
                worker,
            )
        )
        messages += [
            {"role": "assistant", "content": "".join(content) or "..."},
            {"role": "user", "content": text_of(rng, args.user_chars)},
        ]
    return turns


def run_round(mode: str, horde: Horde, args, round_index: int) -> tuple[list[Turn], float]:
    rng = random.Random(args.seed * 1000 + round_index)
    nonce = f"[{mode} round {round_index} {uuid.uuid4().hex}] "
    system = nonce + text_of(rng, args.system_chars)
    client = openai.OpenAI(base_url=horde.url + "/v1", api_key=horde.client_key, max_retries=0, timeout=300)
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(args.conversations) as pool:
        futures = [
            pool.submit(converse, client, mode, round_index, index, system, args, random.Random(rng.random()))
            for index in range(args.conversations)
        ]
        turns = [turn for future in futures for turn in future.result()]
    return turns, time.perf_counter() - started


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
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=3, help="llama-servers, each behind its worker (default 3)")
    parser.add_argument("--slots", type=int, default=2, help="slots per llama-server (--parallel; default 2)")
    parser.add_argument("--conversations", type=int, default=0, help="at once (default: workers x slots)")
    parser.add_argument("--turns", type=int, default=10, help="turns per conversation (default 10)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each mode, alternating (default 2)")
    parser.add_argument("--system-chars", type=int, default=2000, help="shared system prompt, ~tokens (default 2000)")
    parser.add_argument("--user-chars", type=int, default=100, help="each user turn (default 100)")
    parser.add_argument("--max-tokens", type=int, default=16, help="each reply (default 16)")
    parser.add_argument("--wait-ms", type=int, default=300, help="HORDE_AFFINITY_WAIT_MS when on (default 300)")
    parser.add_argument(
        "--ctx-per-slot", type=int, default=4096, help="context per slot, the tiny model's too (default 4096)"
    )
    parser.add_argument("--llama-threads", type=int, default=1, help="llama-server -t (default 1; 2 cores shared)")
    parser.add_argument("--build", action="store_true", help="build llama-server when it is not cached")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.conversations = args.conversations or args.workers * args.slots
    needed = args.system_chars + args.turns * (args.user_chars + args.max_tokens * 2) + 300
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
    try:
        for server in servers:
            server.start()
        urls = [server.url for server in servers]
        for round_index in range(args.rounds):
            for mode, wait_ms in (("off", 0), ("on", args.wait_ms)):
                S.log(f"round {round_index + 1}: affinity {mode} (HORDE_AFFINITY_WAIT_MS={wait_ms})")
                horde = Horde(wait_ms, urls, args.slots)
                try:
                    turns, total_s = run_round(mode, horde, args, round_index)
                finally:
                    horde.close()
                results[mode] += turns
                totals[mode] += total_s
    finally:
        for server in servers:
            server.stop()
        model_dir.cleanup()

    rows = [summary(mode, results[mode], totals[mode]) for mode in ("off", "on")]
    print()
    print(
        f"{args.workers} llama-servers (tiny model, {args.slots} slots of {args.ctx_per_slot} tokens, "
        f"-t {args.llama_threads}), each behind a worker; {args.conversations} conversations at once x "
        f"{args.turns} turns, system prompt ~{args.system_chars} tokens, +{args.user_chars} a turn, max_tokens "
        f"{args.max_tokens}; {args.rounds} round(s) per mode, alternating; "
        f"HORDE_AFFINITY_WAIT_MS {args.wait_ms} when on"
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
