"""Schema migrations, applied in order on start: ``schema_version`` records each one applied.

A step is plain SQLAlchemy DDL run in its own transaction (DDL is transactional on SQLite and
PostgreSQL alike, so a step is applied whole or not at all). Steps are history: once released a
step is never edited, and a change to a table is a new step at the end of :data:`MIGRATIONS`,
with :mod:`.schema` updated to the shape it leaves. That is why step 1 spells out its tables
rather than using :mod:`.schema`'s: a fresh database must go through the same steps as an old
one.

A step that seals needs the service's key and waits for a process that has it; a step marked
``apart`` does not wait for it (see :class:`Migration`), so the versions applied may have a gap
until a process with the key comes: a step is looked up by its own version, never by the
highest one applied.

Two processes may start at once. Each step takes a lock first (``pg_advisory_xact_lock`` on
PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), then reads the version, so the second process finds
the step done and skips it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from services.runtime.sealing import (
    HANDS_IN_PROGRESS,
    WEBHOOK_SECRETS,
    Sealer,
    Unsealable,
    is_sealed,
)
from services.store.database import Store
from services.store.schema import Json, schema_version

MIGRATION_LOCK = 0x5350_4144_4553
"""The PostgreSQL advisory lock key that serializes migrations (``SPADES`` in hex)."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    apply: Callable[[sa.Connection], None]
    sealing: Callable[[sa.Connection, bytes], None] | None = None
    """For a step that seals what is stored (``apply`` then does nothing): it needs the
    service's secret key, and waits for a process that has it (see :func:`migrate`)."""
    apart: bool = False
    """A step that needs no key and nothing a sealing step does: it is applied even while an
    earlier sealing step waits for the key, so that every process that migrates (a projection
    worker started without the key, a command run apart from the services) finds its tables.
    Steps after it keep their order: the sealing step is applied later, by the first process
    with the key, and the steps between wait with it."""


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer version of the service than this one."""


def _read_models_v1(connection: sa.Connection) -> None:
    tables = sa.MetaData()
    sa.Table(
        "projection_positions",
        tables,
        sa.Column("model", sa.String(32), primary_key=True),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
    )
    sa.Table(
        "parked",
        tables,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("model", sa.String(32), nullable=False),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("parked_at", sa.Text, nullable=False),
        sa.UniqueConstraint("model", "sequence", name="parked_model_sequence"),
    )
    sa.Table(
        "games",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("preset", sa.String(32), nullable=False),
        sa.Column("league", sa.Text),
        sa.Column("players", Json, nullable=False),
        sa.Column("scores", Json, nullable=False),
        sa.Column("bags", Json, nullable=False),
        sa.Column("winners", Json, nullable=False),
        sa.Column("hands_played", sa.Integer, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.Index("games_by_created", "created_at", "game_id"),
        sa.Index("games_by_status", "status", "created_at", "game_id"),
        sa.Index("games_by_league", "league", "created_at", "game_id"),
    )
    sa.Table(
        "game_players",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("seat", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("player", sa.Text, nullable=False),
        sa.Index("game_players_by_player", "player", "game_id"),
    )
    sa.Table(
        "scoreboards",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("units", Json, nullable=False),
        sa.Column("hands", Json, nullable=False),
        sa.Column("scores", Json, nullable=False),
        sa.Column("bags", Json, nullable=False),
        sa.Column("game_over", sa.Boolean, nullable=False),
        sa.Column("winners", Json, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
    )
    sa.Table(
        "hand_records",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("hand", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("record", Json, nullable=False),
    )
    sa.Table(
        "hand_progress",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("pending", sa.LargeBinary, nullable=False),
    )
    sa.Table(
        "players",
        tables,
        sa.Column("player", sa.Text, primary_key=True),
        *(
            sa.Column(counter, sa.Integer, nullable=False)
            for counter in (
                "games",
                "wins",
                "hands",
                "bids_made",
                "bids_set",
                "nils_made",
                "nils_failed",
                "bags",
            )
        ),
    )
    sa.Table(
        "player_games",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("rules", Json, nullable=False),
        sa.Column("players", Json, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
    )
    tables.create_all(connection)


def _league_standings_v2(connection: sa.Connection) -> None:
    tables = sa.MetaData()
    sa.Table(
        "standing_games",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("league", sa.Text),
        sa.Column("units", Json, nullable=False),
        sa.Column("players", Json, nullable=False),
        sa.Column("ended", sa.Boolean, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Index("standing_games_by_league", "league", "ended"),
    )
    sa.Table(
        "league_standings",
        tables,
        sa.Column("league", sa.Text, primary_key=True),
        sa.Column("player", sa.Text, primary_key=True),
        sa.Column("points", sa.BigInteger, nullable=False),
        sa.Column("wins", sa.Integer, nullable=False),
        sa.Column("games", sa.Integer, nullable=False),
        sa.Column("mu", sa.Double, nullable=False),
        sa.Column("sigma", sa.Double, nullable=False),
        sa.Column("ordinal", sa.Double, nullable=False),
    )
    tables.create_all(connection)


def _stream_identity_v3(connection: sa.Connection) -> None:
    # Null in the rows already there: those positions were stored before the stream was
    # recorded, and the workers adopt the stream they find if the positions fit in it.
    for column in ("stream", "stream_created", "digest", "refusal"):
        connection.execute(sa.text(f"ALTER TABLE projection_positions ADD COLUMN {column} TEXT"))


def _game_owners_v4(connection: sa.Connection) -> None:
    # SQLAlchemy's core has no ADD COLUMN; this spelling is the same on SQLite and PostgreSQL.
    # A game listed before platforms existed has none, and was listed to everyone: public.
    connection.execute(sa.text("ALTER TABLE games ADD COLUMN platform TEXT"))
    connection.execute(
        sa.text("ALTER TABLE games ADD COLUMN visibility VARCHAR(16) NOT NULL DEFAULT 'public'")
    )
    games = sa.Table(
        "games",
        sa.MetaData(),
        sa.Column("game_id", sa.Text),
        sa.Column("created_at", sa.Text),
        sa.Column("platform", sa.Text),
        sa.Column("visibility", sa.String(16)),
    )
    for name, column in (("games_by_platform", "platform"), ("games_by_visibility", "visibility")):
        sa.Index(name, games.c[column], games.c.created_at, games.c.game_id).create(connection)


def _webhooks_v5(connection: sa.Connection) -> None:
    tables = sa.MetaData()
    serial = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    sa.Table(
        "webhook_endpoints",
        tables,
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("platform", sa.Text, nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("events", Json, nullable=False),
        sa.Column("secret", sa.Text, nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("games_after", sa.BigInteger, nullable=False),
        sa.Column("leagues_after", sa.BigInteger, nullable=False),
        sa.Column("disabled_at", sa.Double),
        sa.Column("disabled_reason", sa.Text),
        sa.Index("webhook_endpoints_by_platform", "platform", "created_at"),
    )
    sa.Table(
        "webhook_deliveries",
        tables,
        sa.Column("id", serial, primary_key=True, autoincrement=True),
        sa.Column("endpoint_id", sa.String(40), nullable=False),
        sa.Column("message_id", sa.String(40), nullable=False),
        sa.Column("event_type", sa.String(32), nullable=False),
        sa.Column("chain", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_status", sa.Integer),
        sa.Column("last_error", sa.Text),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("next_try", sa.Double),
        sa.Column("last_attempt_at", sa.Double),
        sa.Index("webhook_deliveries_by_chain", "status", "endpoint_id", "chain", "id"),
        sa.Index("webhook_deliveries_by_endpoint", "endpoint_id", "id"),
        sa.Index("webhook_deliveries_by_created", "created_at"),
    )
    sa.Table(
        "webhook_positions",
        tables,
        sa.Column("stream", sa.String(32), primary_key=True),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("stream_created", sa.Text),
        sa.Column("updated_at", sa.Text, nullable=False),
    )
    tables.create_all(connection)


def _standing_forfeits_v6(connection: sa.Connection) -> None:
    # No game could be forfeited before clocks: every row there counts none.
    connection.execute(
        sa.text("ALTER TABLE league_standings ADD COLUMN forfeits INTEGER NOT NULL DEFAULT 0")
    )


def _partitions_v7(connection: sa.Connection) -> None:
    _positions_per_partition(connection)
    _parked_per_partition(connection)
    _standings_in_league_order(connection)


def _positions_per_partition(connection: sa.Connection) -> None:
    # A primary key cannot be changed in place on SQLite: the table is made again, under
    # another name, filled, and renamed. Every position stored so far is partition 0's: an
    # earlier version knew one stream, the one a deployment of one partition keeps.
    tables = sa.MetaData()
    sa.Table(
        "projection_positions_v7",
        tables,
        sa.Column("model", sa.String(32), primary_key=True),
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.Column("stream", sa.Text),
        sa.Column("stream_created", sa.Text),
        sa.Column("digest", sa.Text),
        sa.Column("refusal", sa.Text),
    )
    tables.create_all(connection)
    columns = "model, position, generation, updated_at, stream, stream_created, digest, refusal"
    connection.execute(
        sa.text(
            f"INSERT INTO projection_positions_v7 ({columns}, partition) "
            f"SELECT {columns}, 0 FROM projection_positions"
        )
    )
    _replace(connection, "projection_positions")


def _parked_per_partition(connection: sa.Connection) -> None:
    tables = sa.MetaData()
    sa.Table(
        "parked_v7",
        tables,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("model", sa.String(32), nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("parked_at", sa.Text, nullable=False),
        sa.UniqueConstraint(
            "model", "partition", "sequence", name="parked_model_partition_sequence"
        ),
    )
    tables.create_all(connection)
    # New ids, in the old order: nothing refers to them, and copied ids would leave
    # PostgreSQL's sequence of the new table behind them.
    columns = "model, sequence, subject, reason, payload, attempts, parked_at"
    connection.execute(
        sa.text(
            f"INSERT INTO parked_v7 ({columns}, partition) "
            f"SELECT {columns}, 0 FROM parked ORDER BY id"
        )
    )
    _replace(connection, "parked", sequence="parked_id_seq")


def _replace(connection: sa.Connection, table: str, sequence: str | None = None) -> None:
    """Drop ``table`` and give its name to ``<table>_v7`` (and on PostgreSQL the names of its
    primary key and sequence, as a table made under that name has them)."""
    connection.execute(sa.text(f"DROP TABLE {table}"))
    connection.execute(sa.text(f"ALTER TABLE {table}_v7 RENAME TO {table}"))
    if connection.dialect.name == "postgresql":
        connection.execute(sa.text(f"ALTER INDEX {table}_v7_pkey RENAME TO {table}_pkey"))
        if sequence is not None:
            connection.execute(sa.text(f"ALTER SEQUENCE {table}_v7_id_seq RENAME TO {sequence}"))


def _standings_in_league_order(connection: sa.Connection) -> None:
    # The standings now rate a league's games in the league's order (round, then table), each
    # game keeping its result and the ratings its players came with, so that a game applied
    # late changes what it changes: no other order gives the same numbers. What an earlier
    # version stored holds neither, so the standings model alone replays the stream, from a
    # new generation (as `spades projections rebuild standings` does); the others keep theirs.
    for column in ("league_round INTEGER", "league_table INTEGER", "result TEXT"):
        connection.execute(sa.text(f"ALTER TABLE standing_games ADD COLUMN {column}"))
    games = sa.Table(
        "standing_games",
        sa.MetaData(),
        sa.Column("league", sa.Text),
        sa.Column("league_round", sa.Integer),
        sa.Column("league_table", sa.Integer),
    )
    sa.Index(
        "standing_games_by_place", games.c.league, games.c.league_round, games.c.league_table
    ).create(connection)
    connection.execute(sa.text("DELETE FROM standing_games"))
    connection.execute(sa.text("DELETE FROM league_standings"))
    connection.execute(sa.text("DELETE FROM parked WHERE model = 'standings'"))
    connection.execute(
        sa.text(
            "UPDATE projection_positions SET position = 0, generation = generation + 1, "
            "stream = NULL, stream_created = NULL, digest = NULL, refusal = NULL "
            "WHERE model = 'standings'"
        )
    )


def _webhooks_per_stream_v8(connection: sa.Connection) -> None:
    # An endpoint's starting point per stream, named as the stream is (the games may be in
    # several partitions now): an earlier deployment had one games stream, SPADES_GAMES, and
    # the leagues', SPADES_LEAGUES, so its endpoints start there where they started before.
    connection.execute(
        sa.text("ALTER TABLE webhook_endpoints ADD COLUMN starts TEXT NOT NULL DEFAULT '{}'")
    )
    endpoints = sa.table(
        "webhook_endpoints",
        sa.column("id", sa.String),
        sa.column("games_after", sa.BigInteger),
        sa.column("leagues_after", sa.BigInteger),
        sa.column("starts", Json),
    )
    for row in connection.execute(sa.select(endpoints)).all():
        starts = {"SPADES_GAMES": row.games_after, "SPADES_LEAGUES": row.leagues_after}
        connection.execute(endpoints.update().where(endpoints.c.id == row.id).values(starts=starts))
    for column in ("games_after", "leagues_after"):
        connection.execute(sa.text(f"ALTER TABLE webhook_endpoints DROP COLUMN {column}"))
    # The worker's positions, keyed by their stream's name as well.
    for old, new in (("games", "SPADES_GAMES"), ("leagues", "SPADES_LEAGUES")):
        connection.execute(
            sa.text("UPDATE webhook_positions SET stream = :new WHERE stream = :old"),
            {"old": old, "new": new},
        )
    # Claims: the process sending a delivery, until when (renewed while it sends).
    connection.execute(sa.text("ALTER TABLE webhook_deliveries ADD COLUMN claim TEXT"))
    connection.execute(
        sa.text("ALTER TABLE webhook_deliveries ADD COLUMN claimed_until DOUBLE PRECISION")
    )
    deliveries = sa.Table(
        "webhook_deliveries",
        sa.MetaData(),
        sa.Column("id", sa.BigInteger),
        sa.Column("status", sa.String(16)),
        sa.Column("next_try", sa.Double),
    )
    due = (deliveries.c.status, deliveries.c.next_try, deliveries.c.id)
    sa.Index("webhook_deliveries_by_due", *due).create(connection)


def _rebuilds_under_way_v9(connection: sa.Connection) -> None:
    # Null in every row: no rebuild begun before this version is told apart from a lag.
    connection.execute(sa.text("ALTER TABLE projection_positions ADD COLUMN rebuilding_since TEXT"))


def _watch_links_v11(connection: sa.Connection) -> None:
    tables = sa.MetaData()
    sa.Table(
        "watch_links",
        tables,
        sa.Column("subject", sa.String(80), primary_key=True),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("revoked_at", sa.Double, nullable=False),
    )
    tables.create_all(connection)


def _integrity_v13(connection: sa.Connection) -> None:
    tables = sa.MetaData()
    sa.Table(
        "integrity_games",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("league", sa.Text),
        sa.Column("rules", Json),
        sa.Column("players", Json, nullable=False),
        sa.Column("pending", sa.LargeBinary),
        sa.Column("timing", Json),
    )
    sa.Table(
        "integrity_hands",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("hand", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("league", sa.Text, nullable=False),
        sa.Column("facts", Json, nullable=False),
        sa.Index("integrity_hands_by_league", "league"),
    )
    tables.create_all(connection)


def _log_cosigned_v14(connection: sa.Connection) -> None:
    # Empty at first: a process with witnesses configured offers each its latest checkpoint.
    tables = sa.MetaData()
    sa.Table(
        "log_cosigned",
        tables,
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("witness", sa.Text, primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("root", sa.LargeBinary, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("cosigned_at", sa.BigInteger, nullable=False),
    )
    tables.create_all(connection)


def _nothing(_connection: sa.Connection) -> None:
    """A step whose work is its ``sealing``."""


def _sealed_webhook_secrets_v10(connection: sa.Connection, secret: bytes) -> None:
    # Every endpoint's secret sealed where it is kept (its row), as the gateway now stores it.
    sealer = Sealer(secret, WEBHOOK_SECRETS)
    endpoints = sa.table("webhook_endpoints", sa.column("id"), sa.column("secret"))
    rows = connection.execute(sa.select(endpoints.c.id, endpoints.c.secret)).all()
    for endpoint_id, stored in rows:
        if not is_sealed(stored):
            connection.execute(
                endpoints.update()
                .where(endpoints.c.id == endpoint_id)
                .values(secret=sealer.seal_text(stored, endpoint_id))
            )
    # And every hand in progress, as the hands model now keeps them (bound to the game).
    hands = Sealer(secret, HANDS_IN_PROGRESS)
    progress = sa.table("hand_progress", sa.column("game_id"), sa.column("pending"))
    for game_id, pending in connection.execute(
        sa.select(progress.c.game_id, progress.c.pending)
    ).all():
        try:
            hands.open(pending, game_id)
        except Unsealable:
            connection.execute(
                progress.update()
                .where(progress.c.game_id == game_id)
                .values(pending=hands.seal(pending, game_id))
            )


def _audit_log_v12(connection: sa.Connection) -> None:
    # Empty at first: the log model replays every partition's stream from its start (it has
    # no position yet), so every game already played gets its leaves, in stream order.
    tables = sa.MetaData()
    sa.Table(
        "log_leaves",
        tables,
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("leaf_index", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("game_id", sa.Text, nullable=False),
        sa.Column("hand", sa.Integer),
        sa.Column("entry", sa.LargeBinary, nullable=False),
        sa.Index("log_leaves_by_game", "game_id", "hand"),
    )
    sa.Table(
        "log_nodes",
        tables,
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("level", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("hash", sa.LargeBinary, nullable=False),
    )
    sa.Table(
        "log_checkpoints",
        tables,
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("root", sa.LargeBinary, nullable=False),
        sa.Column("checkpoint", sa.Text, nullable=False),
        sa.Column("note", sa.Text),
        sa.Column("verifier", sa.Text),
    )
    sa.Table(
        "log_games",
        tables,
        sa.Column("game_id", sa.Text, primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("hands", sa.Integer, nullable=False),
        sa.Column("dealt", Json),
    )
    tables.create_all(connection)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1, "read models: games, scoreboards, hands, players; positions, parked", _read_models_v1
    ),
    Migration(2, "read model: league standings", _league_standings_v2),
    Migration(3, "positions: the stream they belong to, the message at each", _stream_identity_v3),
    Migration(4, "game list: each game's platform and visibility", _game_owners_v4),
    Migration(5, "webhooks: endpoints, the outbox of deliveries, positions", _webhooks_v5),
    Migration(6, "league standings: each player's forfeits", _standing_forfeits_v6),
    Migration(
        7,
        "positions and parked messages per partition; standings in the league's order",
        _partitions_v7,
    ),
    Migration(
        8,
        "webhooks: endpoints' starting points and positions per stream; deliveries claimed",
        _webhooks_per_stream_v8,
    ),
    Migration(9, "positions: a rebuild under way, since when", _rebuilds_under_way_v9),
    Migration(
        10,
        "webhook endpoints' secrets and hands in progress sealed with the service's key",
        _nothing,
        _sealed_webhook_secrets_v10,
    ),
    Migration(11, "watch links: each game's and league's revocations", _watch_links_v11),
    Migration(
        12,
        "the audit log: leaves, tree nodes and checkpoints per partition",
        _audit_log_v12,
        apart=True,
    ),
    Migration(
        13,
        "read model: integrity, the facts of each league hand",
        _integrity_v13,
        apart=True,
    ),
    Migration(
        14,
        "the audit log: each witness's latest cosigned checkpoint per partition",
        _log_cosigned_v14,
        apart=True,
    ),
)
"""Every step, oldest first; versions are 1, 2, 3, ... without gaps."""

LATEST = MIGRATIONS[-1].version


async def migrate(store: Store, up_to: int = LATEST, *, secret: bytes | None = None) -> int:
    """Bring the database to :data:`LATEST` (or only to ``up_to``: a test of an upgrade
    makes the database an earlier version left); return the version it was at before (the
    last step applied with none missing before it).

    A step that seals (``Migration.sealing``) needs the service's ``secret``: without it (a
    projection worker or a command run apart from the services) that step and the ones after
    it wait for the first service that starts with its key, all but those marked ``apart``
    (the audit log's tables), which are applied now."""
    async with store.writing() as conn:
        await _serialize(store, conn)
        if store.schema is not None:
            await conn.execute(sa.schema.CreateSchema(store.schema, if_not_exists=True))
        await conn.run_sync(schema_version.create, checkfirst=True)
        applied = await _versions(conn)
    if max(applied, default=0) > LATEST:
        raise SchemaTooNew(
            f"the read-model database is at schema {max(applied)}; this version knows up to"
            f" {LATEST}"
        )
    waiting = False
    for migration in MIGRATIONS[:up_to]:
        if waiting and not migration.apart:
            continue
        async with store.writing() as conn:
            await _serialize(store, conn)
            if migration.version in await _versions(conn):
                continue
            if migration.sealing is not None:
                if secret is None:
                    waiting = True
                    continue
                await conn.run_sync(migration.sealing, secret)
            await conn.run_sync(migration.apply)
            await conn.execute(
                schema_version.insert().values(
                    version=migration.version,
                    description=migration.description,
                    applied_at=datetime.now(UTC).isoformat(timespec="seconds"),
                )
            )
    return _whole(applied)


async def _serialize(store: Store, conn: AsyncConnection) -> None:
    # On SQLite the transaction began IMMEDIATE and already holds the write lock.
    if store.is_postgres:
        await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATION_LOCK)))


async def _versions(conn: AsyncConnection) -> set[int]:
    return set((await conn.execute(sa.select(schema_version.c.version))).scalars().all())


def _whole(applied: set[int]) -> int:
    """The version a database is at: the last of the steps applied without a gap before it
    (a step ``apart`` applied while a sealing step waits does not count yet)."""
    version = 0
    while version + 1 in applied:
        version += 1
    return version
