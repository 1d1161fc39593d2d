"""Coalesced writes: those that arrive while one runs go together in the next; outside gevent each runs at once."""

import threading
import time

from horde.events.drain import DRAIN
from horde.storage.coalesced_writes import CoalescedWrites, distinct_rounds
from tests.support.processes import wait_until

JOIN_S = 10


class HeldWrites:
    """A write_all that records its batches; the first one waits until `release` is set."""

    def __init__(self):
        self.batches: list[list[str]] = []
        self.first_started = threading.Event()
        self.release = threading.Event()

    def __call__(self, items):
        if not self.batches:
            self.first_started.set()
            assert self.release.wait(JOIN_S)
        self.batches.append(list(items))


def test_writes_that_arrive_while_one_runs_go_together_in_the_next_and_count_for_the_drain():
    in_flight = DRAIN.requests_in_flight
    held = HeldWrites()
    writes = CoalescedWrites("test writes", held, background=True)
    writes.add("a")
    assert held.first_started.wait(JOIN_S)
    for item in ("b", "c", "b"):  # "b" twice: two holders of one request
        writes.add(item)
    assert DRAIN.requests_in_flight == in_flight + 4  # a graceful shutdown waits for them
    held.release.set()
    wait_until(lambda: DRAIN.requests_in_flight == in_flight, timeout_s=JOIN_S, what="the writes")
    assert held.batches == [["a"], ["b", "c"], ["b"]]


def test_a_busy_writer_starts_its_writes_an_interval_apart_and_what_arrives_meanwhile_goes_together():
    """Under load each write ends before the next item arrives: without the interval every batch held one."""
    interval_s = 0.5
    started: list[tuple[float, list[str]]] = []
    writes = CoalescedWrites(
        "test writes",
        lambda items: started.append((time.monotonic(), list(items))),
        background=True,
        busy_interval_s=interval_s,
    )
    added = time.monotonic()
    writes.add("a")
    wait_until(lambda: len(started) == 1, timeout_s=JOIN_S, what="the first write")
    writes.add("b")
    writes.add("c")
    wait_until(lambda: len(started) == 2, timeout_s=JOIN_S, what="the second write")
    (first_at, first), (second_at, second) = started
    assert first == ["a"] and first_at - added < interval_s  # an idle writer writes at once
    assert second == ["b", "c"] and second_at - first_at >= interval_s


def test_a_failed_write_is_logged_and_the_writer_goes_on():
    batches = []

    def write_all(items):
        batches.append(list(items))
        if items == ["bad"]:
            raise RuntimeError("refused")

    in_flight = DRAIN.requests_in_flight
    writes = CoalescedWrites("test writes", write_all, background=True)
    writes.add("bad")
    wait_until(lambda: DRAIN.requests_in_flight == in_flight, timeout_s=JOIN_S, what="the bad write")
    writes.add("good")
    wait_until(lambda: ["good"] in batches, timeout_s=JOIN_S, what="the next write")


def test_outside_gevent_each_write_runs_in_its_caller_at_once():
    batches = []
    writes = CoalescedWrites("test writes", lambda items: batches.append(list(items)))
    writes.add("x")
    assert batches == [["x"]]
    writes.add("y")
    assert batches == [["x"], ["y"]]


def test_an_item_added_twice_is_written_in_two_rounds():
    assert distinct_rounds(["a", "b", "a", "a", "c"]) == [["a", "b", "c"], ["a"], ["a"]]
    assert distinct_rounds([]) == []
