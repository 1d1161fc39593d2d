"""A pop counts its worker's running jobs by worker and state (claim.JOBS_IN_FLIGHT and its text twin): an
index on both keeps that count to the worker's running jobs instead of every job the worker ever ran."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect


@pytest.mark.parametrize("table", ["chat_jobs", "text_jobs"])
def test_jobs_are_indexed_by_worker_and_state(runtime, table):
    indexes = {index["name"]: index["column_names"] for index in inspect(runtime.db.engine).get_indexes(table)}
    assert indexes.get(f"ix_{table}_worker_state") == ["worker_id", "state"]
    assert f"ix_{table}_worker_id" not in indexes  # the worker's index alone would be redundant with it
