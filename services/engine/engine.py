"""The command handler: decide a command against a game's history, append its outcome.

For each request: read it (a malformed one gets a ``malformed`` reply), load the game (cached in
memory with its last stream sequence), answer a command id seen before with its first answer,
decide, and append the outcome as one commit with optimistic concurrency: the events of an
accepted command, or the refusal of a refused one, so that a retry gets the first answer
however late it comes. A conflict means another engine appended first: catch up from the
stream and decide again. A command is never committed twice (its id is checked against the
history and deduplicated by JetStream) and a game's versions never have a gap (each commit
starts from the version the last one reached).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
import nats.errors
import nats.js.errors

from contracts.wire import (
    COMMAND_ID,
    GAME_ID,
    MAX_COMMAND_BYTES,
    ActRequest,
    CommandReply,
    CommandRequest,
    Commit,
    CreateGameRequest,
    EventRecord,
    Refusal,
    ReplyCode,
    TakeSeatRequest,
    encode_commit,
    request_decoder,
)
from domain.commands import AnyCommand, CreateGame, TakeSeat, from_api
from domain.dealing import SeededDeal
from domain.errors import RuleViolation
from domain.events import AnyEvent, SeatTaken
from domain.game import decide
from domain.views import event_for
from services.runtime.game_cache import GameCache, LoadedGame
from services.runtime.game_stream import (
    AppendConflict,
    DuplicateCommand,
    GameStream,
    StoredCommit,
)
from services.runtime.logging import get_logger

log = get_logger("spades.engine")

MAX_ATTEMPTS = 16
"""Conflicts in a row before a command is answered ``unavailable`` (the client retries)."""

_reply_encoder = msgspec.json.Encoder()


def request_digest(request: CommandRequest) -> str:
    """SHA-256 of what a command asks, however its JSON was spelled (key order, spacing)."""
    return hashlib.sha256(_canonical.encode(request.body)).hexdigest()


_canonical = msgspec.json.Encoder(order="sorted")


def commit_time() -> str:
    """Now, as a commit records it (UTC, ISO 8601, milliseconds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _refusal(command_id: str, code: ReplyCode, detail: str) -> CommandReply:
    return CommandReply(command_id=command_id, ok=False, code=code, detail=detail)


class Refused(Exception):
    """A refusal the engine makes itself, not a rule of the game: no such game, a stale
    ``expected_version``, a command id reused with another request."""

    def __init__(self, code: ReplyCode, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code: ReplyCode = code
        self.detail = detail


class Engine:
    """Answers command requests; one per process, shared by every game."""

    def __init__(
        self,
        stream: GameStream,
        *,
        clock: Callable[[], str] = commit_time,
        seed: Callable[[], bytes] = lambda: secrets.token_bytes(32),
        cache_capacity: int = 2000,
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._seed = seed
        self.games = GameCache(stream, cache_capacity)

    async def handle(self, data: bytes) -> bytes:
        """Answer one request message. Never raises: every outcome is a reply."""
        return _reply_encoder.encode(await self.answer(data))

    async def answer(self, data: bytes) -> CommandReply:
        if len(data) > MAX_COMMAND_BYTES:
            return _refusal("", "malformed", f"a command is at most {MAX_COMMAND_BYTES} bytes")
        try:
            request = request_decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            return _refusal("", "malformed", f"not a command request: {error}")
        if not GAME_ID.match(request.game_id):
            detail = "a game id is 1 to 64 of A-Z a-z 0-9 _ -"
            return _refusal(request.command_id, "malformed", detail)
        if not COMMAND_ID.match(request.command_id):
            detail = "a command id is 1 to 128 of A-Z a-z 0-9 _ = -"
            return _refusal(request.command_id, "malformed", detail)
        seat = request.body.seat if isinstance(request.body, ActRequest) else None
        bound = log.bind(game_id=request.game_id, command_id=request.command_id, seat=seat)
        try:
            reply = await self.execute(request, request_digest(request))
        except (nats.errors.Error, nats.js.errors.Error, TimeoutError, OSError) as error:
            bound.warning("command not answered: event store unreachable", error=str(error))
            self.games.forget(request.game_id)
            return _refusal(request.command_id, "unavailable", "the event store did not answer")
        if reply.ok:
            bound.debug("command accepted", version=reply.version, events=len(reply.events))
        else:
            bound.info("command refused", code=reply.code)
        return reply

    async def execute(self, request: CommandRequest, digest: str = "") -> CommandReply:
        """Decide and commit one command (or return its first answer)."""
        game = await self.games.get(request.game_id)
        async with game.lock:
            return await self._execute(game, request, digest)

    async def _execute(
        self, game: LoadedGame, request: CommandRequest, digest: str
    ) -> CommandReply:
        first = await self._first_answer(game, request, digest)
        if first is not None:
            return first
        for _ in range(MAX_ATTEMPTS):
            refusal: Refusal | None = None
            try:
                events = self._decide(game, request)
            except (RuleViolation, Refused) as refused:
                if refused.code == "game_not_found":  # nothing to record it in
                    return _refusal(request.command_id, refused.code, refused.detail)
                events, refusal = [], Refusal(refused.code, refused.detail)
            if not events and refusal is None:  # a look at cards already seen: nothing new
                return CommandReply(command_id=request.command_id, ok=True, version=game.version)
            commit = Commit(
                game_id=game.game_id,
                version=game.version + len(events),
                command_id=request.command_id,
                time=self._clock(),
                previous=game.digest,
                request=digest,
                events=events,
                refusal=refusal,
            )
            data = encode_commit(commit)
            try:
                sequence = await self._stream.append(
                    game.game_id,
                    data,
                    expected=game.sequence,
                    command_id=f"{game.game_id}:{request.command_id}",
                )
            except (AppendConflict, DuplicateCommand):
                await self.games.catch_up(game)
                first = await self._first_answer(game, request, digest)
                if first is not None:
                    return first
                continue
            game.apply(StoredCommit(sequence, data, commit))
            return self._reply(request, commit, sequence)
        return _refusal(request.command_id, "unavailable", "the game is too busy; retry")

    def _decide(self, game: LoadedGame, request: CommandRequest) -> list[AnyEvent]:
        body = request.body
        state = game.state
        command: AnyCommand
        if isinstance(body, CreateGameRequest):
            if state is not None:
                raise Refused("conflict", f"game {game.game_id} already exists")
            command = CreateGame(
                game.game_id, body.rules, body.dealer, body.entropy, league=body.league
            )
            return decide(None, command)
        if state is None:
            raise Refused("game_not_found", f"no game {game.game_id}")
        if isinstance(body, TakeSeatRequest):
            command = TakeSeat(body.player, body.seat, body.entropy)
        else:
            if body.expected_version is not None and body.expected_version != state.version:
                detail = f"the game is at version {state.version}, not {body.expected_version}"
                raise Refused("conflict", detail)
            command = from_api(body.seat, body.action)
        return decide(state, command, deal=SeededDeal(self._seed()))

    def _reply(self, request: CommandRequest, commit: Commit, sequence: int) -> CommandReply:
        """A commit as the sender may see it: its own seat's view of the events."""
        if commit.refusal is not None:
            code: ReplyCode = msgspec.convert(commit.refusal.code, ReplyCode)
            return _refusal(request.command_id, code, commit.refusal.detail)
        reader = request.body.seat if isinstance(request.body, ActRequest) else None
        for event in commit.events:
            if isinstance(event, SeatTaken) and isinstance(request.body, TakeSeatRequest):
                reader = event.seat
        first = commit.first_version
        return CommandReply(
            command_id=request.command_id,
            ok=True,
            version=commit.version,
            sequence=sequence,
            seat=reader,
            events=[
                EventRecord(first + k, event_for(event, reader))
                for k, event in enumerate(commit.events)
            ],
        )

    async def _first_answer(
        self, game: LoadedGame, request: CommandRequest, digest: str
    ) -> CommandReply | None:
        """The answer this command id already got, if it got one."""
        answered = game.answered.get(request.command_id)
        if answered is None:
            return None
        if digest and answered.request and answered.request != digest:
            detail = "this command id was first used with another request"
            return _refusal(request.command_id, "idempotency_key_reused", detail)
        stored = await self._stream.read_one(answered.sequence)
        return self._reply(request, stored.commit, answered.sequence)
