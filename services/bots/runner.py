"""Bots at a table over the HTTP API only: each seat follows its own view with its seat token.

Every seat runs two tasks. One follows the game's event stream (server-sent events, resumed with
``Last-Event-ID`` when it drops), feeds the bot's memory and wakes the other when an event may
have given the seat the turn. The other reads the seat's view, asks the bot for an action and
posts it with an ``Idempotency-Key`` made of the seat and the game version it was chosen at, so
a retry can never act twice, and with the version it was chosen at (``expected_version``), so an
action chosen from a view the table has left (the seat's clock played for it meanwhile, say) is
refused ``conflict`` rather than tried against the table as it is now. A refusal because the
table moved on (``not_your_turn``, ``wrong_phase``, ``conflict``, ``game_over``) is answered by
reading the view again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import httpx
import msgspec

from services.bots.strategy import Player
from services.client import ApiError, ServerSentEvent, SpadesClient

T = TypeVar("T")

STALE_CODES = frozenset({"not_your_turn", "wrong_phase", "conflict", "game_over"})
"""Refusals that mean the view the action was chosen from is out of date (the game may even have
ended meanwhile: a clock played the other seats to the end while this one chose)."""
ACTS_WITHOUT_TURN = frozenset({"hand_looked", "cards_passed"})
"""Events that never hand the turn to another seat."""
QUIET_S = 5.0
"""With no event for this long, the view is read anyway (a stream may have stalled)."""
RECONNECT_S = 0.2
"""The wait before following the stream again after it ended or failed."""
PATIENCE_S = 60.0
"""How long a seat keeps trying while the service is unavailable (503) or unreachable; an
action is tried again with the same key, so it cannot apply twice."""
MAX_ACTIONS = 20_000
"""More actions than any game needs from one seat: beyond this the table is stuck."""


class SeatOutcome(msgspec.Struct, frozen=True):
    seat: int
    actions: int
    """Actions this seat had accepted."""
    stale: int
    """Actions refused because the table had moved on, and chosen again."""


class GameOutcome(msgspec.Struct, frozen=True):
    game_id: str
    winners: list[int]
    scores: list[int]
    hands: int
    seats: list[SeatOutcome]
    seconds: float

    @property
    def actions(self) -> int:
        return sum(seat.actions for seat in self.seats)


async def play_game(
    client: SpadesClient,
    game_id: str,
    seats: Mapping[int, str],
    bot_factory: Callable[[], Player],
    *,
    quiet_s: float = QUIET_S,
    patience_s: float = PATIENCE_S,
) -> GameOutcome:
    """Play the seats of ``seats`` (seat: token) until the game ends, one bot each."""
    start = time.perf_counter()
    players = [
        SeatPlayer(client, game_id, seat, token, bot_factory(), quiet_s, patience_s)
        for seat, token in seats.items()
    ]
    outcomes = await asyncio.gather(*(player.play() for player in players))
    state = await client.state(game_id)
    return GameOutcome(
        game_id=game_id,
        winners=list(state.winners),
        scores=list(state.scores),
        hands=state.hand_number,
        seats=list(outcomes),
        seconds=time.perf_counter() - start,
    )


class SeatPlayer:
    """One seat of one game, played by one bot through the seat's token."""

    def __init__(
        self,
        client: SpadesClient,
        game_id: str,
        seat: int,
        token: str,
        bot: Player,
        quiet_s: float = QUIET_S,
        patience_s: float = PATIENCE_S,
    ) -> None:
        self.client = client
        self.game_id = game_id
        self.seat = seat
        self.token = token
        self.bot = bot
        self.quiet_s = quiet_s
        self.patience_s = patience_s
        self.players: int | None = None
        self.changed = asyncio.Event()
        self.actions = 0
        self.stale = 0

    async def play(self) -> SeatOutcome:
        """Act whenever the seat may, until the game is over."""
        follower = asyncio.create_task(self._follow())
        try:
            await self._act_until_over()
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        return SeatOutcome(self.seat, self.actions, self.stale)

    async def _act_until_over(self) -> None:
        for _ in range(MAX_ACTIONS):
            self.changed.clear()  # before reading: an event from now on wakes the next wait
            view = await self._patiently(lambda: self.client.view(self.game_id, self.token))
            if view.status == "finished":
                return
            self.players = len(view.seats)
            action = self.bot.act(view)
            if action is None or not await self._send(action, view.version):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), self.quiet_s)
        raise RuntimeError(f"seat {self.seat} of {self.game_id}: {MAX_ACTIONS} actions, no end")

    async def _send(self, action: dict[str, Any], version: int) -> bool:
        """Post the action; whether the seat may have to act again at once."""
        key = f"bot-{self.seat}-v{version}-{action['type']}"
        try:
            result = await self._patiently(
                lambda: self.client.act(
                    self.game_id, self.token, action, idempotency_key=key, expected_version=version
                )
            )
        except ApiError as error:
            if error.code not in STALE_CODES:
                raise
            self.stale += 1
            return False  # read again once the table has moved (not in a tight loop)
        self.actions += 1
        # The answer's events reach the bot through the stream, in order with the rest; here
        # they only tell whether the turn may still be this seat's.
        return action["type"] == "look" or any(
            self._may_give_turn(msgspec.to_builtins(record.event)) for record in result.events
        )

    async def _patiently(self, request: Callable[[], Awaitable[T]]) -> T:
        """Send ``request`` again while the service is unavailable or unreachable, backing off,
        or past a budget (429), after its ``Retry-After``, for up to ``patience_s``; any other
        refusal is raised at once."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.patience_s
        delay = 0.05
        while True:
            wait = delay
            try:
                return await request()
            except (ApiError, httpx.TransportError) as error:
                limited = isinstance(error, ApiError) and error.status == 429
                down = not isinstance(error, ApiError) or error.status == 503
                if limited and isinstance(error, ApiError):
                    wait = max(delay, error.retry_after or 1.0)
                if not (down or limited) or loop.time() + wait > deadline:
                    raise
            await asyncio.sleep(wait)  # down or over budget: there is nothing to await but time
            delay = min(delay * 2, 2.0)

    async def _follow(self) -> None:
        """Follow the seat's event stream for as long as the seat plays, resuming after drops."""
        last_id: str | None = None
        while True:
            try:
                async with contextlib.aclosing(
                    self.client.stream(self.game_id, self.token, last_event_id=last_id)
                ) as messages:
                    async for message in messages:
                        if message.event == "end":
                            return  # the game is over (or the token): nothing more will come
                        last_id = message.id or last_id
                        self._take(message)
            except (httpx.HTTPError, ApiError):
                pass  # the stream failed; the view is still read on every quiet timeout
            await asyncio.sleep(RECONNECT_S)  # back off before following again

    def _take(self, message: ServerSentEvent) -> None:
        if message.event == "clock":
            return  # deadlines only: no move of any seat
        if message.event == "state":
            self.changed.set()
            return
        event = message.json()
        if not isinstance(event, dict):
            return
        position = int(message.id) if message.id and message.id.isdigit() else None
        self.bot.observe(event, position)
        if self._may_give_turn(event):
            self.changed.set()

    def _may_give_turn(self, event: Mapping[str, Any]) -> bool:
        """Whether after ``event`` it may be this seat's turn. A card or a draw passes the turn
        to the next seat and a trick to its winner; anything else (the last bid, a pass
        received, a deal, the end) may give it to any seat."""
        kind = event.get("type")
        if kind in ACTS_WITHOUT_TURN:
            return False
        if kind == "trick_won":
            return event.get("seat") == self.seat
        if kind in ("card_played", "card_drawn") and self.players is not None:
            return event.get("seat") == (self.seat - 1) % self.players
        return True


async def play_games(
    client: SpadesClient,
    rules: Mapping[str, Any],
    games: int,
    bot_factory: Callable[[], Player],
    *,
    concurrency: int = 4,
    on_game: Callable[[GameOutcome], None] | None = None,
) -> list[GameOutcome]:
    """Create ``games`` games of ``rules``, seat a bot in every seat and play them all, at most
    ``concurrency`` at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def one() -> GameOutcome:
        async with gate:
            game = await client.create_game(rules)
            seats = {}
            for seat in range(len(game.seats)):
                taken = await client.take_seat(game.game_id, f"bot {seat + 1}", seat=seat)
                seats[seat] = taken.token
            outcome = await play_game(client, game.game_id, seats, bot_factory)
            if on_game is not None:
                on_game(outcome)
            return outcome

    return list(await asyncio.gather(*(one() for _ in range(games))))
