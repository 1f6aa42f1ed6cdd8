"""The ``hands`` read model: docs/api.md's hand record of each hand, written once it is scored.

The record is made by the domain's own :class:`~domain.records.HandRecorder`, which needs every
event of the hand from its deal on. Those of the hand in progress are kept in ``hand_progress``
(in the same transactions as the position), so a worker restarted mid-hand loses nothing and
never has to read the game back from the stream. No record, and so no card, is visible before
the hand is over.

Those events are the hand's secrets (every seat's cards, the deck, the cards passed and kept;
the seed is revealed only with the score), and nothing but this model reads them: no endpoint
shows them, and what endpoints show of a hand in progress comes from the game itself. So they
are kept sealed (:mod:`services.runtime.sealing`, under the service's key, bound to the game):
a copy of the database tells nothing of a hand being played. The model refuses to save without
its key (:func:`services.projections.registry.seal_hands`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import msgspec
import sqlalchemy as sa

from contracts.wire import Commit
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    GameCreated,
    HandDealt,
    HandScored,
    TimedOut,
    TrickWon,
)
from domain.records import HandRecord, HandRecorder
from services.projections.model import PerGameModel
from services.runtime.sealing import Sealer, Unsealable
from services.store.database import Statements, fetch, upsert, where_in
from services.store.schema import hand_progress, hand_records

RECORDED = (
    HandDealt,
    CardDrawn,
    CardsDiscarded,
    CardsPassed,
    CardPlayed,
    TrickWon,
    HandScored,
    TimedOut,
    BidPlaced,
)
"""The events a hand record is made of (a bid only to tell whether the service made it after a
timeout); the others (looks, receipts) are not kept."""

_encode_event = msgspec.json.Encoder().encode
_decode_pending = msgspec.json.Decoder(list[AnyEvent]).decode


@dataclass(slots=True)
class HandProgress:
    game_id: str
    version: int
    stored: bytes = b""
    """The pending events as stored; decoded only if no recorder is at hand."""
    recorder: HandRecorder | None = None
    pending: list[AnyEvent] = field(default_factory=list)
    """The recorded events of the hand in progress, from its deal on (once decoded)."""
    records: list[HandRecord] = field(default_factory=list)
    """Records finished since the progress was loaded (rows to write)."""
    encoded: bytes = b"[]"
    """The encoding of the first ``encoded_count`` pending events: each batch encodes only the
    events it added (a JSON array is its items' encodings, comma-separated, in brackets)."""
    encoded_count: int = 0

    def __post_init__(self) -> None:
        if self.recorder is not None:
            self._encoded_as_stored()

    def _encoded_as_stored(self) -> None:
        """``pending`` holds what ``stored`` does: its encoding is ``stored`` itself."""
        if self.stored:
            self.encoded, self.encoded_count = self.stored, len(self.pending)

    def feed(self, event: AnyEvent) -> None:
        if self.recorder is None:
            self.recorder = HandRecorder()
            self.pending = _decode_pending(self.stored) if self.stored else []
            self._encoded_as_stored()
            for earlier in self.pending:
                self.recorder.feed(earlier)
        if isinstance(event, HandDealt):
            self._restart()
        self.pending.append(event)
        record = self.recorder.feed(event)
        if record is not None:
            self.records.append(record)
            self._restart()

    def _restart(self) -> None:
        self.pending = []
        self.encoded, self.encoded_count = b"[]", 0

    def pending_bytes(self) -> bytes:
        if self.recorder is None:
            return self.stored
        added = self.pending[self.encoded_count :]
        if added:
            items = b",".join(map(_encode_event, added))
            head = self.encoded[:-1] + b"," if self.encoded_count else b"["
            self.encoded, self.encoded_count = head + items + b"]", len(self.pending)
        return self.encoded


class Recorders:
    """Hand recorders kept between batches, so that a hand's earlier events are not fed again
    (and decoded again) at every batch: the replay of a long stream spends most of its time
    there otherwise.

    A recorder is taken out when its game is loaded and put back when the batch is saved, with
    the version and the pending events it was saved with. It is used only if the database holds
    exactly those: after a rolled-back batch, a rebuild or another process's writes, the hand is
    fed again from the stored events.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._kept: OrderedDict[str, tuple[int, bytes, HandRecorder, list[AnyEvent], bytes]] = (
            OrderedDict()
        )

    def take(self, game_id: str, version: int, sealed: bytes, sealer: Sealer) -> HandProgress:
        """The game's progress as ``sealed`` holds it: the recorder kept, if it was saved as
        exactly that; else the events opened, to be fed again."""
        kept = self._kept.pop(game_id, None)
        if kept is None or kept[:2] != (version, sealed):
            return HandProgress(game_id, version, open_progress(sealer, sealed, game_id))
        return HandProgress(game_id, version, kept[4], recorder=kept[2], pending=kept[3])

    def keep(self, progress: HandProgress, sealed: bytes, stored: bytes) -> None:
        """Keep the recorder of ``progress``, saved as ``sealed`` (``stored`` opened)."""
        if progress.recorder is None:
            return
        entry = (progress.version, sealed, progress.recorder, progress.pending, stored)
        self._kept[progress.game_id] = entry
        while len(self._kept) > self._capacity:
            self._kept.popitem(last=False)


def open_progress(sealer: Sealer, sealed: bytes, game_id: str) -> bytes:
    """A game's pending events as :class:`HandsModel` sealed them. A row that does not open
    but is a JSON array was written in the clear (by an earlier version, during a rolling
    upgrade): it is taken as it is, and sealed when the game is saved next."""
    try:
        return sealer.open(sealed, game_id)
    except Unsealable:
        if sealed.startswith(b"[") and sealed.endswith(b"]"):
            return sealed
        raise


class KeepsHandsSealed:
    """What a model that keeps hands in progress (their secret cards) does with them: seal them
    under the service's key, bound to the game, and keep their recorders between batches. The
    hands model and the integrity model both do; :func:`services.projections.registry.seal_hands`
    gives every such model the key, and each refuses to load or save without it."""

    sealed_column: ClassVar[sa.Column[bytes]]
    """Where the model keeps them (a row per game, with a ``game_id``)."""

    def __init__(self, sealer: Sealer | None = None) -> None:
        self.recorders = Recorders()
        self.sealer = sealer
        """Seals the hands in progress; None until the process gives it the service's key."""

    def _sealing(self) -> Sealer:
        if self.sealer is None:
            raise RuntimeError(f"{type(self).__name__} keeps hands sealed: it needs the key")
        return self.sealer

    def opened(self, game_id: str, version: int, sealed: bytes) -> HandProgress:
        """The game's hand in progress, as stored (sealed) at ``version``."""
        return self.recorders.take(game_id, version, sealed, self._sealing())

    def sealed(self, states: Iterable[HandProgress]) -> dict[str, bytes]:
        """Each game's hand in progress sealed for storing, by game; its recorder kept for the
        next batch as that (each ``version`` must be the game's as saved)."""
        seal = self._sealing().seal
        stored = {state.game_id: (state, state.pending_bytes()) for state in states}
        pending = {game_id: seal(events, game_id) for game_id, (_, events) in stored.items()}
        for game_id, (state, events) in stored.items():
            self.recorders.keep(state, pending[game_id], events)
        return pending


class HandsModel(KeepsHandsSealed, PerGameModel[HandProgress]):
    name = "hands"
    tables = (hand_records, hand_progress)
    sealed_column = hand_progress.c.pending

    async def load(self, conn: Statements, game_ids: Sequence[str]) -> dict[str, HandProgress]:
        rows = await fetch(conn, *where_in(hand_progress, "game_id", game_ids))
        return {game_id: self.opened(game_id, version, sealed) for game_id, version, sealed in rows}

    def fold(self, state: HandProgress | None, commit: Commit) -> HandProgress:
        if state is None:
            if not commit.events or not isinstance(commit.events[0], GameCreated):
                raise ValueError(f"game {commit.game_id} does not begin with game_created")
            state = HandProgress(commit.game_id, 0)
        for event in commit.events:
            if isinstance(event, RECORDED):
                state.feed(event)
        return state

    async def save(self, conn: Statements, states: dict[str, HandProgress]) -> None:
        pending = self.sealed(states.values())
        progress = [
            {"game_id": s.game_id, "version": s.version, "pending": pending[s.game_id]}
            for s in states.values()
        ]
        records = [
            {"game_id": s.game_id, "hand": record.hand, "record": record}
            for s in states.values()
            for record in s.records
        ]
        await upsert(conn, hand_progress, progress, keys=["game_id"])
        await upsert(conn, hand_records, records, keys=["game_id", "hand"])
