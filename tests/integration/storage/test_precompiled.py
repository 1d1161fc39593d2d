"""horde.storage.precompiled runs a statement as Connection.execute would: same rows, same conversions, same
transaction, same errors, heard by the same listeners. Each check compares with SQLAlchemy itself."""

from __future__ import annotations

import datetime as dt
import gc
import itertools
import weakref

import pytest
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    create_engine,
    event,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError, InvalidRequestError, NoResultFound

from horde.storage import precompiled

_METADATA = MetaData()
PROBES = Table(
    "precompiled_probes",
    _METADATA,
    Column("id", Integer, primary_key=True),
    Column("name", String(40), nullable=False, unique=True),
    Column("at", DateTime, nullable=True),
    Column("doc", JSON, nullable=True),
    Column("flag", Boolean, nullable=False, default=False),
    Column("serial", Integer, nullable=False, default=lambda: next(_SERIALS)),
    Column("told", Integer, nullable=True, default=lambda context: 7),
)
_SERIALS = itertools.count(100)
_INSERT = insert(PROBES)
_INSERT_NAME = insert(PROBES).values(name=bindparam("name")).returning(PROBES.c.flag, PROBES.c.serial)
_INSERT_RETURNING = insert(PROBES).returning(PROBES.c.id, PROBES.c.at, PROBES.c.doc, PROBES.c.flag)
_BY_NAMES = select(PROBES).where(PROBES.c.name.in_(bindparam("names", expanding=True))).order_by(PROBES.c.id)
_RENAME = update(PROBES).where(PROBES.c.name == bindparam("old")).values(name=bindparam("new"))
_COUNT = select(func.count()).select_from(PROBES)
#: A result column whose name a namedtuple refuses (a leading "_"): its rows cannot be made once.
_HIDDEN_NAME = select(PROBES.c.name.label("_hidden")).order_by(PROBES.c.id)
#: Constants of the statement (a name with a quote and a percent sign, a literal_execute, a LIMIT) beside the
#: caller's value (the flag).
_CONSTANTS = (
    select(PROBES.c.name)
    .where(
        PROBES.c.name.in_(["it's 100%", "n1"]) | (PROBES.c.name == "it's 100%"),
        PROBES.c.serial > literal(0, literal_execute=True),
        PROBES.c.flag == bindparam("flag"),
    )
    .order_by(PROBES.c.id)
    .limit(5)
)
_AT = dt.datetime(2026, 11, 30, 12, 34, 56, 789000)


@pytest.fixture
def engine(runtime):
    engine = runtime.db.engine
    _METADATA.create_all(engine)
    yield engine
    _METADATA.drop_all(engine)


def _rows(engine, name_count=3):
    with engine.begin() as connection:
        for i in range(name_count):
            doc = None if i == 0 else {"i": i, "list": [1, "two"]}
            connection.execute(_INSERT, {"name": f"n{i}", "at": _AT, "doc": doc, "flag": i % 2 == 1})


def test_rows_and_their_conversions_are_sqlalchemys(engine):
    _rows(engine)
    with engine.connect() as connection:
        for names in (["n1"], ["n0", "n2"], ["n0", "n1", "n2"], [], ["n2", "n1"]):
            expected = connection.execute(_BY_NAMES, {"names": names}).all()
            got = precompiled.execute(connection, _BY_NAMES, {"names": names}).all()
            assert [tuple(row) for row in got] == [tuple(row) for row in expected]
            assert [row._mapping for row in got] == [dict(row._mapping) for row in expected]
        row = precompiled.execute(connection, _BY_NAMES, {"names": ["n1"]}).one()
        assert row.at == _AT and isinstance(row.at, dt.datetime)
        assert row.doc == {"i": 1, "list": [1, "two"]} and row.flag is True
        assert precompiled.execute(connection, _COUNT).scalar() == 3


def test_insert_returning_update_rowcount_and_executemany(engine):
    with engine.begin() as connection:
        written = precompiled.execute(connection, _INSERT_RETURNING, {"name": "a", "at": _AT, "doc": [1], "flag": True})
        row = written.one()
        assert (row.at, row.doc, row.flag) == (_AT, [1], True)
        precompiled.execute_many(connection, _INSERT, [{"name": f"m{i}", "flag": False} for i in range(4)])
        assert precompiled.execute(connection, _RENAME, {"old": "m1", "new": "renamed"}).rowcount == 1
        assert precompiled.execute(connection, _RENAME, {"old": "nobody", "new": "x"}).rowcount == 0
    with engine.connect() as connection:
        names = connection.execute(select(PROBES.c.name).order_by(PROBES.c.id)).scalars().all()
        assert names == ["a", "m0", "renamed", "m2", "m3"]


