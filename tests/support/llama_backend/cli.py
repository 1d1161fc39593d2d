"""`python -m tests.support.llama_backend build | model | serve`."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence

from tests.support.llama_backend.build import build_llama_server, resolve_cache_dir
from tests.support.llama_backend.model import write_tiny_model
from tests.support.llama_backend.server import LlamaServer


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.support.llama_backend",
        description="Build llama-server, write the tiny model, or serve it.",
    )
    ap.add_argument(
        "--cache-dir", default=None, help="cache root (default: $HORDE_LLAMA_CACHE or ~/.cache/horde-llama)"
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build (or reuse) llama-server and print its path")
    m = sub.add_parser("model", help="write the tiny GGUF model and print its path")
    m.add_argument("path", nargs="?", default=None)
    m.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("serve", help="serve the tiny model until Ctrl-C")
    s.add_argument("--port", type=int, default=None)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--ctx", type=int, default=4096)
    s.add_argument("--parallel", type=int, default=2)
    s.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    if args.cmd == "build":
        print(build_llama_server(args.cache_dir))
        return 0
    cdir = resolve_cache_dir(args.cache_dir)
    if args.cmd == "model":
        print(write_tiny_model(args.path or cdir / f"tiny-seed{args.seed}.gguf", seed=args.seed))
        return 0

    # Ctrl-C, and also SIGTERM, stop the server cleanly (even when started in
    # the background by a shell, which makes the process ignore SIGINT).
    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    binary = build_llama_server(args.cache_dir)
    model = write_tiny_model(cdir / f"tiny-seed{args.seed}.gguf", seed=args.seed)
    with LlamaServer(
        binary, model, ctx=args.ctx, parallel=args.parallel, port=args.port, host=args.host, keep_log=True
    ) as srv:
        print(f"llama-server ready: {srv.v1_url}  (root {srv.url}, log {srv.log_path})", flush=True)
        print("Ctrl-C to stop", file=sys.stderr, flush=True)
        try:
            while srv.proc is not None and srv.proc.poll() is None:
                time.sleep(0.5)
            print(f"llama-server exited; log:\n{srv.log_text()[-2000:]}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 0
