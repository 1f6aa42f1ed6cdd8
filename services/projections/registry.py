"""Every read model, by name: what the workers run, a rebuild resets and queries read."""

from __future__ import annotations

from collections.abc import Iterable

from services.projections.games import GamesModel
from services.projections.hands import HandsModel, KeepsHandsSealed
from services.projections.integrity import IntegrityModel
from services.projections.model import ReadModel
from services.projections.players import PlayersModel
from services.projections.scoreboard import ScoreboardModel
from services.projections.standings import StandingsModel
from services.runtime.sealing import HANDS_IN_PROGRESS, Sealer

READ_MODELS: dict[str, ReadModel] = {
    model.name: model
    for model in (
        GamesModel(),
        ScoreboardModel(),
        HandsModel(),
        PlayersModel(),
        StandingsModel(),
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
