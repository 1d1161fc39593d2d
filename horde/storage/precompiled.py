"""Hot statements compiled once per engine and run on the DBAPI cursor of a SQLAlchemy Connection.

Why: `Connection.execute` spends 10 to 17 µs of Python on every statement before and after the driver's own
work (the cache key, the parameters' construction, the execution context, the result object), ten times what
SQLite needs to answer a lookup by key. Under bench/load.py that overhead was a sixth of a server's CPU. A
statement of the hot paths is the same object on every call, so its SQL, its parameters' order and their
type conversions, and its result's conversions can be worked out once; what is left per call is the driver.

A statement's own constants (a state compared with, a LIMIT, a flag) are written into its SQL as literals; only
the caller's values are parameters. PostgreSQL then plans a prepared statement knowing them: a plan for any
`state = $1` must guess how many rows have the state, and on a Horde that keeps its history the guess is "a
good share of the table", which walks the whole table for the few waiting requests (decision 0025). A plan
belongs to one statement object, so its constants are those of every run.

What stays the same as `Connection.execute`: the statement runs in the connection's transaction (begun on
first use as SQLAlchemy would begin it); listeners of `before_cursor_execute`, `after_cursor_execute` and
`handle_error` hear it with the arguments SQLAlchemy gives them (no execution context: None, as SQLAlchemy's
own `Connection._cursor_execute` gives), so that tests count statements and tracing pairs them; and a failure
is handled by the Connection: a driver's error becomes SQLAlchemy's DBAPIError, and the connection is
invalidated when the driver says it was lost or the statement was interrupted. (The dialect's `do_execute`
events are not heard: the driver's cursor is called directly.) A list expanded into an IN gets a plan per
length of its list. A statement this module cannot compile once (a literal rendered into the SQL on every run,
a Python default that wants SQLAlchemy's execution context, a column name that cannot be an attribute) runs
through `Connection.execute` instead.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Boolean, Connection, Executable, Integer, String
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import InvalidRequestError, MultipleResultsFound, NoResultFound
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter

#: Plans kept per dialect (an engine's): one per statement and set of parameter names. The hot paths have a
#: few dozen; past the bound, new statements run through Connection.execute (nothing is evicted, nothing
#: grows). A dialect's plans are kept on it (they refer to it), so they go with it when its engine does.
MAX_PLANS = 1024
_PLANS_ATTRIBUTE = "_horde_precompiled_plans"
_FALLBACK = object()


class Rows:
    """A statement's rows, all fetched, with the Result methods the hot paths call."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int):
        self._rows, self.rowcount = rows, rowcount

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)

    def first(self) -> Any:
        return self._rows[0] if self._rows else None

    def one(self) -> Any:
        if len(self._rows) != 1:
            raise NoResultFound("No row was found") if not self._rows else MultipleResultsFound("Several rows")
        return self._rows[0]

    def all(self) -> list[Any]:
        return list(self._rows)

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None


class _RowBase(tuple):
    """A row: a tuple whose columns are also attributes, and `_mapping` (name → value) as SQLAlchemy's Row has."""

    __slots__ = ()
    _fields: tuple[str, ...]

    @property
    def _mapping(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))


