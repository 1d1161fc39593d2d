"""`python -m horde worker ...`: parse the flags, build the backend and its declarations, run.

`--kinds chat,text` pops both kinds of job with one thread budget (horde/bridge/text_loop.py).

The scripted backend declares what the flags say (by default everything, so that it
can serve every kind of request in demos and tests). The OpenAI backend declares what
a probe of the server shows; its flags can only narrow that.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

from horde.bridge.backends import BACKEND_NAMES
from horde.bridge.backends.openai_compat import OpenAICompatBackend
from horde.bridge.backends.openai_http import BackendHTTP
from horde.bridge.backends.probe import BackendUnavailable, detect_server
from horde.bridge.backends.probe_checks import probe_server
from horde.bridge.backends.scripted import ScriptedBackend
from horde.bridge.client import HordeClient
from horde.bridge.context import PROGRESS_INTERVAL_S
from horde.bridge.declarations import Declarations, narrow, parse_name_list
from horde.bridge.loop import MAIN_POLL_S, POP_WAIT_DEFAULT_S, SHUTDOWN_GRACE_S, WorkerLoop
from horde.bridge.rules import DEFAULT_RULES, RulesError, load_rules
from horde.bridge.text_loop import TextLoop
from horde.protocol import FEATURES, GUARANTEES, MAX_LENGTH_MAX_TOKENS, POP_WAIT_MAX_S, THREADS_MAX

log = logging.getLogger("horde.bridge")

DEFAULT_HORDE_URL = "http://127.0.0.1:7001"
SCRIPTED_MAX_LENGTH_TOKENS = 512
SCRIPTED_MAX_CONTEXT_TOKENS = 4096
#: Used when an OpenAI-compatible server does not tell its context size.
UNKNOWN_CONTEXT_TOKENS = 4096
SCRIPTED_GUARANTEES = ("tool_choice", "schema_adherence", "prompt_fit")
KINDS = ("chat", "text")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m horde worker", description="Serve Horde chat jobs with a backend.")
    p.add_argument(
        "--horde-url",
        default=os.environ.get("HORDE_URL", DEFAULT_HORDE_URL),
        help="the Horde's root URL (env HORDE_URL)",
    )
    p.add_argument(
        "--api-key", default=os.environ.get("HORDE_API_KEY"), help="the worker owner's key (env HORDE_API_KEY)"
    )
    p.add_argument("--name", required=True, help="the worker's unique name")
    p.add_argument("--backend", choices=BACKEND_NAMES, default="scripted")
    p.add_argument("--model", action="append", default=[], help="a model name to serve (repeatable)")
    p.add_argument("--max-length", type=int, help="largest completion, tokens")
    p.add_argument("--max-context-length", type=int, help="largest context (prompt + completion), tokens")
    p.add_argument("--threads", type=int, help="jobs run at once (default 1; openai: the server's slots)")
    p.add_argument("--features", help=f"comma-separated, of: {','.join(FEATURES)}")
    p.add_argument("--guarantees", help=f"comma-separated, of: {','.join(GUARANTEES)}")
    p.add_argument("--max-temperature-with-tools", type=float, help="sent as limits.max_temperature_with_tools")
    p.add_argument("--rules", help="scripted: the rules file (JSON)")
    p.add_argument("--backend-url", help="openai: the server's root or /v1 URL")
    p.add_argument("--backend-api-key", default=None, help="openai: the server's bearer key")
    p.add_argument("--wait", type=float, default=POP_WAIT_DEFAULT_S, help="long-poll seconds per pop (0-30)")
    p.add_argument("--once", action="store_true", help="process one job, then exit")
    p.add_argument("--max-jobs", type=int, help="exit after this many jobs")
    p.add_argument(
        "--progress-interval", type=float, default=PROGRESS_INTERVAL_S, help="seconds between progress posts"
    )
    p.add_argument(
        "--shutdown-grace",
        type=float,
        default=SHUTDOWN_GRACE_S,
        help="seconds in-flight jobs get at SIGTERM before they are faulted",
    )
    p.add_argument(
        "--kinds",
        default="chat",
        type=_kinds,
        help="comma-separated job kinds to pop: chat (the native chat API), text (the AI Horde's text API)",
    )
    p.add_argument("--log-level", default="INFO", type=str.upper, choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return p


def _kinds(value: str) -> tuple[str, ...]:
    kinds = tuple(dict.fromkeys(item.strip() for item in value.split(",") if item.strip()))
    if not kinds or set(kinds) - set(KINDS):
        raise argparse.ArgumentTypeError(f"kinds are a comma-separated list of {', '.join(KINDS)}")
    return kinds


def scripted_worker(args: argparse.Namespace) -> tuple[ScriptedBackend, Declarations]:
    if not args.model:
        raise ValueError("--backend scripted needs at least one --model")
    rules = load_rules(args.rules) if args.rules else DEFAULT_RULES
    given_features = parse_name_list(args.features, FEATURES, "feature")
    given_guarantees = parse_name_list(args.guarantees, GUARANTEES, "guarantee")
    declarations = Declarations(
        name=args.name,
        models=args.model,
        max_length=args.max_length or SCRIPTED_MAX_LENGTH_TOKENS,
        max_context_length=args.max_context_length or SCRIPTED_MAX_CONTEXT_TOKENS,
        threads=args.threads or 1,
        features=list(FEATURES) if given_features is None else given_features,
        guarantees=list(SCRIPTED_GUARANTEES) if given_guarantees is None else given_guarantees,
        limits=_limits(args),
    )
    return ScriptedBackend(rules), declarations


def openai_worker(args: argparse.Namespace) -> tuple[OpenAICompatBackend, Declarations]:
    if not args.backend_url:
        raise ValueError("--backend openai needs --backend-url")
    http = BackendHTTP(args.backend_url, args.backend_api_key)
    info = detect_server(http)
    probe = probe_server(http, info)
    context = info.context_tokens
    if context is None:
        context = UNKNOWN_CONTEXT_TOKENS
        log.warning("the backend does not tell its context size; assuming %d tokens", context)
    if args.max_context_length:
        context = min(context, args.max_context_length)
    max_length = min(context, MAX_LENGTH_MAX_TOKENS, args.max_length or MAX_LENGTH_MAX_TOKENS)
    declarations = Declarations(
        name=args.name,
        models=args.model or [info.model_ids[0]],
        max_length=max_length,
        max_context_length=context,
        threads=args.threads or min(info.slots or 1, THREADS_MAX),
        features=narrow(probe.features, parse_name_list(args.features, FEATURES, "feature")),
        guarantees=narrow(probe.guarantees, parse_name_list(args.guarantees, GUARANTEES, "guarantee")),
        limits=_limits(args),
    )
    backend = OpenAICompatBackend(
        http,
        info.model_ids,
        streaming=probe.streaming,
        stream_usage=probe.stream_usage,
        llama_slots=info.slots if info.kind == "llama.cpp" else None,
    )
    return backend, declarations


def _limits(args) -> dict:
    if args.max_temperature_with_tools is None:
        return {}
    return {"max_temperature_with_tools": args.max_temperature_with_tools}


@contextlib.contextmanager
def stop_on_signals(loop: WorkerLoop) -> Iterator[None]:
    """SIGINT/SIGTERM stop the loop cleanly; a second one skips the grace period."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []

    def handler(signum, _frame):
        received.append(signum)
        loop.request_stop(immediate=len(received) > 1)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log.setLevel(args.log_level)
    if not args.api_key:
        log.error("an API key is needed: --api-key or HORDE_API_KEY")
        return 2
    if not 0 <= args.wait <= POP_WAIT_MAX_S:
        log.error("--wait must be 0 to %d seconds", POP_WAIT_MAX_S)
        return 2
    try:
        backend, declarations = (scripted_worker if args.backend == "scripted" else openai_worker)(args)
    except (ValueError, RulesError, BackendUnavailable) as exc:
        log.error("cannot start the worker: %s", exc)
        return 2
    if args.max_jobs is not None and args.max_jobs < 1:
        log.error("--max-jobs must be at least 1")
        return 2
    max_jobs = 1 if args.once else args.max_jobs
    client = HordeClient(args.horde_url, args.api_key, threading.Event())
    loop = WorkerLoop(
        client,
        backend,
        declarations,
        wait_s=args.wait,
        max_jobs=max_jobs,
        progress_interval_s=args.progress_interval,
        shutdown_grace_s=args.shutdown_grace,
    )
    text_loop = TextLoop(client, backend, declarations, wait_s=args.wait) if "text" in args.kinds else None
    with stop_on_signals(loop):
        if text_loop is None:
            return loop.run()
        if "chat" not in args.kinds:
            return _run_text_only(loop, text_loop)
        text_thread = threading.Thread(target=text_loop.run, name="horde-text-popper", daemon=True)
        text_thread.start()
        code = loop.run()
        client.stop_event.set()
        _join_text_jobs(text_thread, text_loop)
        return code or text_loop.exit_code


def _run_text_only(loop: WorkerLoop, text_loop: TextLoop) -> int:
    """The text loop on its own thread, stopped by the same signals as the chat loop."""
    text_thread = threading.Thread(target=text_loop.run, name="horde-text-popper", daemon=True)
    text_thread.start()
    while text_thread.is_alive() and not loop.stop_requested:
        text_thread.join(MAIN_POLL_S)
    text_loop.client.stop_event.set()
    _join_text_jobs(text_thread, text_loop)
    return text_loop.exit_code


def _join_text_jobs(text_thread: threading.Thread, text_loop: TextLoop) -> None:
    """Once stopping, wait for the text loop while it runs a job, not while it only long-polls: an idle worker
    stops at once instead of after its pop's `--wait`."""
    while text_thread.is_alive():
        text_thread.join(MAIN_POLL_S)
        if not text_loop.running_jobs():
            text_thread.join(MAIN_POLL_S)  # a pop that just returned a job starts it within this
            if not text_loop.running_jobs():
                return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
