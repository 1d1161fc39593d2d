"""On SQLite a worker's pops run statements prepared once: a later pop that claims a job prepares nothing.

A LIKE whose pattern was a bare parameter (a request's list of workers, matched against the worker's id) made
SQLite prepare the claim anew on every run (database.like_planned_once)."""

from __future__ import annotations

import pytest

from tests.support.native import pop, queued_id
from tests.support.statements import sqlite_preparations
from tests.support.text_api import text_pop, text_queued

#: (pop, queue) per kind of job.
KINDS = {"chat": (pop, queued_id), "text": (text_pop, text_queued)}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_later_pop_that_claims_prepares_nothing(sqlite_runtime, client, make_user, kind):
    pop_as, queue_as = KINDS[kind]
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)
    pop_as(client, owner)
    for _ in range(3):
        queue_as(client, key)
    with sqlite_preparations(sqlite_runtime) as prepared:
        assert pop_as(client, owner)["id"]  # prepares what the claim runs
        first = len(prepared)
        assert pop_as(client, owner)["id"]
    assert first > 0 and len(prepared) == first, prepared[first:]
