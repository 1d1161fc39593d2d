"""The main job, end to end on one machine: a Horde on SQLite, a scripted worker, an OpenAI SDK call.

Then the Horde and its worker keep running, and the web page's address is printed, until Ctrl-C;
`--once` stops after the SDK calls (the form tests use).

Run with `python scripts/demo.py [--once]` after `pip install -r requirements-test.txt`.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from openai import OpenAI

ROOT = Path(__file__).resolve().parents[1]
PORT = int(os.environ.get("HORDE_DEMO_PORT", "7001"))
URL = f"http://127.0.0.1:{PORT}"
MODEL = "demo/scripted-model"
START_TIMEOUT_S = 30


def wait_for(predicate, what):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {what}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="stop after the SDK calls instead of serving the web page")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="horde-demo-"))
    env = dict(os.environ, HORDE_DATABASE_URL=f"sqlite:///{workdir / 'horde.db'}", PYTHONPATH=str(ROOT))
    python = sys.executable
    created = subprocess.run(
        [python, "-m", "horde", "users", "create", "demo-owner", "--kudos", "1000"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    key = created.stdout.strip().splitlines()[-1]
    log = open(workdir / "demo.log", "w")  # the server's and the worker's logs, kept out of the demo's output
    print(f"Horde on {URL} (SQLite at {workdir / 'horde.db'}; logs in {workdir / 'demo.log'})")
    server = subprocess.Popen(
        [python, "-m", "horde", "serve", "--port", str(PORT)], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
    )
    worker = None
    try:
        wait_for(lambda: requests.get(URL + "/health", timeout=1).ok, "the server")
        worker = subprocess.Popen(
            [
                python,
                "-m",
                "horde",
                "worker",
                "--backend",
                "scripted",
                "--horde-url",
                URL,
                f"--api-key={key}",
                "--name",
                "demo-worker",
                "--model",
                MODEL,
                "--rules",
                str(ROOT / "examples" / "scripted_rules.json"),
            ],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_for(
            lambda: any(stat["name"] == MODEL for stat in requests.get(URL + "/api/v2/status/models?type=chat").json()),
            "the worker",
        )
        client = OpenAI(base_url=URL + "/v1", api_key=key, default_headers={"X-Title": "horde-demo"})
        print("models:", [model.id for model in client.models.list().data])
        messages = [{"role": "user", "content": "Hello, Horde!"}]
        completion = client.chat.completions.create(model=MODEL, messages=messages)
        print("reply:", completion.choices[0].message.content)
        print("x_horde:", completion.model_extra["x_horde"])
        print("streamed:", end=" ")
        for chunk in client.chat.completions.create(
            model=MODEL, stream=True, messages=[{"role": "user", "content": "Stream this, please."}]
        ):
            if chunk.choices and chunk.choices[0].delta.content:
                print(chunk.choices[0].delta.content, end="", flush=True)
        print()
        if not args.once:
            serve_until_interrupted(key)
        return 0
    finally:
        for process in (worker, server):
            if process is not None:
                process.terminate()
                process.wait(10)
        log.close()


def serve_until_interrupted(key: str) -> None:
    print(f"\nThe web page: {URL}/  (paste the API key {key} into its key field)")
    print("The Horde and its worker keep running; Ctrl-C stops them.", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    print("\nStopping.")


if __name__ == "__main__":
    sys.exit(main())
