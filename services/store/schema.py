"""The read-model tables as they are after the last migration (see :mod:`.migrations`).

Queries and workers use these definitions; the migrations create and change the tables, and a
test checks that a migrated database has exactly these columns. Lists and small records are JSON
text (:class:`Json`): they are read and written whole, never queried into.
"""

from __future__ import annotations

from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Dialect

metadata = sa.MetaData()


class Json(sa.types.TypeDecorator[Any]):
    """JSON values kept as text, the same on SQLite and PostgreSQL (encoded by msgspec)."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else msgspec.json.encode(value).decode()

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else msgspec.json.decode(value)


# --------------------------------------------------------------------------- bookkeeping

schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("applied_at", sa.Text, nullable=False),
)

positions = sa.Table(
    "projection_positions",
    metadata,
    sa.Column("model", sa.String(32), primary_key=True),
    sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("generation", sa.Integer, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.Column("stream", sa.Text),
    sa.Column("stream_created", sa.Text),
    sa.Column("digest", sa.Text),
    sa.Column("refusal", sa.Text),
    sa.Column("rebuilding_since", sa.Text),
)
"""Per read model and partition of the game stream: the last sequence of the partition's stream
applied, and how many times the model was rebuilt; the stream that position belongs to (its
name and creation time, null until the model first follows one) and the SHA-256 of the message
at the position; why the worker refuses the stream it finds now, if it does (see
:mod:`services.runtime.stream_identity`); and, while a rebuild replays the partition, when that
rebuild began (null once the model has caught up with the stream: see
:mod:`services.projections.rebuild`)."""

parked = sa.Table(
    "parked",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("model", sa.String(32), nullable=False),
    sa.Column("partition", sa.Integer, nullable=False),
    sa.Column("sequence", sa.BigInteger, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("payload", sa.LargeBinary, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("parked_at", sa.Text, nullable=False),
    sa.UniqueConstraint("model", "partition", "sequence", name="parked_model_partition_sequence"),
)
"""Messages a model could not apply, by the partition whose stream holds them, with the reason,
until an operator replays them."""

# --------------------------------------------------------------------------- games

games = sa.Table(
    "games",
    metadata,
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
    sa.Column("platform", sa.Text),
    sa.Column("visibility", sa.String(16), nullable=False, server_default="public"),
    sa.Index("games_by_league", "league", "created_at", "game_id"),
    sa.Index("games_by_platform", "platform", "created_at", "game_id"),
    sa.Index("games_by_visibility", "visibility", "created_at", "game_id"),
)
"""One summary per game, for the game list. ``players`` is the name at each seat (or null);
``platform`` and ``visibility`` say to whom the list shows it (:mod:`domain.platforms`)."""

game_players = sa.Table(
    "game_players",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("seat", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("player", sa.Text, nullable=False),
    sa.Index("game_players_by_player", "player", "game_id"),
)
"""Who sits where: the index behind the game list's ``player`` filter."""

# --------------------------------------------------------------------------- scoreboard

