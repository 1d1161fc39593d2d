"""The AI Horde's own Locust stress suite, run against this Horde's production command.

The suite (tests/stress of Haidra-Org/AI-Horde) is exported from a clone of that repository (bare or not: `--source`,
or the environment variable AI_HORDE_SOURCE) into a temporary folder, never copied into this project. Locust, at the
version the AI Horde pins in its uv.lock (else `--locust-version`), is installed once into a cached virtualenv
(~/.cache/horde-tests/locust/<version>). The server is `gunicorn -k horde.gunicorn_worker.HordeWorker -w 2
horde.wsgi:app` on a fresh PostgreSQL database with Redis; API keys are minted through POST /register, the suite's
own bootstrap (HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY is raised for the run).

The scenario `queue_pressure` (locustfile_queue_pressure.py: text workers popping and submitting, requesters
polling status, then requesters filling the queue with requests for models no worker serves) runs headless through
its three phases: baseline (no backlog), pressure (the backlog grows to its target) and relief (the backlog held).
A small locustfile of this runner's, written next to the export, imports the suite's and closes Locust's statistics
at each phase's end, so that each phase prints apart. Printed: p50, p99 and requests/s per endpoint and phase, and
how many text requests were waiting at the end.

    .venv/bin/python bench/ai_horde_stress.py --source ../AI-Horde
    .venv/bin/python bench/ai_horde_stress.py --backlog 10000 --baseline 40 --pressure 150 --relief 60
    .venv/bin/python bench/ai_horde_stress.py --scenario locustfile.py --run-time 60   # any other locustfile
    .venv/bin/python bench/ai_horde_stress.py --ci-smoke   # its CI's smoke run, keys from /register, its checker
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _support as S
import requests
from sqlalchemy import func, select

from horde.text.models import WAITING, TextRequest
from tests.support.processes import Gunicorn, base_env

SUITE_PATH = "tests/stress"
DEFAULT_LOCUST_VERSION = "2.45.0"
CACHE = Path.home() / ".cache" / "horde-tests" / "locust"
HORDE_WORKER_CLASS = "horde.gunicorn_worker.HordeWorker"
PROCESSES = 2
#: The suite's per-key cap on a backlog key's prompts in flight (its --qp-backlog-per-key-cap default).
BACKLOG_PER_KEY = 28
SERVER_SETTINGS = {
    "HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000_000,
    "HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY": 100_000,
}
#: Written next to the exported suite: the suite's scenario, with Locust's statistics closed at each phase's end.
PHASES_LOCUSTFILE = """
import json
import os
import time

import gevent
from locust import events

from locustfile_queue_pressure import *  # noqa: F401,F403 (the suite's users and its options)
from locustsuite.users.queue_pressure import qp_state

OUT = os.environ["HORDE_PHASE_STATS_OUT"]
phases = {}
relief = {}


def close_phase(environment, name, started):
    stats = environment.runner.stats
    elapsed = max(time.time() - started, 1e-9)
    phases[name] = {
        f"{entry.method} {entry.name}": {
            "requests": entry.num_requests,
            "failures": entry.num_failures,
            "p50": entry.get_response_time_percentile(0.5),
            "p99": entry.get_response_time_percentile(0.99),
            "rps": entry.num_requests / elapsed,
        }
        for entry in stats.entries.values()
        if entry.num_requests
    }
    stats.reset_all()
    with open(OUT, "w") as out:
        json.dump(phases, out)


@events.test_start.add_listener
def _phases(environment, **_kwargs):
    def watch():
        gevent.sleep(0.5)  # the suite's own test_start sets the schedule
        started = qp_state.run_start
        for name, length in (("baseline", qp_state.baseline_s), ("pressure", qp_state.pressure_s)):
            gevent.sleep(max(0.0, started + length - time.time()))
            close_phase(environment, name, started)
            started += length
        relief["started"] = started

    gevent.spawn(watch)


@events.test_stop.add_listener
def _last_phase(environment, **_kwargs):
    if "started" in relief:
        close_phase(environment, "relief", relief["started"])
"""


def export_suite(source: Path, into: Path) -> Path:
    """tests/stress of the AI Horde's repository at `source` (a bare clone: its HEAD; else the work tree)."""
    if (source / "objects").is_dir() and (source / "HEAD").is_file():  # a bare repository
        archive = subprocess.run(
            ["git", f"--git-dir={source}", "archive", "HEAD", SUITE_PATH], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    else:
        shutil.copytree(source / SUITE_PATH, into / SUITE_PATH)
    return into / SUITE_PATH


def pinned_locust(source: Path) -> str:
    """The Locust version of the AI Horde's uv.lock, when the source has one."""
    if (source / "objects").is_dir():
        shown = subprocess.run(["git", f"--git-dir={source}", "show", "HEAD:uv.lock"], capture_output=True, text=True)
        lock = shown.stdout if shown.returncode == 0 else ""
    else:
        lock = (source / "uv.lock").read_text() if (source / "uv.lock").is_file() else ""
    found = re.search(r'name = "locust"\nversion = "([^"]+)"', lock)
    return found.group(1) if found else DEFAULT_LOCUST_VERSION


def locust_venv(version: str) -> Path:
    """The cached virtualenv with Locust `version`, made on first use; its `locust` executable."""
    venv = CACHE / f"v{version}"
    locust = venv / "bin" / "locust"
    if not locust.exists():
        S.log(f"installing locust {version} into {venv}")
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"locust=={version}"], check=True)
    return locust


