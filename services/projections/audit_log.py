"""The ``log`` read model: each partition's audit log (:mod:`services.transparency`).

Every hand's end (:class:`~domain.events.HandScored`) and every game's end
(:class:`~domain.events.GameEnded`) becomes a leaf of its partition's log, in the order of the
partition's stream as the log first read it. The log is a record, not a projection
(:attr:`~services.projections.model.ReadModel.kept`): once a leaf is signed and handed out in
receipts it stays where it is. A rebuild of the read models leaves the log's tables as they
are and replays the stream into them, and every commit of a game at or below the version the
log holds for it (``log_games``) is skipped: a replay in another order (games archived, a
partition moved) adds nothing twice and reorders nothing; hands it did not hold append after.
A batch that
adds leaves ends with a checkpoint of the new size, signed by the log's key when the process has
one (``SPADES_LOG_KEY``): one at every hand's end.

An append reads only the right edge of the tree (:class:`~services.transparency.merkle.
Frontier`, a row per binary digit of the size) and writes the leaves and the complete subtrees
they finish: nothing in memory outlives a batch, so a rolled-back batch, a rebuild or another
process's writes leave nothing stale here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from contracts.log_entries import Dealt, GameEnd, HandEnd, LogEntry, entry_bytes
from contracts.partitions import ONE, Partitions
from domain.events import GameEnded, HandDealt, HandScored
from services.projections.model import Delivered, ReadModel, Refusals, out_of_order
from services.store.audit_log import LOG_TABLES, latest_checkpoint, nodes
from services.store.database import Statements, fetch, run, upsert, where_in
from services.store.schema import log_checkpoints, log_games, log_leaves, log_nodes
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import Frontier, frontier_nodes, leaf_hash
from services.transparency.note import Signer, signed_note

DEFAULT_ORIGIN = "spades.localhost/log"


def log_origin(origin: str, partition: int) -> str:
    """The origin of one partition's log: its checkpoints' first line, its key's name."""
    return f"{origin}/{partition}"


@dataclass(slots=True)
class GameInLog:
    version: int
    hands: int
    dealt: Dealt | None


_INSERT_LEAVES = log_leaves.insert()
_INSERT_NODES = log_nodes.insert()


