"""The per-process snapshots keep a value for at most their age, per version, and a bounded number of keys."""

import threading

from horde.chat.snapshots import Snapshots


def test_a_value_is_computed_once_within_its_age_and_again_for_a_new_version():
    snapshots = Snapshots(max_age_s=3600)
    computed = []

    def compute():
        computed.append(1)
        return len(computed)

    assert [snapshots.cached("k", compute, 1) for _ in range(3)] == [1, 1, 1]
    assert snapshots.cached("k", compute, 2) == 2


def test_the_keys_are_bounded():
    snapshots = Snapshots(max_age_s=3600, max_entries=3)
    for key in range(10):
        snapshots.cached(("worker", key), lambda key=key: key)
    assert len(snapshots._entries) <= 3
    assert snapshots.cached(("worker", 9), lambda: "again") == 9  # the newest is kept


def test_while_one_caller_takes_an_expired_view_again_the_others_get_the_expired_value():
    """Under load a view expires with many callers on it: one runs the queries, the rest do not run them too."""
    snapshots = Snapshots(max_age_s=60)
    assert snapshots.cached("k", lambda: "old", 1) == "old"
    snapshots._entries["k"].taken_at -= 90  # expired, still younger than twice its age
    started, release, computed = threading.Event(), threading.Event(), []

    def slow():
        computed.append("slow")
        started.set()
        assert release.wait(10)
        return "new"

    taker = threading.Thread(target=lambda: computed.append(snapshots.cached("k", slow, 1)))
    taker.start()
    assert started.wait(10)
    assert snapshots.cached("k", lambda: computed.append("again") or "again", 1) == "old"
    # A caller of another version does not take the other version's value: it computes its own.
    assert snapshots.cached("k", lambda: "v2", 2) == "v2"
    release.set()
    taker.join(10)
    assert computed == ["slow", "new"]


def test_a_value_older_than_twice_its_age_is_not_served_even_while_another_caller_takes_it():
    snapshots = Snapshots(max_age_s=60)
    snapshots.cached("k", lambda: "old")
    snapshots._entries["k"].taken_at -= 121
    snapshots._taking["k"] = 1  # another caller is taking it
    assert snapshots.cached("k", lambda: "fresh") == "fresh"