def register(url: str, count: int, role: str) -> list[str]:
    """`count` keys through POST /register, the form the suite's bootstrap posts; the key is read as it reads it."""
    keys = []
    marker = 'class="ah-api-key">'
    with requests.Session() as session:
        for _ in range(count):
            answer = session.post(f"{url}/register", data={"username": f"stress_{role}_{uuid.uuid4().hex[:8]}"})
            start = answer.text.find(marker)
            if answer.status_code != 200 or start < 0:
                raise RuntimeError(f"POST /register: HTTP {answer.status_code} {answer.text[:300]!r}")
            start += len(marker)
            keys.append(answer.text[start : answer.text.index("<", start)].strip())
    return keys


def waiting_text_requests(runtime) -> int:
    with runtime.db.read() as session:
        return session.scalar(select(func.count()).where(TextRequest.state == WAITING)) or 0


def queue_pressure_arguments(args, url: str, suite: Path) -> tuple[list[str], Path]:
    workers = register(url, args.workers, "wrk")
    requestors = register(url, args.requestors, "req")
    backlog = register(url, args.backlog // BACKLOG_PER_KEY + 1, "blg")
    locustfile = suite / "horde_phases.py"
    locustfile.write_text(PHASES_LOCUSTFILE)
    users = args.workers + args.requestors + args.backlog_requestors
    run_time = args.baseline + args.pressure + args.relief
    return [
        "-f",
        str(locustfile),
        "--users",
        str(users),
        "--spawn-rate",
        str(users),
        "--run-time",
        f"{int(run_time)}s",
        "--qp-workers",
        str(args.workers),
        "--qp-served-requestors",
        str(args.requestors),
        "--qp-backlog-requestors",
        str(args.backlog_requestors),
        "--qp-backlog-target",
        str(args.backlog),
        "--qp-baseline",
        str(args.baseline),
        "--qp-pressure",
        str(args.pressure),
        "--qp-relief",
        str(args.relief),
        "--worker-api-keys=" + ",".join(workers),
        "--requestor-api-keys=" + ",".join(requestors),
        "--qp-backlog-api-keys=" + ",".join(backlog),
    ], suite / "phases.json"


def other_scenario_arguments(args, url: str, suite: Path) -> tuple[list[str], Path]:
    return [
        "-f",
        str(suite / args.scenario),
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.users),
        "--run-time",
        f"{args.run_time}s",
        "--worker-api-keys=" + ",".join(register(url, args.workers, "wrk")),
        "--requestor-api-keys=" + ",".join(register(url, args.requestors, "req")),
        "--csv",
        str(suite / "run"),
    ], suite / "run_stats.csv"


#: The AI Horde's CI smoke run, as its workflow runs it (.github/workflows/prtests.yml): the suite mints its own keys
#: through POST /register (--bootstrap-*), and check_smoke_results.py gates on crash-class failures.
CI_SMOKE = [
    "--users", "24", "--spawn-rate", "6", "--run-time", "90s",
    "--bootstrap-requestors", "4", "--bootstrap-workers", "8",
    "--preflight-fail-hard", "--bootstrap-fail-hard", "--exit-code-on-error", "0",
]  # fmt: skip


#: The smoke's user classes that this Horde serves: its text API, the browsing and the misuse users (it has no image
#: generation nor interrogation, whose users would only meet 404s).
CI_SMOKE_USERS = ["TextRequester", "TextWorkerSimulator", "MetaBrowser", "MisuseUser"]


def ci_smoke_arguments(args, url: str, suite: Path) -> tuple[list[str], Path]:
    arguments = ["-f", str(suite / "locustfile.py"), *CI_SMOKE, "--csv", str(suite / "smoke"), *CI_SMOKE_USERS]
    return arguments, suite / "smoke_stats.csv"


def check_smoke(locust: Path, suite: Path) -> int:
    """The suite's own checker on the smoke run's CSV files; its exit code."""
    python = locust.parent / "python"
    checked = subprocess.run(
        [str(python), "check_smoke_results.py", "--stats", "smoke_stats.csv", "--failures", "smoke_failures.csv"],
        cwd=suite,
        capture_output=True,
        text=True,
    )
    print(f"check_smoke_results.py exited {checked.returncode}:", checked.stdout.strip(), checked.stderr.strip())
    return checked.returncode


