"""A finish as it crosses to the other processes with its event (decision 0021)."""

from __future__ import annotations

import datetime as dt

import pytest

from horde.chat.finish import FINISH_WIRE, MAX_CARRIED_FINISH_BYTES, Finish


def finish(content: str = "Hi there", **overrides) -> Finish:
    values = {
        "state": "done",
        "reply": {"content": content, "tool_calls": None, "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
        "kudos_charged": 7,
        "finished_at": dt.datetime(2026, 12, 3, 11, 30, 5, 123456),
        "worker_id": "w-1",
        "worker_name": "worker one",
        "served_model": "m1",
        "context_adjustments": [{"dropped_messages": 2}],
    }
    return Finish(**(values | overrides))


@pytest.mark.parametrize(
    "original",
    [finish(), finish(worker_id=None, worker_name=None, served_model=None, context_adjustments=None), finish("é ✓")],
    ids=["claimed", "nothing-claimed", "unicode"],
)
def test_a_finish_decodes_to_what_was_encoded(original):
    carried = FINISH_WIRE.encode(original)
    assert carried is not None
    assert FINISH_WIRE.decode(carried) == original


def test_an_aware_finish_time_keeps_its_zone():
    original = finish(finished_at=dt.datetime(2026, 12, 3, 11, 30, tzinfo=dt.UTC))
    assert FINISH_WIRE.decode(FINISH_WIRE.encode(original)).finished_at.tzinfo == dt.UTC


def test_a_finish_above_the_bound_or_anything_else_is_not_carried():
    assert FINISH_WIRE.encode(finish("x" * MAX_CARRIED_FINISH_BYTES)) is None
    assert FINISH_WIRE.encode(finish("x" * (MAX_CARRIED_FINISH_BYTES // 2))) is not None
    assert FINISH_WIRE.encode({"state": "done"}) is None


@pytest.mark.parametrize("data", [b"not json", b"{}", b'{"state": "done"}', b"[1]", b'{"finished_at": 5}'])
def test_what_is_not_an_encoded_finish_does_not_decode(data):
    with pytest.raises((ValueError, KeyError, TypeError)):
        FINISH_WIRE.decode(data)
