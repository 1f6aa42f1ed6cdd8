"""``spades bench engine``: random legal hands through legal_actions + decide + evolve.

Each step asks :func:`domain.game.legal_actions` for the seat to act, picks one uniformly at
random, and applies it with :func:`domain.game.decide` and :func:`domain.game.evolve`: the same
code the engine service runs for every command, deal and score included. The peer is
OpenSpiel's C++ Spades (``pyspiel.load_game("spades")``, one hand per game) played the same way
from Python, measured in the same process and interleaved round by round.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import msgspec

from domain.commands import CreateGame, TakeSeat
from domain.dealing import SeededDeal
from domain.game import DiscardDue, PassDue, decide, evolve, legal_actions, seat_to_act
from domain.rules import MAX_POINTS
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
    for round_number in range(rounds):
        ours.append(play_hands(preset, hands, seed + round_number))
        peer = openspiel_hands(hands, seed + round_number)
        if peer is not None:
            theirs.append(peer)
        if progress is not None:
            line = f"round {round_number + 1}: {hands / ours[-1][0]:,.0f} hands/s"
            if peer is not None:
                line += f", OpenSpiel {hands / peer:,.0f} hands/s"
            progress(line)
    seconds, actions = min(ours)
    peer_rate = hands / min(theirs) if theirs else None
    rate = hands / seconds
    return EngineFigures(
        preset=preset,
        hands=hands,
        rounds=rounds,
        hands_per_s=round(rate, 1),
        actions_per_s=round(actions / seconds, 1),
        peer="open_spiel spades" if theirs else None,
        peer_hands_per_s=round(peer_rate, 1) if peer_rate else None,
        ratio=round(rate / peer_rate, 3) if peer_rate else None,
    )
