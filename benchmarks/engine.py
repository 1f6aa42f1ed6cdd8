"""``spades bench engine``: random legal hands through legal_actions + decide + evolve.

Each step asks :func:`domain.game.legal_actions` for the seat to act, picks one uniformly at
random, and applies it with :func:`domain.game.decide` and :func:`domain.game.evolve`: the same
code the engine service runs for every command, deal and score included. The peer is
OpenSpiel's C++ Spades (``pyspiel.load_game("spades")``, one hand per game) played the same way
from Python, measured in the same process and interleaved round by round.

Beside them, the floor of the harness (:func:`loop_floor`): the same loop with every rule
answered by a stand-in that does nothing, over hands of the same shape (as many actions, as many
choices each). It is what an engine whose rules cost nothing would reach here, and so what is
left for the rules: to match OpenSpiel, a hand's rules must fit in the time between the floor's
hand and OpenSpiel's (:attr:`EngineFigures.budget_us_per_action`, an action at a time).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import msgspec

from domain.commands import CreateGame, TakeSeat
from domain.game import DiscardDue, PassDue, decide, evolve, legal_actions, seat_to_act
from domain.rules import MAX_POINTS
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held


class EngineFigures(msgspec.Struct):
    preset: str
    hands: int
    rounds: int
    hands_per_s: float
    actions_per_s: float
    peer: str | None
    peer_hands_per_s: float | None
    ratio: float | None
    floor_hands_per_s: float
    """The harness with rules that cost nothing (:func:`loop_floor`)."""
    floor_ratio: float | None
    """The floor's hands/s over OpenSpiel's: the most any engine reaches in this harness."""
    rules_us_per_action: float
    """Our rules' time an action: our hand's time less the floor's, over its actions."""
    budget_us_per_action: float | None
    """The time an action the rules may take to match OpenSpiel: its hand's time less the
    floor's, over our hand's actions."""


def new_game(preset: str, rng: random.Random) -> Game:
    """A game of ``preset`` that never ends, every seat taken and the first hand dealt."""
    game: Game | None = None
    for event in decide(game, CreateGame("bench", {"preset": preset, "target": MAX_POINTS})):
        game = evolve(game, event)
    assert game is not None
    for seat in range(game.rules.players):
        deal = SeededDeal(rng.randbytes(32))
        for event in decide(game, TakeSeat(f"player {seat}"), deal=deal):
            game = evolve(game, event)
    return game


def play_hands(preset: str, hands: int, seed: int) -> tuple[float, int]:
    """Play ``hands`` random legal hands; return (seconds, actions)."""
    rng = random.Random(seed)
    game = new_game(preset, rng)
    choice = rng.choice
    deal = SeededDeal(rng.randbytes(32))
    target = game.hands_played + hands
    actions = 0
    start = time.perf_counter()
    while game.hands_played < target:
        seat = seat_to_act(game)
        assert seat is not None
        action: Any = choice(legal_actions(game, seat))
        kind = type(action)
        if kind is PassDue or kind is DiscardDue:
            hand = game.hand
            assert hand is not None
            action = action.choose(tuple(rng.sample(cards_held(hand, seat), action.count)))
        played = game.hands_played
        for event in decide(game, action, deal=deal):
            game = evolve(game, event)
        if game.hands_played != played:
            deal = SeededDeal(rng.randbytes(32))
        actions += 1
    return time.perf_counter() - start, actions


def hand_shape(preset: str, seed: int) -> list[int]:
    """How many legal actions the seat to act had at each action of one random hand."""
    rng = random.Random(seed)
    game = new_game(preset, rng)
    deal = SeededDeal(rng.randbytes(32))
    played = game.hands_played
    sizes: list[int] = []
    while game.hands_played == played:
        seat = seat_to_act(game)
        assert seat is not None
        assert game.hand is not None
        choices = legal_actions(game, seat)
        sizes.append(len(choices))
        action: Any = rng.choice(choices)
        if isinstance(action, (PassDue, DiscardDue)):
            action = action.choose(tuple(rng.sample(cards_held(game.hand, seat), action.count)))
        for event in decide(game, action, deal=deal):
            game = evolve(game, event)
    return sizes


