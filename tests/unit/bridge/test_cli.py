"""The worker's command line: flag checks in-process, and a real worker process stopped by SIGTERM."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from horde.bridge.cli import build_parser, main, scripted_worker
from horde.protocol import FEATURES
from tests.support.fake_horde import WORKER_KEY, FakeHorde

ROOT = Path(__file__).resolve().parents[3]
MODEL = "test/model"


@pytest.fixture
def horde():
    fake = FakeHorde().start()
    yield fake
    fake.stop()


@pytest.fixture
def rules_file(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(
        json.dumps(
            {
                "rules": [
                    {"match": {"contains": "slow"}, "reply": {"content": "slow answer", "delay_s": 60}},
                    {"match": {"contains": "short"}, "reply": {"content": "short answer", "delay_s": 1}},
                    {"match": {}, "reply": {"content": "quick answer"}},
                ]
            }
        )
    )
    return path


def start_worker(horde, rules_file, *extra):
    command = [
        sys.executable,
        "-m",
        "horde.bridge.cli",
        "--horde-url",
        horde.url,
        "--api-key",
        WORKER_KEY,
        "--name",
        "process-worker",
        "--model",
        MODEL,
        "--rules",
        str(rules_file),
        "--wait",
        "1",
        *extra,
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(process, timeout_s=15):
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"the worker did not exit:\n{output}")
    return process.returncode, output


def user(text):
    return {"messages": [{"role": "user", "content": text}]}


def test_sigterm_lets_the_in_flight_job_finish(horde, rules_file):
    job_id = horde.add_job(user("short please"))
    process = start_worker(horde, rules_file)
    assert horde.wait_for(lambda: job_id in horde.active, timeout_s=15)
    process.send_signal(signal.SIGTERM)
    code, output = finish(process)
    assert code == 0, output
    assert [(s["id"], s["content"]) for s in horde.submits] == [(job_id, "short answer")]
    assert horde.faults == []


def test_sigterm_faults_a_job_that_outlives_the_grace(horde, rules_file):
    job_id = horde.add_job(user("slow please"))
    process = start_worker(horde, rules_file, "--shutdown-grace", "0.5")
    assert horde.wait_for(lambda: job_id in horde.active, timeout_s=15)
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code, output = finish(process)
    assert code == 0, output
    assert time.monotonic() - started < 5
    assert horde.faults == [{"id": job_id, "reason": "worker shutting down"}]
    assert horde.submits == []


def test_once_serves_one_job_and_exits(horde, rules_file):
    first = horde.add_job(user("hi"))
    horde.add_job(user("hi again"))
    code, output = finish(start_worker(horde, rules_file, "--once"))
    assert code == 0, output
    assert [s["id"] for s in horde.submits] == [first]
    assert horde.jobs.qsize() == 1


def test_sigterm_while_idle_exits_at_once(horde, rules_file):
    process = start_worker(horde, rules_file)
    assert horde.wait_for(lambda: len(horde.pops) >= 1, timeout_s=15)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    code, output = finish(process)
    assert code == 0, output
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--name", "w", "--model", "m"], "an API key is needed"),
        (["--name", "w", "--api-key", "k"], "needs at least one --model"),
        (["--name", "w", "--api-key", "k", "--model", "m", "--features", "tools,telepathy"], "unknown feature"),
        (["--name", "w", "--api-key", "k", "--model", "m", "--max-length", "8"], "max_length must be"),
        (["--name", "w", "--api-key", "k", "--model", "m", "--wait", "99"], "--wait must be"),
        (["--name", "w", "--api-key", "k", "--backend", "openai"], "needs --backend-url"),
        (
            ["--name", "w", "--api-key", "k", "--backend", "openai", "--backend-url", "http://127.0.0.1:9"],
            "gave no model list",
        ),
    ],
)
def test_bad_flags_exit_with_2_and_say_why(argv, message, caplog, monkeypatch):
    monkeypatch.delenv("HORDE_API_KEY", raising=False)
    assert main(argv) == 2
    assert message in caplog.text


def test_missing_name_is_an_argparse_error():
    assert main(["--api-key", "k"]) == 2


def test_scripted_declarations_from_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("HORDE_URL", "http://horde.example:1234")
    args = build_parser().parse_args(["--name", "w", "--model", "a", "--model", "b"])
    assert args.horde_url == "http://horde.example:1234"
    _backend, declared = scripted_worker(args)
    assert declared.models == ["a", "b"] and declared.max_length == 512 and declared.max_context_length == 4096
    assert declared.features == list(FEATURES)
    assert declared.guarantees == ["tool_choice", "schema_adherence", "prompt_fit"]
    args = build_parser().parse_args(
        [
            "--name",
            "w",
            "--model",
            "a",
            "--features",
            "progress,tools",
            "--guarantees",
            "",
            "--threads",
            "3",
            "--max-temperature-with-tools",
            "0.5",
        ]
    )
    _backend, declared = scripted_worker(args)
    assert declared.features == ["tools", "progress"] and declared.guarantees == [] and declared.threads == 3
    assert declared.limits == {"max_temperature_with_tools": 0.5}