scoreboards = sa.Table(
    "scoreboards",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("units", Json, nullable=False),
    sa.Column("hands", Json, nullable=False),
    sa.Column("scores", Json, nullable=False),
    sa.Column("bags", Json, nullable=False),
    sa.Column("game_over", sa.Boolean, nullable=False),
    sa.Column("winners", Json, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
)
"""docs/api.md's scoreboard, one row per game; ``hands`` is the list of per-hand results."""

# --------------------------------------------------------------------------- hands

hand_records = sa.Table(
    "hand_records",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("hand", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("record", Json, nullable=False),
)
"""docs/api.md's hand record of each scored hand."""

hand_progress = sa.Table(
    "hand_progress",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("pending", sa.LargeBinary, nullable=False),
)
"""Per game: the events of the hand in progress, from its deal on, so that its record can be
written when it is scored even across a restart. They hold the hand's secret cards and seed:
nothing in :mod:`.queries` reads this table."""

# --------------------------------------------------------------------------- players

players = sa.Table(
    "players",
    metadata,
    sa.Column("player", sa.Text, primary_key=True),
    sa.Column("games", sa.Integer, nullable=False),
    sa.Column("wins", sa.Integer, nullable=False),
    sa.Column("hands", sa.Integer, nullable=False),
    sa.Column("bids_made", sa.Integer, nullable=False),
    sa.Column("bids_set", sa.Integer, nullable=False),
    sa.Column("nils_made", sa.Integer, nullable=False),
    sa.Column("nils_failed", sa.Integer, nullable=False),
    sa.Column("bags", sa.Integer, nullable=False),
)
"""Per player name: counters over every game they sat in."""

player_games = sa.Table(
    "player_games",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("rules", Json, nullable=False),
    sa.Column("players", Json, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
)
"""What the players model needs to know of each game: its rules and who sits where."""

# --------------------------------------------------------------------------- standings

standing_games = sa.Table(
    "standing_games",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("league", sa.Text),
    sa.Column("units", Json, nullable=False),
    sa.Column("players", Json, nullable=False),
    sa.Column("ended", sa.Boolean, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("league_round", sa.Integer),
    sa.Column("league_table", sa.Integer),
    sa.Column("result", Json),
    sa.Index("standing_games_by_league", "league", "ended"),
    sa.Index("standing_games_by_place", "league", "league_round", "league_table"),
)
"""What the standings model keeps of each game: the league whose table it is (null for every
other game, of which only the version is kept), its round and table there, its units' seats and
who sits where; once it has ended, its result and the ratings its players came to it with, in
the league's order (see :mod:`services.projections.standings`)."""

league_standings = sa.Table(
    "league_standings",
    metadata,
    sa.Column("league", sa.Text, primary_key=True),
    sa.Column("player", sa.Text, primary_key=True),
    sa.Column("points", sa.BigInteger, nullable=False),
    sa.Column("wins", sa.Integer, nullable=False),
    sa.Column("games", sa.Integer, nullable=False),
    sa.Column("mu", sa.Double, nullable=False),
    sa.Column("sigma", sa.Double, nullable=False),
    sa.Column("ordinal", sa.Double, nullable=False),
    sa.Column("forfeits", sa.Integer, nullable=False, server_default="0"),
)
"""Per league and player: points, wins, games, forfeits and the openskill rating (``mu``,
``sigma``, and ``ordinal`` = ``mu - 3 sigma``), as :mod:`services.store.ratings` defines them."""

# --------------------------------------------------------------------------- integrity

integrity_games = sa.Table(
    "integrity_games",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("league", sa.Text),
    sa.Column("rules", Json),
    sa.Column("players", Json, nullable=False),
    sa.Column("pending", sa.LargeBinary),
    sa.Column("timing", Json),
)
"""What the integrity model keeps of each game: the league whose table it is (null for every
other game, of which only the version is kept), its rules and who sits where, the events of
the hand in progress from its deal on, sealed as ``hand_progress`` is (they hold the hand's
secret cards), and the decision times of that hand so far. Nothing in :mod:`.queries` reads
this table."""

integrity_hands = sa.Table(
    "integrity_hands",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("hand", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("league", sa.Text, nullable=False),
    sa.Column("facts", Json, nullable=False),
    sa.Index("integrity_hands_by_league", "league"),
)
"""Per finished hand of a league's table, what the collusion signals read of it
(:class:`services.integrity.signals.HandFacts`: who sat where, points, chances to take; no
card)."""

# --------------------------------------------------------------------------- webhooks

Serial = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
"""An auto-incremented key: 64 bits, except where SQLite's rowid alias must be ``INTEGER``."""

webhook_endpoints = sa.Table(
    "webhook_endpoints",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("platform", sa.Text, nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("events", Json, nullable=False),
    sa.Column("secret", sa.Text, nullable=False),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("disabled_at", sa.Double),
    sa.Column("disabled_reason", sa.Text),
    sa.Column("starts", Json, nullable=False),
    sa.Index("webhook_endpoints_by_platform", "platform", "created_at"),
)
"""The platforms' webhook endpoints (``platform`` is empty for the one platform of a server
without keys). ``secret`` signs every delivery; ``starts`` maps each stream (every partition of
the games, and the leagues) to its last sequence when the endpoint was registered: it hears of
what came after. Times are Unix seconds. Not a read model: nothing rebuilds it, and backups
carry it."""

webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", Serial, primary_key=True, autoincrement=True),
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
    sa.Column("claim", sa.Text),
    sa.Column("claimed_until", sa.Double),
    sa.Index("webhook_deliveries_by_chain", "status", "endpoint_id", "chain", "id"),
    sa.Index("webhook_deliveries_by_endpoint", "endpoint_id", "id"),
    sa.Index("webhook_deliveries_by_created", "created_at"),
    sa.Index("webhook_deliveries_by_due", "status", "next_try", "id"),
)
"""The outbox: one row per event and endpoint, written with the stream position that produced
it. ``chain`` (``game:<id>``, ``league:<id>``) is what deliveries keep in order per endpoint;
``body`` is sent as it is on every try; ``status`` is ``pending``, ``delivered``, ``failed``
(every try of the schedule failed) or ``skipped`` (the endpoint was disabled). A pending
delivery a webhooks process is sending holds its ``claim`` (a token of that process) until
``claimed_until`` (Unix seconds), renewed while the send is in flight: no other process sends
it meanwhile, and after it any may."""

webhook_positions = sa.Table(
    "webhook_positions",
    metadata,
    sa.Column("stream", sa.String(32), primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("stream_created", sa.Text),
    sa.Column("updated_at", sa.Text, nullable=False),
)
"""Per stream (by its name: each partition of the games, and the leagues), the last sequence the
webhooks worker turned into deliveries, and the stream it belongs to (its creation time, as
:mod:`services.runtime.stream_identity` reads it)."""

# --------------------------------------------------------------------------- watch links

watch_links = sa.Table(
    "watch_links",
    metadata,
    sa.Column("subject", sa.String(80), primary_key=True),
    sa.Column("generation", sa.Integer, nullable=False),
    sa.Column("revoked_at", sa.Double, nullable=False),
)
"""Per game or league (``subject``: ``game:<id>``, ``league:<id>``) whose watch links its
platform has revoked, the generation links are issued at now: a link of an earlier generation
is refused. No row: generation 0, nothing revoked. Not a read model: nothing rebuilds it."""

# --------------------------------------------------------------------------- the audit log

log_leaves = sa.Table(
    "log_leaves",
    metadata,
    sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("leaf_index", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("game_id", sa.Text, nullable=False),
    sa.Column("hand", sa.Integer),
    sa.Column("entry", sa.LargeBinary, nullable=False),
    sa.Index("log_leaves_by_game", "game_id", "hand"),
)
"""Each partition's log (:mod:`contracts.log_entries`): the entry of every hand's end
(``hand`` its number) and every game's end (``hand`` null), in the partition's stream order."""

log_nodes = sa.Table(
    "log_nodes",
    metadata,
    sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("level", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("hash", sa.LargeBinary, nullable=False),
)
"""The head of every complete subtree of each partition's log (level 0: the leaf hashes):
a proof or an append reads O(log n) of them, never the log."""

log_checkpoints = sa.Table(
    "log_checkpoints",
    metadata,
    sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("root", sa.LargeBinary, nullable=False),
    sa.Column("checkpoint", sa.Text, nullable=False),
    sa.Column("note", sa.Text),
    sa.Column("verifier", sa.Text),
)
"""Each partition's latest checkpoint: its ``tlog-checkpoint`` text, and the note signed by
the log's key (``verifier``, the public key as text) or null when the process had no key. Only
the latest is kept, so that the table, like the tree, is a function of the stream alone (a
replay's batches differ); a client keeps the checkpoints it was shown, and the consistency
proof from any of them is read from the tree."""

log_cosigned = sa.Table(
    "log_cosigned",
    metadata,
    sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("witness", sa.Text, primary_key=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("root", sa.LargeBinary, nullable=False),
    sa.Column("note", sa.Text, nullable=False),
    sa.Column("cosigned_at", sa.BigInteger, nullable=False),
)
"""Per partition and witness (``witness``: its verifier key as text), the latest checkpoint the
witness cosigned (C2SP ``tlog-witness``): the log's signed note with the witness's cosignature
line appended, and the time the cosignature gives (seconds). It is where the log asks the
witness for the next one from (``old``), and what a receipt's checkpoint is when there is one:
kept apart from the log's own tables, since no replay of the stream could make it again."""

log_games = sa.Table(
    "log_games",
    metadata,
    sa.Column("game_id", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("hands", sa.Integer, nullable=False),
    sa.Column("dealt", Json),
)
"""Per game: the version the log applied, the hands scored, and the deal of the hand in
progress as it was committed before the first bid (:class:`~contracts.log_entries.Dealt`),
for its leaf."""
