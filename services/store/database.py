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
import re
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

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
    docstring), as :class:`Statements`."""

    __slots__ = ("_conn", "dialect")

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn
        self.dialect = conn.dialect

    async def execute(
        self, statement: sa.Executable, parameters: Any = None
    ) -> sa.CursorResult[Any]:
        return self._conn.execute(statement, parameters)


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
                await _begin_immediate(conn)
                try:
                    yield _InLoop(conn)
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()

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
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
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


async def _begin_immediate(conn: sa.Connection) -> None:
    """Take SQLite's write lock, waiting (up to the busy timeout) without blocking the loop
    while another connection holds it; in short steps, not the busy handler's up to 100 ms."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SQLITE_BUSY_TIMEOUT_MS / 1000
    pause = 0.001
    while True:
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            return
        except sa.exc.OperationalError as error:
            conn.rollback()
            if "locked" not in str(error) or loop.time() > deadline:
                raise
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


def is_store_trouble(error: BaseException) -> bool:
    """Whether ``error`` is the database failing (down, locked, connection lost), as opposed to
    a statement failing on the data it was given: the first is waited out, not parked."""
    if isinstance(error, sa.exc.DBAPIError) and error.connection_invalidated:
        return True
    return isinstance(
        error, sa.exc.OperationalError | sa.exc.InterfaceError | sa.exc.TimeoutError | OSError
    )


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
    await conn.execute(statement, list(rows))


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
