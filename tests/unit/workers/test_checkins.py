"""A due check-in refresh is written by one pop per worker and process; the worker's other pops go on with the
view they have, until the refresh is remembered or has been pending for a whole refresh interval."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from horde.workers import checkins

REFRESH_S = 5.0
WINDOW_S = 600.0
POP = {"name": "w1"}


@dataclass(frozen=True)
class View:
    name: str
    owner_id: int


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    ticking = Clock()
    monkeypatch.setattr(checkins.time, "monotonic", ticking)
    return ticking


@pytest.fixture
def remembered(clock):
    kept = checkins.CheckIns(refresh_s=REFRESH_S, declared=lambda pop: ("m1",))
    kept.remember(POP, View("w1", 7), written_at=clock.now)
    return kept


def test_a_fresh_check_in_is_served_to_every_pop(remembered, clock):
    clock.now += REFRESH_S - 0.1
    assert [remembered.current(7, POP, WINDOW_S) for _ in range(3)] == [View("w1", 7)] * 3


def test_one_pop_writes_a_due_refresh_and_the_others_go_on_with_the_view(remembered, clock):
    clock.now += REFRESH_S
    assert remembered.current(7, POP, WINDOW_S) is None  # this pop writes
    assert [remembered.current(7, POP, WINDOW_S) for _ in range(3)] == [View("w1", 7)] * 3
    remembered.remember(POP, View("w1", 7), written_at=clock.now)
    clock.now += REFRESH_S
    assert remembered.current(7, POP, WINDOW_S) is None  # the next refresh is due again, and taken again


def test_a_refresh_that_never_comes_back_is_taken_again_after_an_interval(remembered, clock):
    clock.now += REFRESH_S
    assert remembered.current(7, POP, WINDOW_S) is None
    clock.now += REFRESH_S - 0.1
    assert remembered.current(7, POP, WINDOW_S) == View("w1", 7)
    clock.now += 0.1
    assert remembered.current(7, POP, WINDOW_S) is None


def test_changed_declarations_or_another_owner_write_at_once_whatever_is_pending(remembered, clock):
    changed = checkins.CheckIns(refresh_s=REFRESH_S, declared=lambda pop: tuple(pop.get("models", ("m1",))))
    changed.remember(POP, View("w1", 7), written_at=clock.now)
    clock.now += REFRESH_S
    assert changed.current(7, POP, WINDOW_S) is None
    assert changed.current(7, dict(POP, models=("m2",)), WINDOW_S) is None
    assert changed.current(8, POP, WINDOW_S) is None
