"""The per-process snapshots keep a value for at most their age, per version, and a bounded number of keys."""

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
