"""The clients' cache (tests/support/agents/install.py): one build however many test processes ask at once, never
a half install in place, a rebuild when the pins change. Runs without HORDE_TEST_AGENTS: it installs nothing real."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from tests.support.agents import install

RUNS_CLIENTS = False
#: How long a build waits to see a second build start beside it; only a missing lock lets one start.
OVERLAP_WAIT_S = 2.0


def slow_build(directory: Path, log: Path) -> None:
    """A build that notes its start in `log`, waits a while for another to start, then fills its directory."""
    with log.open("a") as handle:
        handle.write("build\n")
    deadline = time.monotonic() + OVERLAP_WAIT_S
    while time.monotonic() < deadline and log.read_text().count("build") < 2:
        time.sleep(0.05)
    (directory / "part-1").write_text("one")
    (directory / "part-2").write_text("two")


def build_in_another_process(cache: str, log: str, barrier, results) -> None:
    os.environ["HORDE_TEST_AGENTS_CACHE"] = cache
    barrier.wait()
    target = install.installed("tool", "1.0", "pins-1", lambda directory: slow_build(directory, Path(log)))
    results.put((str(target), sorted(path.name for path in target.iterdir())))


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HORDE_TEST_AGENTS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_processes_asking_at_once_get_one_complete_install(cache, tmp_path):
    log = tmp_path / "builds.log"
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    processes = [
        context.Process(target=build_in_another_process, args=(str(cache), str(log), barrier, results))
        for _ in range(2)
    ]
    for process in processes:
        process.start()
    answers = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(10)
    assert log.read_text().count("build") == 1, "the second process waited for the first build and reused it"
    expected = (str(cache / "tool-1.0"), [install.STAMP_NAME, "part-1", "part-2"])
    assert answers == [expected, expected]
    assert sorted(path.name for path in cache.iterdir()) == [".tool-1.0.lock", "tool-1.0"]


def test_a_failed_build_leaves_nothing_in_place_and_the_next_call_builds(cache, tmp_path):
    def failing(directory: Path) -> None:
        (directory / "part-1").write_text("one")
        raise install.InstallError("the registry is away")

    with pytest.raises(install.InstallError):
        install.installed("tool", "1.0", "pins-1", failing)
    assert sorted(path.name for path in cache.iterdir()) == [".tool-1.0.lock"]
    target = install.installed("tool", "1.0", "pins-1", lambda directory: (directory / "part-1").write_text("one"))
    assert (target / "part-1").read_text() == "one"


def test_changed_pins_rebuild_in_place_and_unchanged_pins_reuse(cache):
    first = install.installed("tool", "1.0", "pins-1", lambda directory: (directory / "which").write_text("first"))
    again = install.installed("tool", "1.0", "pins-1", lambda directory: pytest.fail("rebuilt unchanged pins"))
    assert again == first and (first / "which").read_text() == "first"
    second = install.installed("tool", "1.0", "pins-2", lambda directory: (directory / "which").write_text("second"))
    assert second == first and (second / "which").read_text() == "second"
    assert sorted(path.name for path in cache.iterdir()) == [".tool-1.0.lock", "tool-1.0"]


def test_an_install_given_a_root_of_its_own_is_built_there(cache, tmp_path):
    """Open WebUI's install (tests/support/open_webui) keeps a cache apart from the agents' clients."""
    root = tmp_path / "open-webui"
    target = install.installed("tool", "1.0", "pins-1", lambda directory: (directory / "part").write_text("x"), root)
    assert target == root / "tool-1.0" and (target / "part").read_text() == "x"
    assert not cache.exists(), "nothing was built in the agents' cache"
