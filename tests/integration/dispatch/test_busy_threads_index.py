"""A pop counts its worker's running jobs by worker and state (claim.JOBS_IN_FLIGHT and its text twin): an
index that begins with both keeps that count to the worker's running jobs instead of every job the worker ever
ran. Text jobs' index also has their end, for the worker's speed (decision 0025)."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect


@pytest.mark.parametrize(
    ("table", "index", "columns"),
    [
        ("chat_jobs", "ix_chat_jobs_worker_state", ["worker_id", "state"]),
        ("text_jobs", "ix_text_jobs_worker_state_ended", ["worker_id", "state", "ended_at"]),
    ],
)
def test_jobs_are_indexed_by_worker_and_state(runtime, table, index, columns):
    indexes = {found["name"]: found["column_names"] for found in inspect(runtime.db.engine).get_indexes(table)}
    assert indexes.get(index) == columns
    redundant = [name for name, found in indexes.items() if name != index and found == columns[: len(found)]]
    assert redundant == []  # the worker's index alone, or by worker and state, would be redundant with it
