"""Commands from HTTP to the engines: idempotency keys, requests in flight, replies as problems.

An ``Idempotency-Key`` becomes the command id, keyed with the service's secret and derived from
the caller's scope and what the request acts on: the platform (creating a game or a league,
taking a seat, re-issuing a token, starting a round), or the seat and its token's issue (an
action). A retry from the same caller reaches the engine under the same id and gets the first
answer (the engine keeps every command id in the history); the same key from another caller is
another command, which can never get the first caller's answer. An anonymous caller (open
seating, or a server without platform keys) has nothing but the key to tell it apart, so its
key for taking a seat must be a secret: :data:`MIN_ANONYMOUS_SEAT_KEY` characters at least.
A game or league created with a key also gets its id from the key, the same way, so a retry
reaches the same one and two platforms never share one. While the first request with a key is
still being answered in this process, a second one is refused with ``conflict`` rather than
sent again.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar

from prometheus_client import Counter

from contracts.wire import CommandReply, LeagueCommandReply, LeagueRequestBody, RequestBody
from domain.platforms import Visibility
from services.gateway.problems import ProblemError
from services.runtime.engine_client import EngineClient, EngineUnavailable, new_command_id
from services.runtime.logging import get_logger

MAX_IDEMPOTENCY_KEY = 255
MIN_ANONYMOUS_SEAT_KEY = 32
"""An anonymous caller's seat-taking key is all that ties a retry to it: long enough to be a
secret (a UUID is 36)."""

if TYPE_CHECKING:
    from services.gateway.deps import Gateway

log = get_logger("spades.gateway")


class Reply(Protocol):
    """An engine's answer, of a game or a league command."""

    @property
    def ok(self) -> bool: ...
    @property
    def code(self) -> str | None: ...
    @property
    def detail(self) -> str: ...


R = TypeVar("R", bound=Reply)
S = TypeVar("S")


def keyed_command_id(secret: bytes, idempotency_key: str | None, *scope: str | int | None) -> str:
    """A command id derived from its key within ``scope`` (the caller and what it acts on),
    keyed with the service's secret; fresh when there is no key."""
    if idempotency_key is None:
        return new_command_id()
    parts = ["" if part is None else str(part) for part in scope]
    material = "\x00".join([*parts, idempotency_key]).encode()
    return "k" + hmac.new(secret, material, hashlib.sha256).hexdigest()


def command_id_for(
    secret: bytes, game_id: str, seat: int, issue: int, idempotency_key: str | None
) -> str:
    """The command id of an action: the seat's, at its token's issue."""
    return keyed_command_id(secret, idempotency_key, "act", game_id, seat, issue)


def league_command_id(
    secret: bytes, league_id: str, platform: str | None, idempotency_key: str | None
) -> str:
    """The command id of a league command, the platform's."""
    return keyed_command_id(secret, idempotency_key, "league", league_id, platform)


def anonymous_seat_key(idempotency_key: str | None) -> None:
    """Refuse an anonymous seat-taking key too short to be a secret."""
    if idempotency_key is not None and len(idempotency_key) < MIN_ANONYMOUS_SEAT_KEY:
        raise ProblemError(
            "malformed",
            f"without a platform key, an Idempotency-Key for taking a seat is at least "
            f"{MIN_ANONYMOUS_SEAT_KEY} characters (a UUID): it is all that makes a retry yours",
        )


def created_id(kind: str, secret: bytes, platform: str | None, idempotency_key: str | None) -> str:
    """The id of a new game or league: fresh, or the same for every request of one platform
    with one key (and nothing an onlooker could trace back to the platform's key)."""
    if idempotency_key is None:
        return secrets.token_hex(8)
    material = f"{kind}\x00{platform or ''}\x00{idempotency_key}".encode()
    return hmac.new(secret, material, hashlib.sha256).hexdigest()[:16]


class InFlight:
    """Command ids being answered in this process right now."""

    def __init__(self) -> None:
        self._ids: set[str] = set()

    @contextmanager
    def hold(self, command_id: str) -> Iterator[None]:
        if command_id in self._ids:
            raise ProblemError(
                "conflict", "a request with this Idempotency-Key is still being processed"
            )
        self._ids.add(command_id)
        try:
            yield
        finally:
            self._ids.discard(command_id)

    def __len__(self) -> int:
        return len(self._ids)


class Commands:
    """Sends commands to the engines; a refusal or silence comes back as a ProblemError."""

    def __init__(self, engine: EngineClient, timeouts: Counter) -> None:
        self._engine = engine
        self._timeouts = timeouts

    async def send(
        self, game_id: str, body: RequestBody, command_id: str | None = None
    ) -> CommandReply:
        """The engine's acceptance of one command."""
        command_id = command_id or new_command_id()
        sent = self._engine.send(game_id, body, command_id)
        return self._accepted(await self._ask(sent, command_id))

    async def send_league(
        self, league_id: str, body: LeagueRequestBody, command_id: str | None = None
    ) -> LeagueCommandReply:
        """The engine's acceptance of one league command."""
        command_id = command_id or new_command_id()
        sent = self._engine.send_league(league_id, body, command_id)
        return self._accepted(await self._ask(sent, command_id))

    async def _ask(self, sent: Awaitable[R], command_id: str) -> R:
        try:
            return await sent
        except EngineUnavailable as silence:
            raise self._silence(command_id, silence) from None

    @staticmethod
    def _accepted(reply: R) -> R:
        if not reply.ok:
            raise ProblemError(reply.code or "unavailable", reply.detail)
        return reply

    def _silence(self, command_id: str, silence: EngineUnavailable) -> ProblemError:
        self._timeouts.inc()
        log.warning("no engine answered", command_id=command_id, error=str(silence))
        return ProblemError("unavailable", "no engine answered in time; retry")


def default_visibility(services: Gateway) -> Visibility:
    """What a new game or league is when its creator does not say: private on a server with
    platform keys, public on one without."""
    return "private" if services.platform_keys.required else "public"
