"""Every read model, by name: what the workers run, a rebuild resets and queries read."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from contracts.partitions import Partitions
from services.projections.audit_log import LogModel
from services.projections.games import GamesModel
from services.projections.hands import HandsModel, KeepsHandsSealed
from services.projections.integrity import IntegrityModel
from services.projections.model import ReadModel
from services.projections.players import PlayersModel
from services.projections.scoreboard import ScoreboardModel
from services.projections.standings import StandingsModel
from services.runtime.sealing import HANDS_IN_PROGRESS, Sealer
from services.transparency.note import Signer

READ_MODELS: dict[str, ReadModel] = {
    model.name: model
    for model in (
        GamesModel(),
        ScoreboardModel(),
        HandsModel(),
        PlayersModel(),
        StandingsModel(),
        LogModel(),
        IntegrityModel(),
    )
}


def seal_hands(secret: bytes) -> None:
    """Give every model that keeps hands in progress (the hands and integrity models) the
    service's key: they keep them sealed, and refuse to load or save them before they have the
    key (a process folding games calls this once, at start)."""
    for model in READ_MODELS.values():
        if isinstance(model, KeepsHandsSealed):
            model.sealer = Sealer(secret, HANDS_IN_PROGRESS)


def opened_rows(
    table: sa.Table, rows: Iterable[Sequence[Any]], secret: bytes
) -> list[tuple[Any, ...]]:
    """``table``'s rows with the hands in progress a model keeps sealed there opened with the
    service's ``secret`` (each sealing draws its own nonce: rows compared, as a rebuild's with
    the live ones, are compared opened). Rows of any other table as they are."""
    sealed = {
        model.sealed_column.table.name: model.sealed_column.name
        for model in READ_MODELS.values()
        if isinstance(model, KeepsHandsSealed)
    }
    if table.name not in sealed:
        return [tuple(row) for row in rows]
    sealer = Sealer(secret, HANDS_IN_PROGRESS)
    names = list(table.c.keys())
    at, game = names.index(sealed[table.name]), names.index("game_id")
    return [
        tuple(
            sealer.open(value, row[game]) if index == at and value is not None else value
            for index, value in enumerate(row)
        )
        for row in rows
    ]


def _log() -> LogModel:
    model = READ_MODELS["log"]
    assert isinstance(model, LogModel)
    return model


def lay_out_log(partitions: Partitions) -> None:
    """Give the log model the stream's layout: a batch's leaves go to its games' partition."""
    _log().partitions = partitions


def sign_log(origin: str, key: Signer | None) -> None:
    """Give the log model its origin and the key that signs its checkpoints (None: unsigned)."""
    _log().origin, _log().key = origin, key


def read_models(names: Iterable[str] | None = None) -> list[ReadModel]:
    """The models named (every one when ``names`` is None); an unknown name raises
    ``KeyError``."""
    if names is None:
        return list(READ_MODELS.values())
    chosen = []
    for name in names:
        if name not in READ_MODELS:
            raise KeyError(f"no read model {name!r}; known: {', '.join(READ_MODELS)}")
        chosen.append(READ_MODELS[name])
    return chosen