class _Plan:
    """One statement compiled for one dialect and one set of parameter names."""

    __slots__ = (
        "converters",
        "dialect",
        "params",
        "positional",
        "result",
        "result_types",
        "row_factory",
        "sql",
        "statement",
    )

    def __init__(self, compiled: SQLCompiler, dialect: Dialect, given: Mapping[str, Any]):
        #: Kept so that the statement (a key of the plans by identity) lives as long as its plan.
        self.statement, self.dialect = compiled.statement, dialect
        names = {name: bind for bind, name in compiled.bind_names.items()}
        escaped = compiled.escaped_bind_names
        #: driver's name -> (the bind's own name, index in its list) for the elements of an expanded list
        elements: dict[str, tuple[str, int]] = {}
        if compiled.post_compile_params:
            expanded = compiled.construct_expanded_state(dict(given), escape_names=False)
            self.sql, self.positional = expanded.statement, compiled.positional
            order = expanded.positiontup if compiled.positional else list(expanded.parameters)
            for name, element_names in expanded.parameter_expansion.items():
                elements.update((element, (name, index)) for index, element in enumerate(element_names))
        else:
            self.sql, self.positional = compiled.string, compiled.positional
            order = compiled.positiontup if compiled.positional else list(names)
        defaults = _python_defaults(compiled)
        #: (name the driver sees, key the caller passes, index in its list or None, the bind, its conversion,
        #: the column's Python default for a column the caller leaves out, or None)
        self.params = []
        for name in order or ():
            bind_name, index = elements.get(name, (name, None))
            bind = names[bind_name]
            convert = bind.type.dialect_impl(dialect).bind_processor(dialect)
            self.params.append((escaped.get(name, name), bind.key, index, bind, convert, defaults.get(bind_name)))
        columns = compiled._result_columns  # what SQLAlchemy's own result metadata reads, in order
        fields = [column.keyname for column in columns]
        self.result = bool(fields)
        self.result_types = [column.type.dialect_impl(dialect) for column in columns]
        #: The result's conversions, worked out at the first run from the column types the driver reports.
        self.converters: list[tuple[int, Callable[[Any], Any]]] | None = None
        if fields:
            try:
                self.row_factory = type("Row", (_RowBase, namedtuple("Row", fields)), {"__slots__": ()})
            except ValueError:  # a name namedtuple refuses (a duplicate, a keyword, one with a leading "_")
                raise _NotPlannable from None

    def parameters(self, given: Mapping[str, Any]) -> Any:
        values = []
        for _name, key, index, bind, convert, default in self.params:
            if index is not None:
                value = given[key][index]
            elif key in given:
                value = given[key]
            elif default is not None:
                value = default()
            elif bind.callable is not None:
                value = bind.callable()
            elif bind.required:
                raise InvalidRequestError(f"A value is required for bind parameter {key!r}")
            else:
                value = bind.value
            values.append(value if convert is None else convert(value))
        if self.positional:
            return tuple(values)
        return {name: value for (name, *_), value in zip(self.params, values, strict=True)}


class _NotPlannable(Exception):
    pass


def _python_defaults(compiled: SQLCompiler) -> dict[str, Callable[[], Any]]:
    """Bind name -> the value maker of each column whose Python default (INSERT) or onupdate (UPDATE) the
    statement leaves to the execution, as SQLAlchemy's execution context fills them. A default that wants
    that context (a function of one argument) cannot be planned."""
    makers: dict[str, Callable[[], Any]] = {}
    prefetched: list[tuple[Any, Any]] = [(column, column.default) for column in compiled.insert_prefetch]
    prefetched += [(column, column.onupdate) for column in compiled.update_prefetch]
    for column, default in prefetched:
        name = compiled._within_exec_param_key_getter(column)
        if getattr(default, "is_scalar", False):
            makers[name] = functools.partial(_constant, default.arg)
        elif getattr(default, "is_callable", False) and hasattr(default.arg, "__wrapped__"):
            makers[name] = default.arg.__wrapped__  # the function of no argument SQLAlchemy wrapped
        else:
            raise _NotPlannable
    return makers


def _constant(value: Any) -> Any:
    return value


#: The constants written into a plan's SQL: strings, integers and flags (an enum's too), whose SQL types have
#: literals on every dialect (SQLAlchemy's literal processors quote and escape them). Others (a JSON document,
#: a time) stay parameters.
_LITERAL_VALUES = (str, int, bool)
_LITERAL_SQL_TYPES = (String, Integer, Boolean)


def _is_constant(bind: BindParameter, given_keys: frozenset[str]) -> bool:
    """A value the statement itself carries, the same on every run: not the caller's, not computed per run."""
    if bind.key in given_keys or bind.callable is not None or not isinstance(bind.type, _LITERAL_SQL_TYPES):
        return False
    if bind.expanding:  # a list of the statement's own (an IN of states): its elements are constants
        values = bind.value
        return (
            isinstance(values, (list, tuple)) and bool(values) and all(isinstance(v, _LITERAL_VALUES) for v in values)
        )
    return isinstance(bind.value, _LITERAL_VALUES)


