"""A serving process settles its heap once its app is built (horde/serving/heap.py)."""

import gc

import pytest

from horde.serving.heap import YOUNG_COLLECTION_ALLOCATIONS, settle_for_serving


@pytest.fixture
def collector():
    """The test process's collector as it was, restored afterwards."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_what_exists_at_start_is_kept_out_of_later_collections(collector):
    built_at_start = [object()]  # tracked by the collector, as the app's objects are
    assert gc.is_tracked(built_at_start)
    frozen_before = gc.get_freeze_count()
    settle_for_serving()
    assert gc.get_freeze_count() > frozen_before
    assert not any(other is built_at_start for other in gc.get_objects())  # frozen: no collection walks it


def test_young_collections_run_less_often_and_the_older_generations_keep_their_cadence(collector):
    _, middle, oldest = gc.get_threshold()
    settle_for_serving()
    assert gc.get_threshold() == (YOUNG_COLLECTION_ALLOCATIONS, middle, oldest)
    assert YOUNG_COLLECTION_ALLOCATIONS > 700  # CPython's default
