"""``spades bench events``: does duplicate rank players by skill better than fresh deals do?

A field of partnerships of known strength plays the same number of deals twice, in process
through :func:`domain.game.decide` and :func:`domain.game.evolve`:

- **Swiss, fresh deals**: each round the pairs are seated two to a table by the league's own
  Swiss pairing (:func:`domain.schedule.seat_round`, the ranking so far), every table is dealt
  fresh cards for each of its deals, and the standings rank by matches won (a match: the round's
  deals at one table, won on total points), then by total score difference;
- **duplicate**: the event's movement (:func:`domain.movement.movement`, fixed pairs), every
  table of a round playing the round's boards (each dealt once, from its own seed, as
  :func:`domain.boards.board_deal` deals it), the standings by matchpoint percentage on the
  score delta (:mod:`domain.matchpoints`, sets and bags as scored).

**The players.** Both partners of pair ``k`` are an :class:`Erring` bot: the project's bot
(:class:`services.bots.strategy.Bot`), which bids and passes as the bot does, and on each card
it plays makes a uniformly random legal play instead with probability ``error_k``. The errors
step evenly from 0 (the bot itself) to :data:`WORST_ERROR`, so the known order is pair 0 best,
the last pair worst. Card play, not bidding, is where they differ: a random bid (a blind nil on
nothing) loses so much that it swamps the luck of the cards, and no format would struggle to
rank such players; the card-play errors leave the cards' luck as large as it is at a real table.

**The figure.** Kendall's tau between the known order and each event's final standings
(1: the standings are the strength order; 0: no better than chance), its mean and spread over
events, for each format at the same number of deals per pair.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from domain.boards import board_deal, board_dealer
from domain.commands import CreateGame, TakeSeat, from_api
from domain.game import decide, evolve, seat_to_act
from domain.matchpoints import (
    BoardResults,
    EventResults,
    SideResult,
    TableResult,
    cross_tables,
    standings,
)
from domain.movement import movement
from domain.rules import resolve_rules
from domain.schedule import Seating, seat_round
from domain.shuffle import DealSource, DealtHands, SeededDeal
from domain.state import Game
from domain.views import event_for, seat_view
from services.bots.strategy import Bot, Player, RandomPlayer, View

PRESET = "partnership"
WORST_ERROR = 0.5
"""The weakest pair's share of random card plays."""
PAIRS = 8
ROUNDS = 7
"""Rounds of an event: with 8 pairs, every pair meets every other once."""
DEALS_PER_ROUND = 2


class Erring:
    """The project's bot, which plays a random legal card instead on a share (``error``) of
    its plays. Both of its minds watch every event, so its memory stays whole."""

    def __init__(self, error: float, rng: random.Random) -> None:
        self.error = error
        self.rng = rng
        self.bot = Bot()
        self.random = RandomPlayer(rng)

    def observe(self, event: Any, position: int | None = None) -> None:
        self.bot.observe(event, position)

    def act(self, view: View) -> dict[str, Any] | None:
        chosen = self.bot.act(view)
        if chosen is None or chosen["type"] != "play" or self.rng.random() >= self.error:
            return chosen
        return self.random.act(view)


class FormatFigures(msgspec.Struct, frozen=True):
    """One format's figures over every event."""

    format: str
    events: int
    deals_each: int
    """Deals each pair played in an event."""
    tau_mean: float
    tau_stdev: float
    tau_min: float
    tau_max: float
    top_pair_first: int
    """Events whose standings put the strongest pair first."""
    seconds: float


class EventsFigures(msgspec.Struct, frozen=True):
    pairs: int
    errors: tuple[float, ...]
    """Each pair's share of random card plays, strongest first (the known order)."""
    formats: tuple[FormatFigures, ...]

    def gain(self) -> tuple[float, float]:
        """Duplicate's mean tau less Swiss's, and the standard error of that difference."""
        by_name = {figures.format: figures for figures in self.formats}
        swiss, duplicate = by_name[SWISS], by_name[DUPLICATE]
        spread = swiss.tau_stdev**2 / swiss.events + duplicate.tau_stdev**2 / duplicate.events
        return duplicate.tau_mean - swiss.tau_mean, spread**0.5


def kendall_tau(known: Sequence[int], ranked: Sequence[int]) -> float:
    """Kendall's tau (a; both orders strict) between two orders of the same items.

    >>> kendall_tau([0, 1, 2, 3], [0, 1, 2, 3]), kendall_tau([0, 1, 2, 3], [3, 2, 1, 0])
    (1.0, -1.0)
    >>> kendall_tau([0, 1, 2], [1, 0, 2])
    0.3333333333333333
    """
    place = {item: index for index, item in enumerate(ranked)}
    pairs = concordant = 0
    for i, first in enumerate(known):
        for second in known[i + 1 :]:
            pairs += 1
            concordant += 1 if place[first] < place[second] else -1
    return concordant / pairs


