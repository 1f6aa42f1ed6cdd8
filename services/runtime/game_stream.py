"""The game event store: the stream ``SPADES_GAMES``, one subject per game, one :class:`Commit`
per command (see :mod:`services.runtime.event_store` for the guarantees)."""

from __future__ import annotations

from typing import TypeAlias

from nats.js import JetStreamContext, api

from contracts.wire import GAME_SUBJECTS, GAMES_STREAM, Commit, game_subject, read_commit
from services.runtime.event_store import (
    AppendConflict,
    DuplicateCommand,
    EventStore,
    History,
    JetStreamEventStore,
    Stored,
    history_stream_config,
)

__all__ = [
    "GAMES",
    "AppendConflict",
    "DuplicateCommand",
    "GameStore",
    "GameStream",
    "StoredCommit",
    "games_stream_config",
]

StoredCommit: TypeAlias = Stored[Commit]
GameStore: TypeAlias = EventStore[Commit]
"""The games' histories, wherever they are kept."""

GAMES = History(GAMES_STREAM, game_subject, read_commit)


def games_stream_config(replicas: int = 1, duplicate_window_s: float = 120.0) -> api.StreamConfig:
    """The one definition of the game stream, used to create or check it at start-up."""
    return history_stream_config(GAMES_STREAM, GAME_SUBJECTS, replicas, duplicate_window_s)


class GameStream(JetStreamEventStore[Commit]):
    """Read and append the commits of games on JetStream."""

    def __init__(self, js: JetStreamContext, stream: str = GAMES_STREAM) -> None:
        super().__init__(js, GAMES, stream)
