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
import logging
from collections.abc import Callable
from typing import Any

import msgspec

from contracts.wire import (
    MAX_LEAGUE_COMMAND_BYTES,
    AdjustScoreRequest,
    CreateLeagueRequest,
    FinishRoundRequest,
    LeagueCommandReply,
    LeagueCommandRequest,
    LeagueCommit,
    LeagueReplyCode,
    Refusal,
    ScheduleRoundRequest,
    SubstitutePlayerRequest,
    VoidTableRequest,
    encode_league_commit,
    league_request_decoder,
)
from domain.duplicate_standings import seeding
from domain.league import (
    LEAGUE_ID,
    AdjustScore,
    AnyLeagueCommand,
    CreateLeague,
    FinishRound,
    League,
    Round,
    ScheduleRound,
    Side,
    SubstitutePlayer,
    TableResult,
    VoidTable,
    WithdrawPlayer,
    decide,
    duplicate_boards,
    fold,
    table_result,
)
from domain.records import hand_records
from services.engine.boards import board_seeds
from services.engine.handler import (
    CommandHandler,
    Refused,
    commit_time,
    fresh_seed,
)
from services.runtime.game_cache import GameCache
from services.runtime.league_cache import LeagueCache, LoadedLeague
from services.runtime.league_stream import LeagueStore
from services.runtime.logging import get_logger

log = get_logger("spades.engine")


def _refusal(command_id: str, code: str, detail: str) -> LeagueCommandReply:
    return LeagueCommandReply(
        command_id=command_id,
        ok=False,
        code=msgspec.convert(code, LeagueReplyCode),
        detail=detail,
    )