class LogModel(ReadModel):
    name = "log"
    tables = LOG_TABLES
    kept = True
    """Its leaves were signed and handed out: a rebuild replays the stream into the log as it
    stands, and every commit of a game at or below the version ``log_games`` holds is skipped,
    so a replay in another order (games archived, partitions moved) adds nothing twice and
    reorders nothing."""

    def __init__(self) -> None:
        self.partitions: Partitions = ONE
        """The game stream's layout: which partition's log a batch's games belong to."""
        self.origin = DEFAULT_ORIGIN
        self.key: Signer | None = None
        """The log's key (its name is replaced by each partition's origin); None signs
        nothing, and the checkpoints are kept unsigned."""

    def signer(self, partition: int) -> Signer | None:
        if self.key is None:
            return None
        return Signer(log_origin(self.origin, partition), self.key.kind, self.key.private)

    async def apply(self, conn: Statements, batch: Sequence[Delivered]) -> Refusals:
        game_ids = sorted({delivered.commit.game_id for delivered in batch})
        rows = await fetch(conn, *where_in(log_games, "game_id", game_ids))
        games = {
            game_id: GameInLog(version, hands, None if dealt is None else _dealt(dealt))
            for game_id, version, hands, dealt in rows
        }
        changed: dict[str, GameInLog] = {}
        refusals: Refusals = {}
        entries: list[LogEntry] = []
        for delivered in batch:
            commit = delivered.commit
            game = games.get(commit.game_id)
            if commit.version <= (game.version if game is not None else 0):
                continue
            refusal = out_of_order(self.name, game.version if game is not None else 0, commit)
            if refusal is not None:
                refusals[delivered.sequence] = refusal
                continue
            if game is None:
                game = games[commit.game_id] = GameInLog(0, 0, None)
            entries += _ends(game, delivered)
            game.version = commit.version
            changed[commit.game_id] = game
        await upsert(
            conn,
            log_games,
            [
                {"game_id": game_id, "version": g.version, "hands": g.hands, "dealt": g.dealt}
                for game_id, g in changed.items()
            ],
            keys=["game_id"],
        )
        if entries:
            await self._append(conn, self.partitions.of(entries[0].game_id), entries)
        return refusals

    async def _append(self, conn: Statements, partition: int, entries: list[LogEntry]) -> None:
        head = await latest_checkpoint(conn, partition)
        size = head.size if head is not None else 0
        edge = frontier_nodes(size)
        stored = await nodes(conn, partition, edge)
        frontier = Frontier(size, [stored[node] for node in edge])
        leaves: list[dict[str, Any]] = []
        made: list[dict[str, Any]] = []
        for entry in entries:
            data = entry_bytes(entry)
            hand = entry.hand if isinstance(entry, HandEnd) else None
            leaves.append(
                {
                    "partition": partition,
                    "leaf_index": frontier.size,
                    "game_id": entry.game_id,
                    "hand": hand,
                    "entry": data,
                }
            )
            made += (
                {"partition": partition, "level": level, "position": position, "hash": hashed}
                for (level, position), hashed in frontier.append_hash(leaf_hash(data))
            )
        await run(conn, _INSERT_LEAVES, leaves)
        await run(conn, _INSERT_NODES, made)
        root = frontier.root()
        text = Checkpoint(log_origin(self.origin, partition), frontier.size, root).text()
        signer = self.signer(partition)
        note = None if signer is None else signed_note(text, signer.sign(text))
        checkpoint = {
            "partition": partition,
            "size": frontier.size,
            "root": root,
            "checkpoint": text,
            "note": note,
            "verifier": None if signer is None else signer.verifier.text(),
        }
        await upsert(conn, log_checkpoints, [checkpoint], keys=["partition"])


def _dealt(stored: Any) -> Dealt:
    return msgspec.convert(stored, Dealt)


def game_entries(delivered: Iterable[Delivered]) -> list[LogEntry]:
    """One game's log entries from its commits, in order, as the log model makes them: for a
    log rebuilt elsewhere (a test playing the operator) to say exactly what ours says."""
    game = GameInLog(0, 0, None)
    return [entry for each in delivered for entry in _ends(game, each)]


def _ends(game: GameInLog, delivered: Delivered) -> list[LogEntry]:
    """The log entries of one commit's events, the game's deal kept as it goes."""
    commit = delivered.commit
    ends: list[LogEntry] = []
    for event in commit.events:
        if isinstance(event, HandDealt):
            game.dealt = Dealt(
                hand=event.hand,
                version=commit.version,
                chain=delivered.chain,
                commitment=event.commitment,
            )
        elif isinstance(event, HandScored):
            game.hands += 1
            dealt = game.dealt if game.dealt is not None and game.dealt.hand == event.hand else None
            ends.append(
                HandEnd(
                    game_id=commit.game_id,
                    hand=event.hand,
                    version=commit.version,
                    chain=delivered.chain,
                    dealt_version=None if dealt is None else dealt.version,
                    dealt_chain=None if dealt is None else dealt.chain,
                    commitment=None if dealt is None else dealt.commitment,
                    seed=event.seed,
                    bids=event.bids,
                    tricks=event.tricks,
                    points=event.points,
                    scores=event.scores,
                    bags=event.bags,
                )
            )
        elif isinstance(event, GameEnded):
            ends.append(
                GameEnd(
                    game_id=commit.game_id,
                    hands=game.hands,
                    version=commit.version,
                    chain=delivered.chain,
                    winners=event.winners,
                    scores=event.scores,
                    forfeited=event.forfeited,
                )
            )
    return ends
