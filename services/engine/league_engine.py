"""The league command handler: decide a league command against the league's history and append
its outcome, exactly as :mod:`services.engine.engine` does for games.

For each request: read it (an unreadable one gets a ``malformed`` reply), load the league (kept
in memory with its last stream sequence), answer a command id seen before with its first answer,
decide, and append the outcome as one commit with optimistic concurrency; a refusal is committed
too, so a retry gets the first answer however late. A conflict means another engine appended
first: catch up from the stream and decide again.

Scheduling a round needs the results of the round before. They are read here, from the games'
own histories (the engine's game cache), never taken from the request: the league records what
was played, not what a client says was played. The seating runs in a worker thread: for a league
of hundreds of players it takes a good fraction of a second, which the games must not wait for.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Callable

import msgspec
import nats.errors
import nats.js.errors

from contracts.wire import (
    COMMAND_ID,
    MAX_LEAGUE_COMMAND_BYTES,
    CreateLeagueRequest,
    LeagueCommandReply,
    LeagueCommandRequest,
    LeagueCommit,
    LeagueReplyCode,
    Refusal,
    encode_league_commit,
    league_request_decoder,
)
from domain.errors import RuleViolation
from domain.league import (
    LEAGUE_ID,
    AnyLeagueEvent,
    CreateLeague,
    League,
    ScheduleRound,
    TableResult,
    decide,
    table_result,
)
from services.engine.engine import MAX_ATTEMPTS, commit_time
from services.engine.league_cache import LeagueCache, LoadedLeague
from services.engine.league_stream import LeagueStream, StoredLeagueCommit
from services.runtime.game_cache import GameCache
from services.runtime.game_stream import AppendConflict, DuplicateCommand
from services.runtime.logging import get_logger

log = get_logger("spades.engine")

_reply_encoder = msgspec.json.Encoder()
_canonical = msgspec.json.Encoder(order="sorted")


def league_request_digest(request: LeagueCommandRequest) -> str:
    """SHA-256 of what a league command asks, however its JSON was spelled."""
    return hashlib.sha256(_canonical.encode(request.body)).hexdigest()


class LeagueRefused(Exception):
    """A refusal the engine makes itself: no such league, or one that exists already."""

    def __init__(self, code: LeagueReplyCode, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code: LeagueReplyCode = code
        self.detail = detail


def _refusal(command_id: str, code: LeagueReplyCode, detail: str) -> LeagueCommandReply:
    return LeagueCommandReply(command_id=command_id, ok=False, code=code, detail=detail)


class LeagueEngine:
    """Answers league command requests; one per process, sharing the process's game cache."""

    def __init__(
        self,
        stream: LeagueStream,
        games: GameCache,
        *,
        clock: Callable[[], str] = commit_time,
        seed: Callable[[], bytes] = lambda: secrets.token_bytes(32),
    ) -> None:
        self._stream = stream
        self._games = games
        self._clock = clock
        self._seed = seed
        self.leagues = LeagueCache(stream)

    async def handle(self, data: bytes) -> bytes:
        """Answer one request message. Never raises: every outcome is a reply."""
        return _reply_encoder.encode(await self.answer(data))

    async def answer(self, data: bytes) -> LeagueCommandReply:
        if len(data) > MAX_LEAGUE_COMMAND_BYTES:
            detail = f"a league command is at most {MAX_LEAGUE_COMMAND_BYTES} bytes"
            return _refusal("", "malformed", detail)
        try:
            request = league_request_decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            return _refusal("", "malformed", f"not a league command request: {error}")
        if not LEAGUE_ID.match(request.league_id):
            detail = "a league id is 1 to 40 of A-Z a-z 0-9 _ -"
            return _refusal(request.command_id, "malformed", detail)
        if not COMMAND_ID.match(request.command_id):
            detail = "a command id is 1 to 128 of A-Z a-z 0-9 _ = -"
            return _refusal(request.command_id, "malformed", detail)
        bound = log.bind(league_id=request.league_id, command_id=request.command_id)
        try:
            reply = await self.execute(request, league_request_digest(request))
        except (nats.errors.Error, nats.js.errors.Error, TimeoutError, OSError) as error:
            bound.warning("league command not answered: event store unreachable", error=str(error))
            self.leagues.forget(request.league_id)
            return _refusal(request.command_id, "unavailable", "the event store did not answer")
        if reply.ok:
            bound.info("league command accepted", version=reply.version)
        else:
            bound.info("league command refused", code=reply.code)
        return reply

    async def execute(self, request: LeagueCommandRequest, digest: str = "") -> LeagueCommandReply:
        """Decide and commit one league command (or return its first answer)."""
        league = await self.leagues.get(request.league_id)
        async with league.lock:
            return await self._execute(league, request, digest)

    async def _execute(
        self, league: LoadedLeague, request: LeagueCommandRequest, digest: str
    ) -> LeagueCommandReply:
        first = await self._first_answer(league, request, digest)
        if first is not None:
            return first
        for _ in range(MAX_ATTEMPTS):
            refusal: Refusal | None = None
            try:
                events = await self._decide(league, request)
            except (RuleViolation, LeagueRefused) as refused:
                if refused.code == "league_not_found":  # nothing to record it in
                    return _refusal(request.command_id, refused.code, refused.detail)
                events, refusal = [], Refusal(refused.code, refused.detail)
            commit = LeagueCommit(
                league_id=league.league_id,
                version=league.version + len(events),
                command_id=request.command_id,
                time=self._clock(),
                previous=league.digest,
                request=digest,
                events=events,
                refusal=refusal,
            )
            data = encode_league_commit(commit)
            try:
                sequence = await self._stream.append(
                    league.league_id,
                    data,
                    expected=league.sequence,
                    command_id=f"{league.league_id}:{request.command_id}",
                )
            except (AppendConflict, DuplicateCommand):
                await self.leagues.catch_up(league)
                first = await self._first_answer(league, request, digest)
                if first is not None:
                    return first
                continue
            league.apply(StoredLeagueCommit(sequence, data, commit))
            return _reply(request, commit, sequence)
        return _refusal(request.command_id, "unavailable", "the league is too busy; retry")

    async def _decide(
        self, league: LoadedLeague, request: LeagueCommandRequest
    ) -> list[AnyLeagueEvent]:
        body = request.body
        state = league.state
        if isinstance(body, CreateLeagueRequest):
            if state is not None:
                raise LeagueRefused("conflict", f"league {league.league_id} already exists")
            command = CreateLeague(
                league.league_id,
                body.name,
                body.rules,
                tuple(body.players),
                body.rounds,
                body.pairing,
            )
            return decide(None, command, seed=self._seed().hex())
        if state is None:
            raise LeagueRefused("league_not_found", f"no league {league.league_id}")
        number = body.round if body.round is not None else state.next_round
        results = await self.results(state)
        return await asyncio.to_thread(decide, state, ScheduleRound(number), results=results)

    async def results(self, state: League) -> dict[str, TableResult]:
        """How each game of the league's last round ended, for those that have ended, read
        from the games' histories."""
        if not state.rounds:
            return {}
        tables = state.rounds[-1].tables
        loaded = await asyncio.gather(*(self._games.latest(table.game_id) for table in tables))
        return {
            game.game_id: table_result(game.state)
            for game in loaded
            if game.state is not None and game.state.status == "finished"
        }

    async def _first_answer(
        self, league: LoadedLeague, request: LeagueCommandRequest, digest: str
    ) -> LeagueCommandReply | None:
        """The answer this command id already got, if it got one."""
        answered = league.answered.get(request.command_id)
        if answered is None:
            return None
        if digest and answered.request and answered.request != digest:
            detail = "this command id was first used with another request"
            return _refusal(request.command_id, "idempotency_key_reused", detail)
        stored = await self._stream.read_one(answered.sequence)
        return _reply(request, stored.commit, answered.sequence)


def _reply(
    request: LeagueCommandRequest, commit: LeagueCommit, sequence: int
) -> LeagueCommandReply:
    if commit.refusal is not None:
        code: LeagueReplyCode = msgspec.convert(commit.refusal.code, LeagueReplyCode)
        return _refusal(request.command_id, code, commit.refusal.detail)
    return LeagueCommandReply(
        command_id=request.command_id,
        ok=True,
        version=commit.version,
        sequence=sequence,
        events=list(commit.events),
    )