#: Compiler class of a dialect -> its ConstantsInline subclass (a dialect kind or two per process).
_CONSTANTS_INLINE: dict[type, type[SQLCompiler]] = {}


def _constants_inline(base: type[SQLCompiler]) -> type[SQLCompiler]:
    """A dialect's statement compiler that writes a statement's constants as SQL literals (its other binds stay
    parameters); made once per compiler class."""
    made = _CONSTANTS_INLINE.get(base)
    if made is not None:
        return made

    class ConstantsInline(base):  # type: ignore[valid-type, misc]
        def __init__(self, dialect: Dialect, statement: Any, *, given_keys: frozenset[str], **options: Any):
            self._given_keys = given_keys
            super().__init__(dialect, statement, **options)

        def visit_bindparam(self, bindparam: BindParameter, **options: Any) -> str:
            if not options.get("literal_binds") and _is_constant(bindparam, self._given_keys):
                options["literal_binds"] = True
            return super().visit_bindparam(bindparam, **options)

    _CONSTANTS_INLINE[base] = ConstantsInline
    return ConstantsInline


def execute(connection: Connection, statement: Executable, params: Mapping[str, Any] | None = None) -> Rows | Any:
    """Run `statement` (a module constant: a plan is kept for each statement object) with `params` on
    `connection` as `connection.execute` would, compiled once per engine. The result answers first(), one(),
    all(), scalar(), rowcount and iteration; rows are tuples whose columns are also attributes, with
    `_mapping`."""
    given = params or {}
    plan = _plan(statement, connection.dialect, given, executemany=False)
    if plan is _FALLBACK:
        return connection.execute(statement, given)
    return _run(connection, plan, plan.parameters(given), many=False)


def execute_many(connection: Connection, statement: Executable, rows: Sequence[Mapping[str, Any]]) -> None:
    """Run a statement that returns nothing once per element of `rows` (all with the same keys), as
    `connection.execute(statement, rows)` would: one executemany on the driver."""
    if not rows:
        return
    plan = _plan(statement, connection.dialect, rows[0], executemany=True)
    if plan is _FALLBACK or plan.result:
        connection.execute(statement, list(rows))
        return
    _run(connection, plan, [plan.parameters(row) for row in rows], many=True)


class _Expanding:
    """The plans of a statement with lists expanded into its SQL (an IN of a list): one per lengths of its lists,
    at most MAX_PLANS; a length past them runs through Connection.execute, as a statement past the bound does."""

    __slots__ = ("by_lengths", "compiled", "keys")

    def __init__(self, compiled: SQLCompiler):
        self.compiled = compiled
        self.by_lengths: dict[tuple[int, ...], _Plan] = {}
        self.keys = tuple(bind.key for bind in compiled.post_compile_params)

    def plan(self, dialect: Dialect, given: Mapping[str, Any]) -> Any:
        lengths = tuple(len(given[key]) for key in self.keys)
        plan = self.by_lengths.get(lengths)
        if plan is None:
            if len(self.by_lengths) >= MAX_PLANS:  # planning it on every call would cost more than SQLAlchemy
                raise _NotPlannable
            plan = self.by_lengths[lengths] = _Plan(self.compiled, dialect, given)
        return plan


def _plan(statement: Executable, dialect: Dialect, given: Mapping[str, Any], executemany: bool) -> Any:
    plans = dialect.__dict__.get(_PLANS_ATTRIBUTE)
    if plans is None:
        plans = {}
        setattr(dialect, _PLANS_ATTRIBUTE, plans)
    key = (id(statement), tuple(given), executemany)
    plan = plans.get(key)
    if plan is None:
        if len(plans) >= MAX_PLANS:
            return _FALLBACK
        plan = plans[key] = _planned(statement, dialect, given, executemany)
    if plan.__class__ is _Expanding:
        try:
            return plan.plan(dialect, given)
        except (_NotPlannable, KeyError, TypeError):  # e.g. a list left out or not a list: SQLAlchemy says so
            return _FALLBACK
    return plan