def print_phases(path: Path) -> None:
    phases = json.loads(path.read_text())
    names = sorted({name for stats in phases.values() for name in stats})
    headers = ["endpoint"]
    for phase in phases:
        headers += [f"{phase} p50", f"{phase} p99", f"{phase} rps"]
    rows = []
    for name in names:
        row = [name]
        for stats in phases.values():
            entry = stats.get(name)
            row += [f"{entry['p50']:.0f}", f"{entry['p99']:.0f}", f"{entry['rps']:.1f}"] if entry else ["-"] * 3
        rows.append(row)
    print(S.table(headers, rows))


def print_csv(path: Path) -> None:
    import csv

    rows = []
    with path.open() as stats:
        for entry in csv.DictReader(stats):
            rows.append(
                [f"{entry['Type']} {entry['Name']}", entry["50%"], entry["99%"], f"{float(entry['Requests/s']):.1f}"]
            )
    print(S.table(["endpoint", "p50 ms", "p99 ms", "rps"], rows))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=os.environ.get("AI_HORDE_SOURCE"), help="a clone of Haidra-Org/AI-Horde")
    parser.add_argument("--locust-version", help="default: the AI Horde's uv.lock pin")
    parser.add_argument("--scenario", default="locustfile_queue_pressure.py", help="a locustfile of the suite")
    parser.add_argument("--workers", type=int, default=20, help="serving text workers (default 20)")
    parser.add_argument("--requestors", type=int, default=8, help="served requesters polling status (default 8)")
    parser.add_argument("--backlog-requestors", type=int, default=24, help="default 24")
    parser.add_argument("--backlog", type=int, default=3000, help="unservable requests to queue (default 3000)")
    parser.add_argument("--baseline", type=float, default=45.0, help="seconds (default 45)")
    parser.add_argument("--pressure", type=float, default=90.0, help="seconds (default 90)")
    parser.add_argument("--relief", type=float, default=45.0, help="seconds (default 45)")
    parser.add_argument("--users", type=int, default=30, help="another scenario's users (default 30)")
    parser.add_argument("--run-time", type=int, default=60, help="another scenario's seconds (default 60)")
    parser.add_argument("--postgres-url", help="admin URL of a PostgreSQL server")
    parser.add_argument("--redis-url", default=os.environ.get("HORDE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--keep-log", action="store_true", help="keep the server's log")
    parser.add_argument(
        "--ci-smoke",
        action="store_true",
        help="the AI Horde's CI smoke run (locustfile.py, keys bootstrapped by the suite through POST /register), "
        "gated by its check_smoke_results.py; exit code: the checker's",
    )
    args = parser.parse_args(argv)
    if not args.source:
        parser.error("--source (or AI_HORDE_SOURCE): a clone of Haidra-Org/AI-Horde, bare or not")
    source = Path(args.source).resolve()
    locust = locust_venv(args.locust_version or pinned_locust(source))
    admin_url, explicit = S.postgres_admin_url(args.postgres_url)
    S.chosen_backends("postgresql", admin_url, explicit)
    with tempfile.TemporaryDirectory(prefix="horde-ai-horde-stress-") as folder:
        suite = export_suite(source, Path(folder))
        with S.fresh_runtime("postgresql", admin_url, "stress") as runtime:
            url = runtime.db.engine.url.render_as_string(hide_password=False)
            settings = dict(SERVER_SETTINGS, HORDE_REDIS_URL=args.redis_url)
            settings["HORDE_REDIS_PREFIX"] = f"horde_bench_{uuid.uuid4().hex[:6]}"
            server = Gunicorn(base_env(url, **settings), PROCESSES, worker_class=HORDE_WORKER_CLASS)
            try:
                queue_pressure = args.scenario == "locustfile_queue_pressure.py" and not args.ci_smoke
                build = queue_pressure_arguments if queue_pressure else other_scenario_arguments
                build = ci_smoke_arguments if args.ci_smoke else build
                arguments, stats_path = build(args, server.url, suite)
                env = dict(os.environ, HORDE_PHASE_STATS_OUT=str(suite / "phases.json"))
                command = [str(locust), *arguments, "--host", server.url, "--headless", "--only-summary"]
                S.log(f"locust: {args.scenario} against gunicorn -k HordeWorker -w {PROCESSES}, PostgreSQL + Redis")
                started = time.monotonic()
                ran = subprocess.run(command, cwd=suite, env=env, capture_output=True, text=True)
                S.log(f"locust exited {ran.returncode} after {time.monotonic() - started:.0f} s")
                if not stats_path.exists():
                    print(ran.stdout[-3000:], ran.stderr[-3000:], sep="\n")
                    return 1
                print(f"{args.scenario}: Locust statistics per endpoint (ms, requests/s)")
                (print_phases if queue_pressure else print_csv)(stats_path)
                print(f"text requests waiting at the end: {waiting_text_requests(runtime)}")
                errors = [line for line in ran.stderr.splitlines() if "Error" in line or "failed" in line]
                if errors:
                    print("locust reported:", *errors[-10:], sep="\n  ")
                if args.ci_smoke:
                    return check_smoke(locust, suite)
            finally:
                if args.keep_log:
                    server.stop()
                    S.log(f"the server's log is kept in {server.log.name}")
                else:
                    S.stop_and_remove_log(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
