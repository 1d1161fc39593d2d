"""Long loops over a request's items give the other greenlets a turn under gevent."""

import gevent

from horde import cooperative


def test_other_greenlets_run_during_a_long_loop(monkeypatch):
    monkeypatch.setattr(cooperative.monkey, "is_module_patched", lambda name: True)
    ticks = []
    ticker = gevent.spawn(lambda: [ticks.append(1) or gevent.sleep(0) for _ in range(1000)])
    seen_at = [len(ticks) for _ in cooperative.pause_every(list(range(2000)), every=100)]
    ticker.kill()
    assert seen_at[0] == 0 and seen_at[-1] >= 19  # a turn for the ticker every 100 items


def test_without_gevent_patching_the_items_come_back_as_they_are():
    items = list(range(1000))
    assert cooperative.pause_every(items) is items


def test_pass_turn_runs_the_greenlets_ready_before_the_caller_goes_on(monkeypatch):
    monkeypatch.setattr(cooperative.monkey, "is_module_patched", lambda name: True)
    order = []
    gevent.spawn(order.append, "other")
    cooperative.pass_turn()
    order.append("caller")
    assert order == ["other", "caller"]


def test_without_gevent_patching_pass_turn_switches_to_nothing():
    order = []
    ready = gevent.spawn(order.append, "other")
    cooperative.pass_turn()
    assert order == []
    ready.join()