def play_hand(
    rules: dict[str, Any], players: Sequence[Player], deal: DealSource, dealer: int
) -> tuple[int, ...]:
    """One hand at a table of ``players`` (by seat), dealt ``deal``: each unit's points."""
    game: Game | None = None
    for event in decide(game, CreateGame("bench", {**rules, "max_hands": 1}, dealer=dealer)):
        game = evolve(game, event)
    assert game is not None
    for place in range(game.rules.players):
        for event in decide(game, TakeSeat(f"seat {place}"), deal=deal):
            game = evolve(game, event)
    while game.status != "finished":
        seat = seat_to_act(game)
        assert seat is not None
        action = players[seat].act(msgspec.to_builtins(seat_view(game, seat)))
        if action is None:
            raise RuntimeError(f"seat {seat} must act in {game.hand} but did not")
        for event in decide(game, from_api(seat, action), deal=deal):
            game = evolve(game, event)
            for reader, player in enumerate(players):
                player.observe(event_for(event, reader))
    return game.scores


def _table(pairs: Sequence[int], errors: Sequence[float], rng: random.Random) -> list[Player]:
    """Seats of a four-seat table: the first pair north and south, the second east and west."""
    first, second = pairs
    return [Erring(errors[p], rng) for p in (first, second, first, second)]


def swiss_event(errors: Sequence[float], rounds: int, deals: int, rng: random.Random) -> list[int]:
    """A Swiss event on fresh deals: the pairs, best first by its standings."""
    names = [f"pair {p}" for p in range(len(errors))]
    order = names[:]
    rng.shuffle(order)
    wins = dict.fromkeys(names, 0)
    difference = dict.fromkeys(names, 0)
    past: list[Seating] = []

    def ranking() -> list[str]:
        return sorted(names, key=lambda n: (-wins[n], -difference[n], order.index(n)))

    rules = {"preset": PRESET}
    for _ in range(rounds):
        seating = seat_round("swiss", order, 2, past, ranking=ranking())
        past.append(seating)
        for table in seating.tables:
            pairs = [names.index(name) for name in table]
            totals = [0, 0]
            for deal_number in range(deals):
                players = _table(pairs, errors, rng)
                points = play_hand(rules, players, SeededDeal(rng.randbytes(32)), deal_number % 4)
                totals = [totals[0] + points[0], totals[1] + points[1]]
            for side, name in enumerate(table):
                difference[name] += totals[side] - totals[1 - side]
            if totals[0] != totals[1]:
                wins[table[0 if totals[0] > totals[1] else 1]] += 1
        for name in seating.byes:
            wins[name] += 1
    return [names.index(name) for name in ranking()]


def duplicate_event(
    errors: Sequence[float], rounds: int, deals: int, rng: random.Random
) -> list[int]:
    """A duplicate event of fixed pairs: the pairs, best first by matchpoint percentage."""
    rules = resolve_rules({"preset": PRESET})
    pairs = len(errors)
    plan = movement(2 * pairs, rules, "pairs", rounds=rounds, boards_per_round=deals)
    seeds = {board: rng.randbytes(32) for r in plan.rounds for board in r.boards}
    identity = list(range(pairs))
    rng.shuffle(identity)  # who is pair 0 of the movement: the event's own draw
    boards: list[BoardResults] = []
    for played in plan.rounds:
        for board in played.boards:
            dealt = board_deal(rules, seeds[board], board)
            tables: list[TableResult] = []
            for number, seats in enumerate(played.tables):
                # seats by the movement's players; pair p of the movement is players 2p, 2p + 1
                at_table = [identity[seats[seat] // 2] for seat in (0, 1)]
                players = _table(at_table, errors, rng)
                points = play_hand(
                    {"preset": PRESET}, players, DealtHands(dealt.hands), board_dealer(rules, board)
                )
                sides = tuple(
                    SideResult((f"pair {at_table[side]}",), points[side]) for side in (0, 1)
                )
                tables.append(TableResult(str(number + 1), sides))
            boards.append(BoardResults(board, tuple(tables)))
    ranked = standings(cross_tables(EventResults(tuple(boards))))
    return [int(standing.players[0].split()[1]) for standing in ranked]


SWISS = "swiss, fresh deals"
DUPLICATE = "duplicate"
FORMATS: dict[str, Callable[[Sequence[float], int, int, random.Random], list[int]]] = {
    SWISS: swiss_event,
    DUPLICATE: duplicate_event,
}


def run(
    pairs: int = PAIRS,
    rounds: int = ROUNDS,
    deals: int = DEALS_PER_ROUND,
    events: int = 10,
    seed: int = 1,
    progress: Callable[[str], None] | None = None,
) -> EventsFigures:
    """``events`` events of each format, each from its own seed; the figures."""
    errors = tuple(round(WORST_ERROR * p / max(1, pairs - 1), 3) for p in range(pairs))
    known = list(range(pairs))
    figures: list[FormatFigures] = []
    for name, event in FORMATS.items():
        taus: list[float] = []
        firsts = 0
        start = time.perf_counter()
        for number in range(events):
            ranked = event(errors, rounds, deals, random.Random(f"{seed}-{number}"))
            taus.append(kendall_tau(known, ranked))
            firsts += ranked[0] == 0
            if progress is not None:
                progress(f"{name}: event {number + 1}/{events}, tau {taus[-1]:+.2f}")
        figures.append(
            FormatFigures(
                name,
                events,
                rounds * deals,
                statistics.fmean(taus),
                statistics.stdev(taus) if len(taus) > 1 else 0.0,
                min(taus),
                max(taus),
                firsts,
                time.perf_counter() - start,
            )
        )
    return EventsFigures(pairs, errors, tuple(figures))
