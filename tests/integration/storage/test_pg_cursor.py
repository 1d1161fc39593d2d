"""PostgreSQL's cursors describe a result shape once per process, and never hand a result another shape's
description."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text

from horde.chat import request_rows
from horde.storage.pg_cursor import DescribedOnceCursor


@pytest.fixture
def db(runtime):
    if not runtime.db.is_postgresql:
        pytest.skip("the cursor is psycopg's: SQLite's driver builds its descriptions in C")
    return runtime.db


def _cursor(session):
    return session.connection().connection.dbapi_connection.cursor()


def _described(cursor, statement: str) -> list:
    cursor.execute(statement)
    return [(column.name, column.type_code) for column in cursor.description]


def test_the_engines_use_the_describing_cursor(db):
    for sessions in (db.transaction, db.read, db.autocommit):
        with sessions() as session:
            assert isinstance(_cursor(session), DescribedOnceCursor)


def test_a_request_row_is_described_once_and_as_psycopg_describes_it(db):
    with db.read() as session:
        session.connection().execute(request_rows._FOLLOW_REQUEST, {"request_id": "none"})
        statement = "SELECT * FROM chat_requests WHERE id = 'none'"
        first, second = _cursor(session), _cursor(session)
        first.execute(statement)
        second.execute(statement)
        assert second.description is first.description  # built once, handed out again
        plain = psycopg.Cursor(session.connection().connection.dbapi_connection)
        plain.execute(statement)
        assert [(c.name, c.type_code, c.internal_size) for c in first.description] == [
            (c.name, c.type_code, c.internal_size) for c in plain.description
        ]
        assert len(first.description) == len(request_rows.REQUESTS.c)


def test_the_same_names_of_another_type_get_their_own_description(db):
    with db.autocommit() as session:
        cursor = _cursor(session)
        assert _described(cursor, "SELECT 1 AS answer") == [("answer", 23)]  # int4
        assert _described(cursor, "SELECT 'one'::text AS answer") == [("answer", 25)]  # text
        assert _described(cursor, "SELECT 'one'::varchar(5) AS answer") == [("answer", 1043)]
        assert _described(cursor, "SELECT 1 AS answer, 2 AS other") == [("answer", 23), ("other", 23)]


def test_a_table_changed_under_a_statement_is_described_afresh(db):
    with db.autocommit() as session:
        cursor = _cursor(session)
        cursor.execute("CREATE TABLE shape_probe (value integer)")
        try:
            assert _described(cursor, "SELECT value FROM shape_probe") == [("value", 23)]
            cursor.execute("ALTER TABLE shape_probe ALTER COLUMN value TYPE text")
            assert _described(cursor, "SELECT value FROM shape_probe") == [("value", 25)]
        finally:
            cursor.execute("DROP TABLE shape_probe")


def test_a_statement_without_rows_has_no_description(db):
    with db.transaction() as session:
        cursor = _cursor(session)
        cursor.execute(text("SELECT 1").text)
        cursor.execute("SET LOCAL statement_timeout = 1000")
        assert cursor.description is None