class _Table:
    """The floor's game: where it is in the hand's shape, and how many hands it has played."""

    def __init__(self, shape: list[int]) -> None:
        self.choices = [list(range(size)) for size in shape]
        self.step = 0
        self.hands_played = 0


def _seat(table: _Table) -> int:
    return table.step % 4


def _legal(table: _Table, seat: int) -> list[int]:
    return table.choices[table.step]


def _decide(table: _Table, action: int, deal: object) -> tuple[int]:
    return (action,)


def _evolve(table: _Table, event: int) -> _Table:
    table.step += 1
    if table.step == len(table.choices):
        table.step = 0
        table.hands_played += 1
    return table


def loop_floor(shape: list[int], hands: int, seed: int) -> float:
    """Seconds for :func:`play_hands`' own loop to play ``hands`` hands of ``shape`` when every
    rule (the seat to act, the legal actions, the decision, the fold) is a stand-in that does
    nothing: the same calls an action, the same random choice among as many actions."""
    rng = random.Random(seed)
    table = _Table(shape)
    choice = rng.choice
    seat_of, legal, decide_, evolve_ = _seat, _legal, _decide, _evolve
    target = table.hands_played + hands
    deal = rng.randbytes(32)
    actions = 0
    start = time.perf_counter()
    while table.hands_played < target:
        seat = seat_of(table)
        action: Any = choice(legal(table, seat))
        kind = type(action)
        if kind is PassDue or kind is DiscardDue:
            raise AssertionError("the floor's actions are numbers")
        played = table.hands_played
        for event in decide_(table, action, deal=deal):
            table = evolve_(table, event)
        if table.hands_played != played:
            deal = rng.randbytes(32)
        actions += 1
    return time.perf_counter() - start


def openspiel_hands(hands: int, seed: int) -> float | None:
    """Seconds for OpenSpiel to play ``hands`` uniformly random hands, or None if absent."""
    try:
        import pyspiel
    except ImportError:
        return None
    rng = random.Random(seed)
    spades = pyspiel.load_game("spades")
    choice = rng.choice
    start = time.perf_counter()
    for _ in range(hands):
        state = spades.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(choice(state.chance_outcomes())[0])
            else:
                state.apply_action(choice(state.legal_actions()))
    return time.perf_counter() - start


def run(
    preset: str,
    hands: int,
    seed: int,
    rounds: int = 3,
    progress: Callable[[str], None] | None = None,
) -> EngineFigures:
    """Best of ``rounds`` interleaved rounds of ours and the peer's (the machine is noisy)."""
    ours: list[tuple[float, int]] = []
    theirs: list[float] = []
    floors: list[float] = []
    shape = hand_shape(preset, seed)
    for round_number in range(rounds):
        ours.append(play_hands(preset, hands, seed + round_number))
        floors.append(loop_floor(shape, hands, seed + round_number))
        peer = openspiel_hands(hands, seed + round_number)
        if peer is not None:
            theirs.append(peer)
        if progress is not None:
            line = f"round {round_number + 1}: {hands / ours[-1][0]:,.0f} hands/s"
            if peer is not None:
                line += f", OpenSpiel {hands / peer:,.0f} hands/s"
            progress(f"{line}, the harness alone {hands / floors[-1]:,.0f} hands/s")
    seconds, actions = min(ours)
    peer_rate = hands / min(theirs) if theirs else None
    rate = hands / seconds
    floor = min(floors)
    per_action = 1e6 / actions  # microseconds an action, from seconds for all the hands
    return EngineFigures(
        preset=preset,
        hands=hands,
        rounds=rounds,
        hands_per_s=round(rate, 1),
        actions_per_s=round(actions / seconds, 1),
        peer="open_spiel spades" if theirs else None,
        peer_hands_per_s=round(peer_rate, 1) if peer_rate else None,
        ratio=round(rate / peer_rate, 3) if peer_rate else None,
        floor_hands_per_s=round(hands / floor, 1),
        floor_ratio=round(hands / floor / peer_rate, 3) if peer_rate else None,
        rules_us_per_action=round((seconds - floor) * per_action, 2),
        budget_us_per_action=round((min(theirs) - floor) * per_action, 2) if theirs else None,
    )
