"""The game command handler: decide a command against a game's history, append its outcome.

For each request: read it (a malformed one gets a ``malformed`` reply), load the game (cached in
memory with its last stream sequence), and let :class:`services.engine.handler.CommandHandler`
answer a command id seen before with its first answer or decide and append the outcome with
optimistic concurrency. Each hand is dealt from a fresh secret seed
(:func:`.handler.fresh_seed`), committed to by its hash in the deal and revealed with the hand's
score.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import msgspec

from contracts.wire import (
    MAX_COMMAND_BYTES,
    ActRequest,
    CommandReply,
    CommandRequest,
    Commit,
    CreateGameRequest,
    EventRecord,
    MarkAwayRequest,
    Refusal,
    ReissueTokenRequest,
    ReplyCode,
    TakeSeatRequest,
    TimeOutRequest,
    commit_seconds,
    encode_commit,
    request_decoder,
)
from domain.commands import (
    AnyCommand,
    CreateGame,
    MarkAway,
    PlayerAction,
    ReissueSeatToken,
    TakeSeat,
    TimeOut,
    from_api,
)
from domain.events import GameEnded, SeatTaken, SeatTokenReissued
from domain.game import decide
from domain.seating import GAME_ID, GAME_ID_RULE
from domain.shuffle import SeededDeal
from domain.state import Game
from domain.timing import on_clock
from domain.views import event_for
from services.bots.stand_in import stand_in_actions
from services.engine.boards import board_source
from services.engine.budget import CommandBudget
from services.engine.handler import (
    CommandHandler,
    Lane,
    Refused,
    commit_time,
    fresh_seed,
)
from services.runtime.game_cache import CAPACITY, GameCache, LoadedGame
from services.runtime.game_stream import GameStore
from services.runtime.logging import get_logger

log = get_logger("spades.engine")


def revocation(state: Game, body: ActRequest) -> str | None:
    """Why an action's seat token no longer acts for its seat (it has been issued again), or
    None when it does (or carries no issue: a command from inside the service)."""
    if body.issue is None or not 0 <= body.seat < len(state.players):
        return None
    player = state.players[body.seat]
    if player is None or player.issue != body.issue:
        return "this seat token has been revoked: the seat's token was issued again"
    return None


class FreshDeal(SeededDeal, frozen=True, dict=True):
    """A seeded deal whose secret seed is drawn when the deal is made, not before: every
    command that may deal gets one, and few do (drawing a seed for each cost the engine about
    0.5 us a command; the lazy one costs 0.06). The domain reads ``seed`` as it would a
    :class:`SeededDeal`'s; the first read draws it, and the later ones give the same seed (the
    deal's shuffle and its commitment)."""

    draw: Callable[[], bytes]

    @cached_property  # type: ignore[misc]  # a field read as a property, as the domain reads it
    def seed(self) -> bytes:
        return self.draw()


def _refusal(command_id: str, code: str, detail: str) -> CommandReply:
    return CommandReply(
        command_id=command_id, ok=False, code=msgspec.convert(code, ReplyCode), detail=detail
    )