def test_a_statement_runs_in_the_connections_transaction_begun_as_sqlalchemy_begins_it(engine):
    with engine.connect() as connection:
        assert not connection.in_transaction()
        precompiled.execute(connection, _INSERT, {"name": "rolled back", "flag": False})
        assert connection.in_transaction()
        connection.rollback()
    with engine.connect() as connection:
        assert connection.execute(_COUNT).scalar() == 0


def test_a_drivers_error_is_sqlalchemys(engine):
    _rows(engine, 1)
    with engine.connect() as connection, pytest.raises(IntegrityError) as raised:
        precompiled.execute(connection, _INSERT, {"name": "n0", "flag": False})
    assert not raised.value.connection_invalidated


def test_listeners_hear_each_statement(engine):
    heard = []

    def record(_connection, _cursor, statement, parameters, _context, executemany):
        heard.append((statement, executemany))

    event.listen(engine, "before_cursor_execute", record)
    try:
        with engine.begin() as connection:
            precompiled.execute(connection, _COUNT)
            precompiled.execute_many(connection, _INSERT, [{"name": "x", "flag": True}, {"name": "y", "flag": True}])
    finally:
        event.remove(engine, "before_cursor_execute", record)
    ours = [(statement.split()[0], many) for statement, many in heard if not statement.startswith("BEGIN")]
    assert ours == [("SELECT", False), ("INSERT", True)]


class _Tracer:
    """Listeners of the three cursor events, as a tracer registers them: what each heard, in order."""

    NAMES = ("before_cursor_execute", "after_cursor_execute", "handle_error")

    def __init__(self, engine):
        self.engine, self.heard = engine, []

    def before_cursor_execute(self, connection, cursor, statement, parameters, context, executemany):
        self.heard.append(("before", statement, parameters, executemany, cursor, context))

    def after_cursor_execute(self, connection, cursor, statement, parameters, context, executemany):
        self.heard.append(("after", statement, parameters, executemany, cursor, context))

    def handle_error(self, context):
        self.heard.append(("error", context.statement, context.parameters, context.connection, context))

    def __enter__(self):
        for name in self.NAMES:
            event.listen(self.engine, name, getattr(self, name))
        return self

    def __exit__(self, *_):
        for name in self.NAMES:
            event.remove(self.engine, name, getattr(self, name))

    def ours(self):
        """What was heard but the transaction's own statements (SQLite's BEGIN, as the engine sends it)."""
        return [heard for heard in self.heard if not heard[1].startswith("BEGIN")]


def _run_the_three(engine, run, run_many):
    """A query, an executemany and an insert that breaks a unique constraint, with a tracer listening. (`told`
    is given: its default wants SQLAlchemy's execution context, which would leave the inserts to SQLAlchemy.)"""
    _rows(engine, 1)
    with _Tracer(engine) as tracer, engine.connect() as connection:
        run(connection, _COUNT, {})
        run_many(connection, _INSERT, [{"name": "x", "flag": True, "told": 1}, {"name": "y", "flag": True, "told": 2}])
        with pytest.raises(IntegrityError) as raised:
            run(connection, _INSERT, {"name": "n0", "flag": False, "told": 3})
    return tracer.ours(), raised.value


def test_the_cursor_events_pair_up_as_sqlalchemys_own_execution_fires_them(engine):
    """A tracer pairs each before_cursor_execute with its after_cursor_execute, or with handle_error when the
    statement fails: the same events, in the same order, as Connection.execute fires for the same statements."""

    def shape(heard):
        return [
            (kind, statement.split()[0], *([rest[1]] if kind != "error" else [])) for kind, statement, *rest in heard
        ]

    theirs = shape(
        _run_the_three(
            engine,
            lambda c, statement, params: c.execute(statement, params),
            lambda c, statement, rows: c.execute(statement, rows),
        )[0]
    )
    gc.collect()  # SQLAlchemy's failed cursor, held by its error's traceback, keeps SQLite's table locked
    with engine.begin() as connection:
        connection.execute(PROBES.delete())
    ours, raised = _run_the_three(engine, precompiled.execute, precompiled.execute_many)
    assert (
        shape(ours)
        == theirs
        == [
            ("before", "SELECT", False),
            ("after", "SELECT", False),
            ("before", "INSERT", True),
            ("after", "INSERT", True),
            ("before", "INSERT", False),
            ("error", "INSERT"),
        ]
    )
    for before, after in (ours[0:2], ours[2:4]):  # the same statement, parameters and cursor in each pair
        assert before[1:5] == after[1:5] and before[5] is None is after[5]
    failed_before, (_, statement, parameters, connection, context) = ours[4:6]
    assert (statement, parameters) == failed_before[1:3] and failed_before[5] is None
    assert connection is context.connection is not None
    assert isinstance(context.original_exception, engine.dialect.loaded_dbapi.IntegrityError)
    assert context.sqlalchemy_exception is raised and raised.orig is context.original_exception
    assert context.execution_context is None and not context.is_disconnect


