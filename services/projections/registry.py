"""Every read model, by name: what the workers run, a rebuild resets and queries read."""

from __future__ import annotations

from collections.abc import Iterable

from contracts.partitions import Partitions
from services.projections.audit_log import LogModel
from services.projections.games import GamesModel
from services.projections.hands import HandsModel
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
    )
}


def seal_hands(secret: bytes) -> None:
    """Give the hands model the service's key: it keeps the hands in progress sealed, and
    refuses to load or save them before it has the key (a process folding games calls this
    once, at start)."""
    hands = READ_MODELS["hands"]
    assert isinstance(hands, HandsModel)
    hands.sealer = Sealer(secret, HANDS_IN_PROGRESS)


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
