"""The league event store: the stream ``SPADES_LEAGUES``, one subject per league, one
:class:`LeagueCommit` per league command, with the game store's guarantees (see
:mod:`services.runtime.event_store`). A league's history is short (its creation, then a commit
a round), so it is read with direct gets."""

from __future__ import annotations

from typing import TypeAlias

from nats.js import JetStreamContext, api

from contracts.wire import (
    LEAGUE_SUBJECTS,
    LEAGUES_STREAM,
    LeagueCommit,
    league_subject,
    read_league_commit,
)
from services.runtime.event_store import (
    EventStore,
    History,
    JetStreamEventStore,
    Stored,
    history_stream_config,
)

StoredLeagueCommit: TypeAlias = Stored[LeagueCommit]
LeagueStore: TypeAlias = EventStore[LeagueCommit]
"""The leagues' histories, wherever they are kept."""

LEAGUES = History(LEAGUES_STREAM, league_subject, read_league_commit)


def leagues_stream_config(replicas: int = 1, duplicate_window_s: float = 120.0) -> api.StreamConfig:
    """The one definition of the league stream, exactly as the game stream is kept."""
    return history_stream_config(LEAGUES_STREAM, LEAGUE_SUBJECTS, replicas, duplicate_window_s)


class LeagueStream(JetStreamEventStore[LeagueCommit]):
    """Read and append the commits of leagues on JetStream."""

    def __init__(self, js: JetStreamContext) -> None:
        super().__init__(js, LEAGUES)