def test_a_listener_may_rewrite_the_statement_and_replace_the_error_as_with_sqlalchemy(engine):
    _rows(engine, 1)

    class Refused(Exception):
        pass

    def comment(_connection, _cursor, statement, parameters, _context, _executemany):
        return "/* traced */ " + statement, parameters

    heard = []
    listeners = [
        ("before_cursor_execute", comment, {"retval": True}),
        ("after_cursor_execute", lambda *args: heard.append(args[2]), {}),
        ("handle_error", lambda context: Refused(context.statement), {}),
    ]
    for name, listener, options in listeners:
        event.listen(engine, name, listener, **options)
    try:
        with engine.connect() as connection:
            assert precompiled.execute(connection, _COUNT).scalar() == 1
            with pytest.raises(Refused) as refused:
                precompiled.execute(connection, _INSERT, {"name": "n0", "flag": False, "told": 1})
    finally:
        for name, listener, _ in listeners:
            event.remove(engine, name, listener)
    assert next(sql for sql in heard if "BEGIN" not in sql).startswith("/* traced */ SELECT")
    assert str(refused.value).startswith("/* traced */ INSERT")


def test_what_cannot_be_compiled_once_runs_through_sqlalchemy(engine):
    _rows(engine, 2)
    with engine.connect() as connection:
        assert precompiled.execute(connection, _HIDDEN_NAME).scalar() == "n0"


def test_a_statements_own_constants_are_sql_literals_and_the_callers_values_parameters(engine):
    """So that PostgreSQL plans a prepared statement knowing them (decision 0025); quoted and escaped as
    SQLAlchemy writes literals, with the same rows as SQLAlchemy's run."""
    with engine.begin() as connection:
        connection.execute(_INSERT, [{"name": "it's 100%", "flag": True}, {"name": "it's 100", "flag": True}])
    heard = []

    def record(_conn, _cursor, statement, parameters, *_):
        heard.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        with engine.connect() as connection:
            ours = precompiled.execute(connection, _CONSTANTS, {"flag": True}).all()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    with engine.connect() as connection:
        assert [tuple(row) for row in ours] == connection.execute(_CONSTANTS, {"flag": True}).all()
    assert [row.name for row in ours] == ["it's 100%"]
    sql, parameters = next((sql, parameters) for sql, parameters in heard if not sql.startswith("BEGIN"))
    assert "'it''s 100%" in sql and "> 0" in sql and "LIMIT 5" in sql
    assert len(parameters) == 1  # the flag's


def test_a_missing_value_and_a_missing_row_are_refused(engine):
    with engine.connect() as connection:
        with pytest.raises(InvalidRequestError):
            precompiled.execute(connection, _RENAME, {"new": "x"})
        with pytest.raises(NoResultFound):
            precompiled.execute(connection, _BY_NAMES, {"names": ["absent"]}).one()


def test_the_columns_python_defaults_fill_what_the_caller_leaves_out(engine):
    with engine.begin() as connection:
        first = precompiled.execute(connection, _INSERT_NAME, {"name": "a"}).one()
        second = precompiled.execute(connection, _INSERT_NAME, {"name": "b"}).one()
        assert first.flag is False and second.serial == first.serial + 1
        precompiled.execute(connection, _INSERT, {"name": "c"})  # a default that wants SQLAlchemy's context
        told = connection.execute(select(PROBES.c.told).where(PROBES.c.name == "c")).scalar()
    assert told == 7


def test_list_lengths_past_the_bound_run_through_sqlalchemy_and_are_not_kept(engine, monkeypatch):
    monkeypatch.setattr(precompiled, "MAX_PLANS", 2)
    built = []
    plan_class = precompiled._Plan

    def counted_plan(*args):
        built.append(1)
        return plan_class(*args)

    monkeypatch.setattr(precompiled, "_Plan", counted_plan)
    _rows(engine, 3)
    statement = select(PROBES.c.name).where(PROBES.c.name.in_(bindparam("names", expanding=True)))
    with engine.connect() as connection:
        for names in (["n0"], ["n0", "n1"], ["n0", "n1", "n2"], ["n2", "n1", "n0"]):
            found = [row[0] for row in precompiled.execute(connection, statement, {"names": names})]
            assert sorted(found) == sorted(names)
    assert len(built) == 2  # the third length, asked twice, is never planned: compiling it each call costs more
    kept = [plan for plan in engine.dialect._horde_precompiled_plans.values() if hasattr(plan, "by_lengths")]
    assert [sorted(plan.by_lengths) for plan in kept if plan.compiled.statement is statement] == [[(1,), (2,)]]


def test_an_engines_plans_go_with_it(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'gone.db'}")
    _METADATA.create_all(engine)
    with engine.connect() as connection:
        precompiled.execute(connection, _BY_NAMES, {"names": ["a", "b"]}).all()
        precompiled.execute(connection, _COUNT).scalar()
    dialect = weakref.ref(engine.dialect)
    engine.dispose()
    del engine, connection
    gc.collect()
    assert dialect() is None
