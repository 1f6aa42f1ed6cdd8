"""What the routes ask of the engines, under HTTP: the routes read a request and write its
answer; an operation does what is asked.

Every command goes through one ritual, :func:`command`: its id bound to the log context, held
in flight in this process (a second request with the same key meanwhile is 409 ``conflict``),
then sent; the event the operation expects is found in the answer by :func:`expected`, or the
answer is 503 ``unavailable`` (safe to retry with the same key). The games' operations are in
:mod:`.games`, the leagues' (the round start's workflow among them) in :mod:`.leagues`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import structlog

from contracts.answers import SeatTaken
from services.gateway.auth import IssuedToken
from services.gateway.commands import created_id, keyed_command_id
from services.gateway.deps import Gateway
from services.gateway.problems import ProblemError

E = TypeVar("E")
S = TypeVar("S")


@contextmanager
def command(services: Gateway, command_id: str, **context: str | int) -> Iterator[None]:
    """The ritual around one request's commands: its id (and ``context``) in the log, and the
    id held in flight until the block is over."""
    structlog.contextvars.bind_contextvars(command_id=command_id, **context)
    with services.in_flight.hold(command_id):
        yield


def expected(events: Iterable[object], kind: type[E], missing: str) -> E:
    """The first event of ``kind`` among ``events``; 503 ``unavailable`` (the engine
    ``missing``) when there is none."""
    found = next((event for event in events if isinstance(event, kind)), None)
    if found is None:
        raise ProblemError("unavailable", f"the engine {missing}; retry")
    return found


@dataclass(frozen=True, slots=True)
class Seated:
    """A seat and the token that acts for it, as the platform hands it to its player."""

    seat: int
    player: str
    issue: int
    issued: IssuedToken

    def answer(self) -> SeatTaken:
        return SeatTaken(
            seat=self.seat,
            player=self.player,
            token=self.issued.token,
            expires_at=self.issued.expires_at,
        )


def seated(services: Gateway, game_id: str, seat: int, player: str, issue: int) -> Seated:
    """The seat with a new token of ``issue``."""
    return Seated(seat, player, issue, services.seat_tokens.issue(game_id, seat, issue))


async def create(
    services: Gateway,
    kind: Literal["game", "league"],
    platform: str | None,
    idempotency_key: str | None,
    send: Callable[[str, str], Awaitable[Iterable[Any]]],
    fold: Callable[[Iterable[Any]], S | None],
) -> tuple[str, S]:
    """Create a game or a league: its id and command id from the key (the same for a retry),
    the ritual around the engine's command, its events folded into what was created."""
    created = created_id(kind, services.secret, platform, idempotency_key)
    command_id = keyed_command_id(services.secret, idempotency_key, "create", created)
    with command(services, command_id, **{f"{kind}_id": created}):
        events = await send(created, command_id)
    state = fold(events)
    if state is None:
        raise ProblemError("unavailable", "the engine created nothing; retry")
    return created, state
