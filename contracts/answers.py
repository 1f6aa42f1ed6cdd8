"""What the API answers from its read models, as the structs the gateway encodes and the Python
client decodes: the game list and a game's scoreboard.

The table itself (its state, a seat's view, events, hand records) is the domain's own
(:mod:`domain.views`, :mod:`domain.events`, :mod:`domain.records`); these are the shapes the
service adds around it. ``contracts/openapi.json`` takes their JSON Schemas from here
(:mod:`services.gateway.openapi`), so the document, the server and the client cannot drift.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from domain.rules import PresetName
from domain.state import Status


class GameSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One game of the list."""

    game_id: str
    version: int
    status: Status
    preset: PresetName
    league: str | None
    players: Annotated[
        list[str | None], msgspec.Meta(description="The player in each seat, null when free.")
    ]
    hands_played: Annotated[int, msgspec.Meta(description="Hands scored so far.")]
    scores: list[int]
    bags: list[int]
    winners: list[int]
    created_at: Annotated[
        str, msgspec.Meta(description="When the game was created (UTC, ISO 8601).")
    ]
    updated_at: Annotated[str, msgspec.Meta(description="When its last command was accepted.")]


class GameList(msgspec.Struct, frozen=True):
    """A page of the game list, newest first."""

    games: list[GameSummary]
    next_cursor: Annotated[
        str | None, msgspec.Meta(description="Pass as `cursor` for the next page; null: done.")
    ]


class HandScore(msgspec.Struct, frozen=True):
    """One hand on the scoreboard: its points per unit, and the totals after it."""

    hand: int
    points: list[int]
    scores: list[int]
    bags: list[int]


class Scoreboard(msgspec.Struct, frozen=True, kw_only=True):
    """A game's scores hand by hand, per scoring unit (the seats of each unit in ``units``)."""

    units: list[list[int]]
    hands: list[HandScore]
    scores: list[int]
    bags: list[int]
    game_over: bool
    winners: list[int]
