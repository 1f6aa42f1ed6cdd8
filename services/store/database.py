"""The read-model database: one SQLAlchemy Core (async) layer over SQLite and PostgreSQL.

``SPADES_DATABASE_URL`` comes in the plain form (``postgresql://user@host:port/db`` or
``sqlite:///path``); :func:`store_url` picks the async driver (asyncpg, aiosqlite). A
``?schema=NAME`` query parameter puts the tables in that PostgreSQL schema, created on first
start, so that several deployments (or test runs) can share one database.

SQLite runs in WAL mode, so readers never wait for the writer, with ``synchronous=NORMAL``: a
killed process loses nothing committed, and a power loss can lose only the last transactions,
positions included, which the workers then replay from the stream. The sqlite3 driver's own
transaction handling is switched off and SQLAlchemy emits ``BEGIN`` itself: ``BEGIN IMMEDIATE``
for writers (:meth:`Store.writing`), so that a worker holds the write lock from the moment it
reads the position it is about to advance, and a plain deferred ``BEGIN`` for readers.

A projection batch on SQLite (:meth:`Store.applying`) runs on a plain sqlite3 connection in the
event loop's own thread. Through aiosqlite every statement is four or so hand-offs to its thread
and back (cursor, execute, fetch, close), each a wake-up of the loop: they cost the workers more
than SQLite's own work does, and under load each waits for the CPU. A statement on a local file
takes well under a millisecond; the one wait that could be long, for the write lock another
process holds, is made asynchronously.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import operator
import re
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import msgspec
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from services.runtime.private import private_dir, private_file
from services.store.schema import Json

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a writer waits for SQLite's write lock before the attempt fails (and is retried)."""

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
}


class Statements(Protocol):
    """What the read models' writes ask of a connection: its dialect, and to run statements.
    An ``AsyncConnection`` is one; so is the connection of :meth:`Store.applying`."""

    @property
    def dialect(self) -> sa.Dialect: ...

    async def execute(
        self, statement: sa.Executable, parameters: Any = None
    ) -> sa.CursorResult[Any]: ...


class _InLoop:
    """A sqlite3 connection whose statements run in the event loop's thread (see the module's
    docstring), as :class:`Statements`; :func:`fetch` and :func:`run` go to its sqlite3
    connection directly (see :class:`_Plan`)."""

    __slots__ = ("_conn", "dialect", "raw")

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn
        self.raw: sqlite3.Connection = conn.connection.dbapi_connection  # type: ignore[assignment]
        """The sqlite3 connection; :meth:`Store.applying` begins and commits on it."""
        self.dialect = conn.dialect

    async def execute(
        self, statement: sa.Executable, parameters: Any = None
    ) -> sa.CursorResult[Any]:
        return self._conn.execute(statement, parameters)

    def fetch(self, statement: sa.Executable, parameters: Mapping[str, Any]) -> list[Any]:
        plan = _plan(self.dialect, statement, parameters)
        try:
            rows = self.raw.execute(plan.sql, plan.values(parameters)).fetchall()
        except sqlite3.Error as error:
            raise _wrapped(plan.sql, error, self.dialect) from error
        return plan.decoded(rows)

    def run(self, statement: sa.Executable, rows: Sequence[Mapping[str, Any]]) -> None:
        plan = _plan(self.dialect, statement, rows[0])
        try:
            if len(rows) == 1:
                self.raw.execute(plan.sql, plan.values(rows[0]))
            else:
                self.raw.executemany(plan.sql, plan.many(rows))
        except sqlite3.Error as error:
            raise _wrapped(plan.sql, error, self.dialect) from error


_encode_json = msgspec.json.Encoder().encode
_decode_json = msgspec.json.decode


def _json_text(value: Any) -> str | None:
    """What :class:`~.schema.Json` binds, without its ``TypeDecorator`` frames."""
    return None if value is None else _encode_json(value).decode()


def _json_value(text: Any) -> Any:
    return None if text is None else _decode_json(text)


