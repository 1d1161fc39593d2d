"""A body sent again byte for byte is loaded once (a worker's pop), and is refused each time it is refusable."""

from __future__ import annotations

import json

import pytest
from marshmallow import Schema, fields

from horde import errors
from horde.http.payload import REPEATED_BODY_MAX_BYTES, RepeatedBodies
from horde.workers.schemas import POP_SCHEMA
from tests.support.native import declaration


class CountingSchema(Schema):
    """A schema that counts its loads."""

    name = fields.String(required=True)
    models = fields.List(fields.String(), required=True)
    loads = 0

    def load(self, *args, **kwargs):
        CountingSchema.loads += 1
        return super().load(*args, **kwargs)


@pytest.fixture
def counting():
    CountingSchema.loads = 0
    return RepeatedBodies(CountingSchema(), max_entries=2)


def raw(**body) -> bytes:
    return json.dumps({"name": "w", "models": ["m1"]} | body).encode()


def test_a_repeated_body_is_loaded_once_and_each_caller_gets_its_own_copy(counting):
    first = counting.load(raw())
    first["models"].append("changed by its caller")
    second = counting.load(raw())
    assert second == {"name": "w", "models": ["m1"]}
    assert CountingSchema.loads == 1


def test_a_refused_body_is_refused_every_time(counting):
    for _ in range(2):
        with pytest.raises(errors.BadRequest) as refused:
            counting.load(b'{"models": ["m1"]}')
        assert refused.value.param == "name"
        with pytest.raises(errors.BadRequest):
            counting.load(b"{not json")
    assert CountingSchema.loads == 2


def test_the_oldest_kept_body_goes_first_past_the_bound(counting):
    for name in ("a", "b", "c"):
        counting.load(raw(name=name))
    counting.load(raw(name="c"))
    assert CountingSchema.loads == 3, "the newest are kept"
    counting.load(raw(name="a"))
    assert CountingSchema.loads == 4, "the oldest went when the third came"


def test_a_body_past_the_size_bound_is_not_kept(counting):
    large = raw(name="w" * REPEATED_BODY_MAX_BYTES)
    counting.load(large)
    counting.load(large)
    assert CountingSchema.loads == 2


def test_the_pop_schema_gives_what_it_gave_without_keeping():
    body = json.dumps(declaration("w1", threads=2)).encode()
    kept = RepeatedBodies(POP_SCHEMA)
    assert kept.load(body) == kept.load(body) == POP_SCHEMA.load(json.loads(body))