class Engine(CommandHandler[CommandRequest, CommandReply, Commit, LoadedGame]):
    """Answers game command requests; one per process, shared by every game."""

    UNRECORDED = frozenset({"game_not_found", "unauthorized"})
    """No history for the first; the second is a revoked token's, whose holder may not write
    into the game's history at all."""
    NAME = "game"
    MAX_BYTES = MAX_COMMAND_BYTES
    KEY = GAME_ID
    KEY_RULE = GAME_ID_RULE

    def __init__(
        self,
        stream: GameStore,
        *,
        clock: Callable[[], str] = commit_time,
        seed: Callable[[], bytes] = fresh_seed,
        cache_capacity: int = CAPACITY,
        ended: Callable[[str], None] | None = None,
        budget: CommandBudget | None = None,
        board_key: bytes | None = None,
    ) -> None:
        self.games = GameCache(stream, cache_capacity)
        super().__init__(stream, self.games)
        self._clock = clock
        self._seed = seed
        self.ended = ended
        """Told the id of each game whose end this engine commits (the round watch's)."""
        self.board_key = board_key if board_key is not None else fresh_seed()
        """The stack's key the boards of duplicate events are derived from
        (:mod:`services.engine.boards`); a fresh one, for this engine alone, when none is given."""
        self.budget = budget
        """Each platform's commands a minute (:mod:`services.engine.budget`); None: no budget."""

    def read(self, data: bytes) -> CommandRequest:
        return request_decoder.decode(data)

    def key_of(self, request: CommandRequest) -> str:
        return request.game_id

    def log_context(self, request: CommandRequest) -> dict[str, Any]:
        seat = request.body.seat if isinstance(request.body, ActRequest) else None
        return {"game_id": request.game_id, "seat": seat}

    async def decide(self, held: LoadedGame, request: CommandRequest) -> list[Any]:
        body = request.body
        state = held.state
        command: AnyCommand
        if isinstance(body, CreateGameRequest):
            if state is not None:
                raise Refused("conflict", f"game {held.game_id} already exists")
            command = CreateGame(
                held.game_id,
                body.rules,
                body.dealer,
                body.entropy,
                league=body.league,
                platform=body.platform,
                visibility=body.visibility,
                seating=body.seating,
                clock=body.clock,
                duplicate=body.duplicate,
                ties=body.ties,
            )
            return list(decide(None, command))
        if state is None:
            raise Refused("game_not_found", f"no game {held.game_id}")
        if isinstance(body, TakeSeatRequest):
            command = TakeSeat(body.player, body.seat, body.entropy)
        elif isinstance(body, ReissueTokenRequest):
            command = ReissueSeatToken(body.seat, body.player)
        elif isinstance(body, MarkAwayRequest):
            command = MarkAway(body.seat)
        elif isinstance(body, TimeOutRequest):
            command = self._time_out(state, body)
        else:  # an action whose token was revoked is barred before it is decided
            if body.expected_version is not None and body.expected_version != state.version:
                detail = f"the game is at version {state.version}, not {body.expected_version}"
                raise Refused("conflict", detail)
            command = from_api(body.seat, body.action)
        if state.duplicate is not None:  # a duplicate event's table: its boards' seeds
            boards = board_source(self.board_key, state.duplicate.event)
            return list(decide(state, command, deal=boards))
        return list(decide(state, command, deal=FreshDeal(b"", self._seed)))

    def appended(self, held: LoadedGame, commit: Commit) -> None:
        state = held.state  # the cheapest test first: most commits leave the game going on
        if state is None or state.status != "finished" or self.ended is None:
            return
        if any(type(event) is GameEnded for event in commit.events):
            self.ended(held.game_id)

    def misrouted(self, request: CommandRequest, lane: Lane) -> str | None:
        """A timeout comes on the timeout subjects, and nothing else does: the timers' broker
        user may send there alone, so a timers process cannot bid, play or seat anyone, and no
        other sender fires a timeout."""
        timeout = isinstance(request.body, TimeOutRequest)
        if lane == "timeouts" and not timeout:
            return "only a timeout is answered on the timeout subjects"
        if lane == "commands" and timeout:
            return "a timeout is answered only on the timeout subjects (spades.timeouts.*)"
        return None

    def records_refusal(self, request: CommandRequest) -> bool:
        """A timer's refused timeout is nobody's action (a stale shot, a race another timer
        won, a deadline not reached): it is answered, not recorded."""
        return not isinstance(request.body, TimeOutRequest)

    def _time_out(self, state: Game, body: TimeOutRequest) -> TimeOut:
        """A timer's timeout, decided at this engine's time; under ``auto`` it carries what
        the service's bot does for the seat, from the seat's view alone."""
        if body.expected_version != state.version:
            detail = f"the game is at version {state.version}, not {body.expected_version}"
            raise Refused("conflict", detail)
        at = commit_seconds(self._clock())
        timing = state.timing
        auto = timing is not None and timing.clock.on_timeout == "auto"
        actions: tuple[PlayerAction, ...] = ()
        if auto and body.seat in on_clock(state):
            actions = stand_in_actions(state, body.seat)
        return TimeOut(body.seat, at, actions)

    def over_budget(self, held: LoadedGame, request: CommandRequest) -> Refused | None:
        """A player's command past its platform's budget is refused ``rate_limited``; the
        service's own (a timeout, a league round's game and its seatings) is admitted and
        counted (:mod:`services.engine.budget` says why)."""
        budget = self.budget
        if budget is None:
            return None
        body = request.body
        state = held.state
        if isinstance(body, CreateGameRequest):
            platform, ours = body.platform, body.league is not None
        elif state is None:
            return None  # no game: answered game_not_found, nothing decided
        else:
            platform = state.platform
            ours = isinstance(body, TimeOutRequest) or (
                isinstance(body, TakeSeatRequest) and state.league is not None
            )
        if platform is None:
            return None
        if ours:
            budget.charge(platform)
            return None
        wait_s = budget.draw(platform)
        if not wait_s:
            return None
        return Refused(
            "rate_limited",
            f"quota: a platform's games get at most {budget.per_minute} engine commands a minute "
            f"here (SPADES_MAX_COMMANDS_PER_MINUTE, their timeouts and rounds included); "
            f"retry in {wait_s} s",
        )

    def barred(self, held: LoadedGame, request: CommandRequest) -> Refused | None:
        """A revoked token gets nothing, not even the answer it was given before it was
        revoked."""
        body = request.body
        if isinstance(body, ActRequest) and held.state is not None:
            revoked = revocation(held.state, body)
            if revoked is not None:
                return Refused("unauthorized", revoked)
        return None

    def commit(
        self,
        held: LoadedGame,
        command_id: str,
        digest: str,
        events: list[Any],
        refusal: Refusal | None,
    ) -> Commit:
        return Commit(
            game_id=held.game_id,
            version=held.version + len(events),
            command_id=command_id,
            time=self._clock(),
            previous=held.digest,
            request=digest,
            events=events,
            refusal=refusal,
        )

    def encode(self, commit: Commit) -> bytes:
        return encode_commit(commit)

    def reply(self, request: CommandRequest, commit: Commit, sequence: int) -> CommandReply:
        """A commit as the sender may see it: its own seat's view of the events."""
        if commit.refusal is not None:
            return _refusal(request.command_id, commit.refusal.code, commit.refusal.detail)
        reader = request.body.seat if isinstance(request.body, ActRequest) else None
        for event in commit.events:
            if isinstance(event, SeatTaken) and isinstance(request.body, TakeSeatRequest):
                reader = event.seat
            if isinstance(event, SeatTokenReissued):
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

    def refusal(self, command_id: str, code: str, detail: str) -> CommandReply:
        return _refusal(command_id, code, detail)

    def nothing(self, command_id: str, held: LoadedGame) -> CommandReply:
        return CommandReply(command_id=command_id, ok=True, version=held.version)