def _planned(statement: Executable, dialect: Dialect, given: Mapping[str, Any], executemany: bool) -> Any:
    compiled = _constants_inline(dialect.statement_compiler)(
        dialect,
        cast(Any, statement),
        column_keys=sorted(given),
        for_executemany=executemany,
        given_keys=frozenset(given),
    )
    if not isinstance(compiled, SQLCompiler) or compiled.literal_execute_params:
        return _FALLBACK
    if compiled.post_compile_params and executemany:  # each row's lists may have lengths of their own
        return _FALLBACK
    try:
        if compiled.post_compile_params:
            expanding = _Expanding(compiled)
            expanding.plan(dialect, given)  # the first one, to know it can be planned
            return expanding
        return _Plan(compiled, dialect, given)
    except (_NotPlannable, KeyError, TypeError):
        return _FALLBACK


def _run(connection: Connection, plan: _Plan, parameters: Any, *, many: bool) -> Rows:
    """The statement on a cursor of the connection's DBAPI connection, as SQLAlchemy's own `_cursor_execute` runs
    a statement without an execution context: the cursor events (before, after, handle_error) when listeners are
    registered, a failure handled by the Connection (wrapped, the connection invalidated when it was lost)."""
    if not connection.in_transaction():
        connection.begin()  # what Connection.execute's autobegin does: on SQLite, the engine's BEGIN
    dbapi_connection = connection.connection.dbapi_connection
    cursor: Any = dbapi_connection.cursor()  # type: ignore[union-attr]
    sql = plan.sql
    # SQLAlchemy's own test for listeners of a connection's events costs a tenth of asking for each event's; an
    # engine with listeners of other events (SQLite's `begin`) asks for the two cursor events' then.
    dispatch = connection.dispatch if connection._has_events or connection.engine._has_events else None
    try:
        if dispatch is not None and dispatch.before_cursor_execute:
            for listener in dispatch.before_cursor_execute:  # a listener with retval=True may rewrite the statement
                sql, parameters = listener(connection, cursor, sql, parameters, None, many)
        if many:
            cursor.executemany(sql, parameters)
        else:
            cursor.execute(sql, parameters)
        if dispatch is not None and dispatch.after_cursor_execute:
            dispatch.after_cursor_execute(connection, cursor, sql, parameters, None, many)
        fetched = cursor.fetchall() if plan.result else []
        rowcount = cursor.rowcount
    except BaseException as exc:  # a greenlet killed mid-statement too: its connection is in an unknown state
        # Fires handle_error, closes the cursor, raises SQLAlchemy's error (or a listener's), invalidates a
        # connection that was lost or interrupted: what Connection.execute does with a failure of its cursor.
        connection._handle_dbapi_exception(exc, sql, parameters, cursor, None)
    try:  # the result's conversions are Python's work, not the driver's: their errors are raised as they are
        return Rows(_converted(fetched, cursor, plan) if fetched else fetched, rowcount)
    finally:
        cursor.close()


def _converted(rows: list[Any], cursor: Any, plan: _Plan) -> list[Any]:
    converters = plan.converters
    if converters is None:
        converters = plan.converters = _converters(cursor, plan)
    make = cast(Any, plan.row_factory)._make
    if not converters:
        return [make(row) for row in rows]
    converted = []
    for row in rows:
        values = list(row)
        for i, convert in converters:
            values[i] = convert(values[i])
        converted.append(make(values))
    return converted


def _converters(cursor: Any, plan: _Plan) -> list[tuple[int, Callable[[Any], Any]]]:
    """(column, conversion) for the columns that have one, from the types the driver reports, as SQLAlchemy
    asks for them: a statement's result has the same column types on every run."""
    description = cursor.description or ()
    converters: list[tuple[int, Callable[[Any], Any]]] = []
    for i, kind in enumerate(plan.result_types):
        driver_type = description[i][1] if i < len(description) else None
        convert = kind.result_processor(plan.dialect, driver_type)
        if convert is not None:
            converters.append((i, convert))
    return converters
