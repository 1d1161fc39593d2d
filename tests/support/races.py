"""Fire calls at the same moment from threads, to run races for real."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

RACE_JOIN_TIMEOUT_S = 60.0


def fire_together(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run every call in its own thread, all released by one barrier; their results (or exceptions) in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except Exception as error:  # reported to the test, which asserts on it
            results[index] = error

    threads = [threading.Thread(target=run, args=(index, call)) for index, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(RACE_JOIN_TIMEOUT_S)
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"a raced call did not return within {RACE_JOIN_TIMEOUT_S} s")
    return results
