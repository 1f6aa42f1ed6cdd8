"""What leaves the gateway about a game, always through :mod:`domain.views`.

States and events become JSON-ready values here and nowhere else, so every response, page of
events and server-sent event shows a reader only what :func:`domain.views.event_for`,
:func:`~domain.views.public_view` and :func:`~domain.views.seat_view` let it see. The platform a
game belongs to (``GameCreated.platform``) is shown to that platform alone (``owner``): anyone
else, a public game's anonymous watchers, another platform or a seat, reads ``null`` there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
from msgspec.structs import replace
from starlette.responses import Response

from contracts.answers import EventPage
from contracts.wire import Commit, EventRecord
from domain.events import AnyEvent, GameCreated
from domain.state import Game
from domain.views import PublicState, event_for, public_view, seat_view

Reader = int | None
"""A seat, or None for the public."""


def state_for(game: Game, reader: Reader) -> PublicState:
    """The public state, or the seat's view (with its cards and ``legal``)."""
    return public_view(game) if reader is None else seat_view(game, reader)


def versioned(commit: Commit) -> Iterator[tuple[int, AnyEvent]]:
    """A commit's events with their versions."""
    for offset, event in enumerate(commit.events):
        yield commit.first_version + offset, event


def event_seen(event: AnyEvent, reader: Reader, owner: bool = False) -> AnyEvent:
    """``event`` as ``reader`` may see it; the game's platform only if the reader is it."""
    seen = event_for(event, reader)
    if not owner and isinstance(seen, GameCreated) and seen.platform is not None:
        return replace(seen, platform=None)
    return seen


def event_json(event: AnyEvent, reader: Reader, owner: bool = False) -> bytes:
    return msgspec.json.encode(event_seen(event, reader, owner))


_encoder = msgspec.json.Encoder()


class Answer(Response):
    """A JSON answer encoded once, by msgspec, straight from the domain's structs.

    A route that returns one keeps its ``response_model`` (a placeholder that names the struct's
    component) for the OpenAPI document, and FastAPI sends it as it is instead of converting the
    value to builtins, validating and serializing it again (the gateway's hot routes spent more
    on that than on the game)."""

    media_type = "application/json"

    def __init__(self, value: Any, status_code: int = 200) -> None:
        # What ``Response.__init__`` makes of a body and no headers, without its general case.
        self.status_code = status_code
        self.background = None
        self.body = body = _encoder.encode(value)
        headers = [(b"content-type", b"application/json")]
        if status_code >= 200 and status_code not in (204, 304):
            headers.insert(0, (b"content-length", b"%d" % len(body)))
        self.raw_headers = headers


def state_answer(game: Game, reader: Reader) -> Answer:
    """The public state, or the seat's view, as an answer."""
    return Answer(state_for(game, reader))


def events_answer(
    version: int, events: Iterable[tuple[int, AnyEvent]], reader: Reader, owner: bool = False
) -> Answer:
    """A page of events (:class:`contracts.answers.EventPage`) as ``reader`` may see them."""
    records = [EventRecord(number, event_seen(event, reader, owner)) for number, event in events]
    return Answer(EventPage(version, records))


def as_json(value: Any) -> Any:
    """Structs (or lists of them) as JSON values, for a response model to check and send."""
    return msgspec.to_builtins(value)