class LeagueEngine(
    CommandHandler[LeagueCommandRequest, LeagueCommandReply, LeagueCommit, LoadedLeague]
):
    """Answers league command requests; one per process, sharing the process's game cache."""

    UNRECORDED = frozenset({"league_not_found"})
    NAME = "league"
    COMMAND = "league command"
    MAX_BYTES = MAX_LEAGUE_COMMAND_BYTES
    KEY = LEAGUE_ID
    KEY_RULE = "a league id is 1 to 40 of A-Z a-z 0-9 _ -"
    ACCEPTED_LOG_LEVEL = logging.INFO
    """League commands are few (a creation, then one a round): each is worth a line."""

    def __init__(
        self,
        stream: LeagueStore,
        games: GameCache,
        *,
        clock: Callable[[], str] = commit_time,
        seed: Callable[[], bytes] = fresh_seed,
        board_key: bytes | None = None,
    ) -> None:
        self.board_key = board_key if board_key is not None else seed()
        """The stack's key the boards of duplicate events are derived from
        (:mod:`services.engine.boards`); a fresh one, for this engine alone, when none is given."""
        self.leagues = LeagueCache(stream)
        super().__init__(stream, self.leagues)
        self._games = games
        self._clock = clock
        self._seed = seed

    def read(self, data: bytes) -> LeagueCommandRequest:
        return league_request_decoder.decode(data)

    def key_of(self, request: LeagueCommandRequest) -> str:
        return request.league_id

    async def decide(self, held: LoadedLeague, request: LeagueCommandRequest) -> list[Any]:
        body = request.body
        state = held.state
        if isinstance(body, CreateLeagueRequest):
            if state is not None:
                raise Refused("conflict", f"league {held.league_id} already exists")
            created = CreateLeague(
                held.league_id,
                body.name,
                body.rules,
                tuple(body.players),
                body.rounds,
                body.pairing,
                platform=body.platform,
                visibility=body.visibility,
                clock=body.clock,
                knockout=body.knockout,
                format=body.format,
                boards_per_round=body.boards_per_round,
                partners=body.partners,
                convention=body.convention,
            )
            if body.format == "duplicate":
                # its movement takes up to a fraction of a second (64 players, 200 rounds)
                return await asyncio.to_thread(self._create_duplicate, held, created)
            return decide(None, created, seed=self._seed().hex())
        if state is None:
            raise Refused("league_not_found", f"no league {held.league_id}")
        if isinstance(body, ScheduleRoundRequest):
            number = body.round if body.round is not None else state.next_round
            last = state.rounds[-1] if state.rounds else None
            results = await self.results(last)
            seeds = self.revealing(state, last)
            seeding = await self.seeding(state, number, results, seeds)
            return await asyncio.to_thread(
                decide,
                state,
                ScheduleRound(number),
                results=results,
                board_seeds=seeds,
                seeding=seeding,
            )
        command: AnyLeagueCommand
        if isinstance(body, FinishRoundRequest):
            command = FinishRound(body.round)
            played = state.rounds[body.round - 1] if 1 <= body.round <= len(state.rounds) else None
        elif isinstance(body, SubstitutePlayerRequest):
            command = SubstitutePlayer(body.player, body.substitute)
            played = state.current
        elif isinstance(body, VoidTableRequest):
            command = VoidTable(body.game_id, body.reason, body.board)
            found = state.table_named(body.game_id)
            played = found[0] if found is not None else None
        elif isinstance(body, AdjustScoreRequest):
            return decide(state, AdjustScore(body.player, body.points, body.reason, body.round))
        else:
            return decide(state, WithdrawPlayer(body.player))
        seeds = self.revealing(state, played)
        return decide(state, command, results=await self.results(played), board_seeds=seeds)

    def _create_duplicate(self, held: LoadedLeague, created: CreateLeague) -> list[Any]:
        """A duplicate event, committed to every board's seed."""
        count = duplicate_boards(created)  # refused here as decide would refuse it
        seeds = board_seeds(self.board_key, held.league_id, range(1, count + 1))
        return list(decide(None, created, seed=self._seed().hex(), board_seeds=seeds))

    async def seeding(
        self,
        state: League,
        number: int,
        results: dict[str, TableResult],
        seeds: dict[int, bytes] | None,
    ) -> list[Side] | None:
        """A duplicate event's sides best first by its matchpoint standings, read from its
        tables' histories, when round ``number`` seeds the knockout after it (the league
        records how each table ended, not how each board went); None otherwise."""
        if not (
            state.format == "duplicate"
            and state.stage is not None
            and state.knockout is None
            and number == state.before_knockout + 1
        ):
            return None
        if state.rounds and not state.rounds[-1].finished:  # recorded over with this command
            over = decide(
                state, FinishRound(state.rounds[-1].number), results=results, board_seeds=seeds
            )
            state = fold(over, state) or state
        game_ids = [table.game_id for played in state.rounds for table in played.tables]
        histories = await asyncio.gather(*(self._games.events(game) for game in game_ids))
        hands = {
            game: hand_records(events) for game, events in zip(game_ids, histories, strict=True)
        }
        return seeding(state, hands)

    def revealing(self, state: League, played: Round | None) -> dict[int, bytes] | None:
        """The seeds of ``played``'s boards, which its end reveals (a duplicate event's)."""
        if state.format != "duplicate" or played is None or played.finished:
            return None
        return board_seeds(self.board_key, state.league_id, played.boards)

    async def results(self, played: Round | None) -> dict[str, TableResult]:
        """How each game of ``played`` ended, for those that have ended, read from the games'
        histories."""
        if played is None or played.finished:
            return {}
        tables = played.tables
        loaded = await asyncio.gather(*(self._games.latest(table.game_id) for table in tables))
        return {
            game.game_id: table_result(game.state)
            for game in loaded
            if game.state is not None and game.state.status == "finished"
        }

    def commit(
        self,
        held: LoadedLeague,
        command_id: str,
        digest: str,
        events: list[Any],
        refusal: Refusal | None,
    ) -> LeagueCommit:
        return LeagueCommit(
            league_id=held.league_id,
            version=held.version + len(events),
            command_id=command_id,
            time=self._clock(),
            previous=held.digest,
            request=digest,
            events=events,
            refusal=refusal,
        )

    def encode(self, commit: LeagueCommit) -> bytes:
        return encode_league_commit(commit)

    def reply(
        self, request: LeagueCommandRequest, commit: LeagueCommit, sequence: int
    ) -> LeagueCommandReply:
        return _reply(request, commit, sequence)

    def refusal(self, command_id: str, code: str, detail: str) -> LeagueCommandReply:
        return _refusal(command_id, code, detail)

    def nothing(self, command_id: str, held: LoadedLeague) -> LeagueCommandReply:
        return LeagueCommandReply(command_id=command_id, ok=True, version=held.version)


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