class _Plan:
    """A statement compiled once to SQLite's SQL text, for one set of parameter names (and
    lengths of its expanding lists), with what its parameters and columns need converted.

    SQLAlchemy does the same work on every execution (the compiled cache's look-up, its
    parameters built and processed one by one, rows wrapped, the JSON columns' type decorator):
    on the projection workers' batches that cost more than SQLite's own work did. The statement
    stays SQLAlchemy's (one definition for both databases); only its execution is bypassed.
    """

    __slots__ = ("convert", "decoders", "places", "sql", "take")

    def __init__(
        self,
        sql: str,
        places: Sequence[tuple[str, int | None, Any]],
        convert: Sequence[tuple[int, Any]],
        decoders: Sequence[tuple[int, Any]],
    ) -> None:
        self.sql = sql
        self.places = tuple(places)
        """Each position's parameter name, index in its expanding list, and constant value
        (for a value bound in the statement itself)."""
        self.convert = tuple(convert)
        """(position, function) for the parameters that are converted before binding."""
        self.decoders = tuple(decoders)
        """(column, function) for the result columns converted after fetching."""
        names = [name for name, _, _ in self.places]
        self.take = operator.itemgetter(*names) if names else None

    def values(self, parameters: Mapping[str, Any]) -> list[Any]:
        values = [
            (parameters[name] if index is None else parameters[name][index])
            if name in parameters
            else constant
            for name, index, constant in self.places
        ]
        for position, function in self.convert:
            values[position] = function(values[position])
        return values

    def many(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Parameters of an ``executemany`` (no expanding lists, no constants)."""
        take = self.take
        assert take is not None
        if len(self.places) == 1:
            taken: list[Any] = [(take(row),) for row in rows]
        else:
            taken = [take(row) for row in rows]
        return _converted(taken, self.convert) if self.convert else taken

    def decoded(self, rows: list[Any]) -> list[Any]:
        return _converted(rows, self.decoders) if self.decoders else rows


def _converted(rows: Sequence[Sequence[Any]], conversions: Sequence[tuple[int, Any]]) -> list[Any]:
    """Each row as a list, with each (position, function) of ``conversions`` applied to it."""
    converted = []
    for row in rows:
        values = list(row)
        for position, function in conversions:
            values[position] = function(values[position])
        converted.append(values)
    return converted


_compiled: dict[tuple[Any, ...], tuple[Any, tuple[str, ...], dict[tuple[int, ...], _Plan]]] = {}
"""Per statement and parameter names: its compilation, and its plans by expanding lengths."""
_MOST_COMPILED = 1_024
"""The read models' statements number a few dozen: more means some caller builds one per
call, and the cache starts over rather than grow without end."""


def _plan(dialect: sa.Dialect, statement: sa.Executable, parameters: Mapping[str, Any]) -> _Plan:
    # By identity: hashing a statement costs more than the rest. The compilation kept in the
    # cache holds the statement, so its id is not reused while the entry lives.
    key = (id(statement), tuple(parameters))
    found = _compiled.get(key)
    if found is None:
        assert isinstance(statement, sa.ClauseElement)
        if len(_compiled) >= _MOST_COMPILED:
            _compiled.clear()
        compiled: Any = statement.compile(dialect=dialect, column_keys=list(parameters))
        expanding = tuple(name for name, bind in compiled.binds.items() if bind.expanding)
        found = _compiled[key] = (compiled, expanding, {})
    compiled, expanding, plans = found
    lengths = tuple(len(parameters[name]) for name in expanding)
    plan = plans.get(lengths)
    if plan is None:
        plan = plans[lengths] = _new_plan(dialect, statement, compiled, parameters)
    return plan


def _new_plan(
    dialect: sa.Dialect,
    statement: sa.Executable,
    compiled: Any,
    parameters: Mapping[str, Any],
) -> _Plan:
    state = compiled.construct_expanded_state(dict(parameters))
    expanded = {
        name: (original, index)
        for original, names in state.parameter_expansion.items()
        for index, name in enumerate(names)
    }
    places: list[tuple[str, int | None, Any]] = []
    convert: list[tuple[int, Any]] = []
    for position, name in enumerate(state.positiontup or ()):
        original, index = expanded.get(name, (name, None))
        bind = compiled.binds[original]
        constant = None if original in parameters else bind.effective_value
        places.append((original, index, constant))
        function = _binder(bind.type, dialect)
        if function is not None:
            convert.append((position, function))
    decoders: list[tuple[int, Any]] = []
    if isinstance(statement, sa.Select):
        for column, selected in enumerate(statement.selected_columns):
            function = _reader(selected.type, dialect)
            if function is not None:
                decoders.append((column, function))
    return _Plan(state.statement, places, convert, decoders)


def _binder(kind: sa.types.TypeEngine[Any], dialect: sa.Dialect) -> Any:
    if isinstance(kind, Json):
        return _json_text
    if isinstance(kind, sa.LargeBinary):
        return None  # sqlite3 stores bytes as a BLOB as they are (SQLAlchemy wraps them first)
    return kind.bind_processor(dialect)


def _reader(kind: sa.types.TypeEngine[Any], dialect: sa.Dialect) -> Any:
    if isinstance(kind, Json):
        return _json_value
    return kind.result_processor(dialect, None)


def _wrapped(sql: str, error: sqlite3.Error, dialect: sa.Dialect) -> BaseException:
    """The error SQLAlchemy would have raised (:func:`is_store_trouble` reads its class)."""
    return sa.exc.DBAPIError.instance(
        sql, None, error, sqlite3.Error, hide_parameters=True, dialect=dialect
    )


async def fetch(
    conn: Statements, statement: sa.Executable, parameters: Mapping[str, Any] | None = None
) -> list[Any]:
    """The rows of ``statement`` as sequences of column values in its order (JSON columns
    decoded). ``statement`` must be built once (module-level, or cached), not per call: on
    :meth:`Store.applying`'s SQLite connection it is compiled once (:class:`_Plan`)."""
    if isinstance(conn, _InLoop):
        return conn.fetch(statement, parameters or {})
    result = await conn.execute(statement, parameters)
    return list(result.all())


async def run(
    conn: Statements,
    statement: sa.Executable,
    parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> None:
    """Run ``statement`` (built once, as for :func:`fetch`) for one set of parameters, or for
    each of a list of them (``executemany``), for what it changes."""
    if isinstance(conn, _InLoop):
        rows = [parameters] if isinstance(parameters, Mapping) else parameters
        if rows:
            conn.run(statement, rows)
        return
    await conn.execute(
        statement, dict(parameters) if isinstance(parameters, Mapping) else list(parameters)
    )


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """Where the read models live: a URL with its async driver, and a PostgreSQL schema."""

    url: sa.URL
    schema: str | None = None

    @property
    def is_sqlite(self) -> bool:
        return self.url.get_backend_name() == "sqlite"


def store_url(raw: str) -> StoreUrl:
    """Read ``SPADES_DATABASE_URL``: pick the async driver and take out ``?schema=``.

    >>> store_url("postgresql://postgres@127.0.0.1:5432/test?schema=t1").url.drivername
    'postgresql+asyncpg'
    >>> store_url("sqlite:///var/read_models.db").url.drivername
    'sqlite+aiosqlite'
    """
    url = make_url(raw)
    driver = _DRIVERS.get(url.drivername)
    if driver is None:
        raise ValueError(
            f"unsupported read-model database {url.drivername!r}: use postgresql://... "
            "or sqlite:///path"
        )
    schema = url.query.get("schema")
    if isinstance(schema, tuple):
        raise ValueError("give ?schema= once")
    if schema is not None:
        if driver != "postgresql+asyncpg":
            raise ValueError("?schema= is for PostgreSQL only")
        if not _SCHEMA_NAME.match(schema):
            raise ValueError(f"schema {schema!r} is not a plain lower-case SQL name")
    return StoreUrl(url.set(drivername=driver).difference_update_query(["schema"]), schema)


class Store:
    """The read-model database: an engine for reading, and writing transactions.

    Build it with :func:`open_store`; :meth:`close` when done.
    """

    def __init__(
        self, engine: AsyncEngine, schema: str | None = None, in_loop: sa.Engine | None = None
    ) -> None:
        self.engine = engine
        self.schema = schema
        self._in_loop = in_loop
        """SQLite's engine for :meth:`applying` (None on PostgreSQL, whose driver is async)."""
        self._writer = engine.execution_options(sqlite_begin="IMMEDIATE")
        # SQLite has one writer at a time. Writers of this process queue here rather than in
        # SQLite's busy handler, which sleeps in steps of up to 100 ms while it waits.
        self._turn: AbstractAsyncContextManager[object] = (
            asyncio.Lock() if engine.dialect.name == "sqlite" else contextlib.nullcontext()
        )

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def writing(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A transaction that writes: it commits on leaving, rolls back on an exception.

        On SQLite it begins with ``BEGIN IMMEDIATE`` (the write lock is taken at once, so what
        it reads cannot change under it); on PostgreSQL it is an ordinary transaction and takes
        row locks where it needs them (``SELECT ... FOR UPDATE``).
        """
        return self._write()

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        async with self._turn, self._writer.begin() as conn:
            yield conn

    def applying(self) -> AbstractAsyncContextManager[Statements]:
        """A writing transaction (as :meth:`writing`) for a projection batch: on SQLite, its
        statements run in the event loop's thread (see the module's docstring)."""
        if self._in_loop is None:
            return self.writing()
        return self._apply_in_loop(self._in_loop)

    @contextlib.asynccontextmanager
    async def _apply_in_loop(self, engine: sa.Engine) -> AsyncIterator[Statements]:
        async with self._turn:
            with engine.connect() as conn:
                statements = _InLoop(conn)
                await _begin_immediate(statements.raw)
                try:
                    yield statements
                except BaseException:
                    statements.raw.rollback()
                    raise
                try:
                    statements.raw.commit()
                except sqlite3.Error as error:
                    statements.raw.rollback()
                    raise _wrapped("COMMIT", error, conn.dialect) from error

    def reading(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection for reads."""
        return self.engine.connect()

    def reading_in_loop(self) -> sa.Connection | None:
        """On SQLite, a connection for a small read that runs in the event loop's thread (in WAL
        mode a reader never waits for the writer; see the module's docstring); None on
        PostgreSQL. It never waits for a lock either: a read it cannot make raises
        ``OperationalError`` at once, and goes through :meth:`reading` instead."""
        return None if self._in_loop is None else self._in_loop.connect()

    async def close(self) -> None:
        await self.engine.dispose()
        if self._in_loop is not None:
            self._in_loop.dispose()


def open_store(raw_url: str, *, pool_size: int = 5) -> Store:
    """Connect lazily to the read-model database at ``raw_url`` (no I/O happens here).

    Statement parameters are kept out of error messages (``hide_parameters``): they can hold a
    hand in progress, and errors end up in logs and in parked messages' reasons.
    """
    where = store_url(raw_url)
    if where.is_sqlite:
        return Store(_sqlite_engine(where.url), in_loop=_sqlite_in_loop(where.url))
    server_settings = {"application_name": "spades"}
    if where.schema is not None:
        server_settings["search_path"] = where.schema
    engine = create_async_engine(
        where.url,
        pool_size=pool_size,
        pool_pre_ping=True,
        hide_parameters=True,
        connect_args={"server_settings": server_settings},
    )
    return Store(engine, where.schema)


def _sqlite_engine(url: sa.URL) -> AsyncEngine:
    if url.database and url.database != ":memory:":
        _private_database(Path(url.database))
    engine = create_async_engine(
        url, hide_parameters=True, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    )

    @event.listens_for(engine.sync_engine, "connect")
    def configure(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy, not the driver, begins transactions (see the module docstring).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()
        dbapi_connection.run_async(_use_wal)

    @event.listens_for(engine.sync_engine, "begin")
    def begin(connection: sa.Connection) -> None:
        mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")

    return engine


def _private_database(path: Path) -> None:
    """The database file created 0600 before SQLite opens it (its ``-wal`` and ``-shm`` take
    the file's mode), in a 0700 directory; files an earlier version left readable are made
    private too. It holds the hands in progress (sealed) and the webhook endpoints."""
    private_dir(path.parent)
    private_file(path, create=True)
    for suffix in ("-wal", "-shm", "-journal"):
        private_file(path.with_name(path.name + suffix))


def _sqlite_in_loop(url: sa.URL) -> sa.Engine:
    """The engine of :meth:`Store.applying` on the same file. Its connections never wait in
    SQLite's busy handler (it would block the loop): :func:`_begin_immediate` waits instead.
    The file is in WAL mode already: the workers migrate through the other engine first."""
    engine = sa.create_engine(url.set(drivername="sqlite+pysqlite"), hide_parameters=True)

    @event.listens_for(engine, "connect")
    def configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy's BEGIN IMMEDIATE, as above
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=0")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return engine


async def _begin_immediate(raw: sqlite3.Connection) -> None:
    """Take SQLite's write lock, waiting (up to the busy timeout) without blocking the loop
    while another connection holds it; in short steps, not the busy handler's up to 100 ms.
    On sqlite3 itself, as the batch's statements (:class:`_Plan`), with SQLAlchemy's errors."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SQLITE_BUSY_TIMEOUT_MS / 1000
    pause = 0.001
    while True:
        try:
            raw.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as error:
            raw.rollback()
            if "locked" not in str(error) or loop.time() > deadline:
                raise _wrapped("BEGIN IMMEDIATE", error, sqlite.dialect()) from error
        await asyncio.sleep(pause)
        pause = min(0.01, pause * 2)


async def _use_wal(connection: Any) -> None:
    """Put the database in WAL mode (a property of the file: a no-op once it is).

    The switch needs the file to itself. Two connections switching a new file at once each hold
    a shared lock and want the exclusive one, and SQLite answers such a deadlock with "database
    is locked" at once, without its busy handler. So the switch is tried again, with short
    pauses, up to the busy timeout; by then the other connection has switched the file or let
    go of it.
    """
    deadline = asyncio.get_running_loop().time() + SQLITE_BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            cursor = await connection.execute("PRAGMA journal_mode=WAL")
            await cursor.close()
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or asyncio.get_running_loop().time() > deadline:
                raise
        await asyncio.sleep(pause)
        pause = min(0.1, pause * 2)


TRANSACTION_ROLLBACKS = frozenset({"40P01", "40001"})
"""PostgreSQL's "deadlock detected" and "could not serialize access": the transaction was rolled
back for the others running at once, and the same transaction tried again succeeds."""


def is_store_trouble(error: BaseException) -> bool:
    """Whether ``error`` is the database failing (down, locked, connection lost, a transaction
    rolled back for a deadlock with another), as opposed to a statement failing on the data it
    was given: the first is waited out, not parked."""
    if isinstance(error, sa.exc.DBAPIError) and (
        error.connection_invalidated or _sqlstate(error) in TRANSACTION_ROLLBACKS
    ):
        return True
    return isinstance(
        error, sa.exc.OperationalError | sa.exc.InterfaceError | sa.exc.TimeoutError | OSError
    )


def _sqlstate(error: sa.exc.DBAPIError) -> str | None:
    """The SQLSTATE of a driver's error (asyncpg's and psycopg's name it ``sqlstate``)."""
    code = getattr(error.orig, "sqlstate", None)
    return code if isinstance(code, str) else None


def where_in(
    table: sa.Table, column: str, values: Sequence[Any]
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """The rows of ``table`` whose ``column`` is one of ``values``: a statement built once per
    table and column, and its parameters."""
    return _where_in(table, column), {"values": list(values)}


@functools.cache
def _where_in(table: sa.Table, column: str) -> sa.Select[Any]:
    return sa.select(table).where(table.c[column].in_(sa.bindparam("values", expanding=True)))


async def upsert(
    conn: Statements,
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    keys: Sequence[str],
    add: Sequence[str] = (),
) -> None:
    """Insert ``rows``, or update the row with the same ``keys``: columns named in ``add`` are
    added to the stored value, the others replaced. One statement for all the rows."""
    if not rows:
        return
    statement = _upsert(conn.dialect.name, table, tuple(rows[0]), tuple(keys), tuple(add))
    await run(conn, statement, rows)


@functools.cache
def _upsert(
    dialect: str,
    table: sa.Table,
    columns: tuple[str, ...],
    keys: tuple[str, ...],
    add: tuple[str, ...],
) -> sa.Insert:
    """:func:`upsert`'s statement, built once: building it (``excluded`` above all) cost the
    workers more than running it."""
    statement = _insert(dialect, table)
    excluded = statement.excluded
    changes: dict[str, Any] = {}
    for column in columns:
        if column in keys:
            continue
        changes[column] = table.c[column] + excluded[column] if column in add else excluded[column]
    if changes:
        return statement.on_conflict_do_update(index_elements=list(keys), set_=changes)
    return statement.on_conflict_do_nothing(index_elements=list(keys))


async def insert_missing(
    conn: Statements,
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    keys: Sequence[str],
) -> None:
    """Insert the rows whose ``keys`` are not in the table yet; leave the others as they are."""
    if rows:
        statement = _insert(conn.dialect.name, table).on_conflict_do_nothing(
            index_elements=list(keys)
        )
        await conn.execute(statement, list(rows))


def _insert(dialect: str, table: sa.Table) -> postgresql.Insert | sqlite.Insert:
    if dialect == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)
