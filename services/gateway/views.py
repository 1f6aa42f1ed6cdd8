"""What leaves the gateway about a game, always through :mod:`domain.views`.

States and events become JSON-ready values here and nowhere else, so every response, page of
events and server-sent event shows a reader only what :func:`domain.views.event_for`,
:func:`~domain.views.public_view` and :func:`~domain.views.seat_view` let it see.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from contracts.wire import Commit
from domain.events import AnyEvent
from domain.state import Game
from domain.views import event_for, public_view, seat_view

Reader = int | None
"""A seat, or None for the public."""


def state_for(game: Game, reader: Reader) -> msgspec.Struct:
    """The public state, or the seat's view (with its cards and ``legal``)."""
    return public_view(game) if reader is None else seat_view(game, reader)


def versioned(commit: Commit) -> Iterator[tuple[int, AnyEvent]]:
    """A commit's events with their versions."""
    for offset, event in enumerate(commit.events):
        yield commit.first_version + offset, event


def event_records(events: Iterable[tuple[int, AnyEvent]], reader: Reader) -> list[dict[str, Any]]:
    """``{"version", "event"}`` for each event, as ``reader`` may see it."""
    return [
        {"version": version, "event": msgspec.to_builtins(event_for(event, reader))}
        for version, event in events
    ]


def event_json(event: AnyEvent, reader: Reader) -> bytes:
    return msgspec.json.encode(event_for(event, reader))


def as_json(value: Any) -> Any:
    """Structs (or lists of them) as JSON values, for a response model to check and send."""
    return msgspec.to_builtins(value)
