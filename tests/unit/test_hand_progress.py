"""The hands model's progress rows: what a batch stores of the hand in progress is the encoding
of its pending events (sealed), whether the batch encodes them all or only those it added."""

from __future__ import annotations

import random

import msgspec
import pytest

from benchmarks.projections import play_game
from domain.events import AnyEvent
from services.projections.hands import HandProgress, HandsModel
from services.runtime.sealing import HANDS_IN_PROGRESS, Sealer

_encode = msgspec.json.Encoder().encode


@pytest.mark.parametrize("kept", [True, False], ids=["recorder kept", "progress decoded"])
@pytest.mark.parametrize("preset", ["partnership", "cutthroat", "jokers-54"])
def test_the_stored_progress_is_the_encoding_of_the_pending_events(preset: str, kept: bool) -> None:
    rng = random.Random(7)
    log = play_game(rng, "g1", preset=preset, max_hands=2)
    sealer = Sealer(b"the service's key", HANDS_IN_PROGRESS)
    model = HandsModel(sealer)
    stored: HandProgress | None = None
    sealed = b""
    version = 0
    at = 0
    records = 0
    while at < len(log.commits):
        batch = log.commits[at : at + rng.randint(1, 4)]
        at += len(batch)
        state = None if stored is None else _loaded(model, stored, sealed, version, kept)
        for commit in batch:
            state = model.fold(state, commit)
        assert state is not None
        saved = state.pending_bytes()
        sealed = sealer.seal(saved, state.game_id)
        assert not saved or saved not in sealed
        if state.recorder is not None:
            assert saved == _encode(state.pending)
            assert msgspec.json.decode(saved, type=list[AnyEvent]) == state.pending
            model.recorders.keep(state, sealed, saved)
        records += len(state.records)
        version = batch[-1].version
        stored = HandProgress(state.game_id, version, saved)
    assert records == 2


def _loaded(
    model: HandsModel, stored: HandProgress, sealed: bytes, version: int, kept: bool
) -> HandProgress:
    if kept:
        assert model.sealer is not None
        loaded = model.recorders.take(stored.game_id, version, sealed, model.sealer)
        assert loaded.stored == stored.stored
        return loaded
    return HandProgress(stored.game_id, version, stored.stored)
