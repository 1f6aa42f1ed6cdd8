"""``spades bench integrity``: do the collusion signals catch a planted pair, and spare the rest?

A league of bots plays cutthroat (three seats, no partners), in process through
:func:`domain.game.decide` and :func:`domain.game.evolve`, in rounds: each round the players are
drawn at random to tables, and each table plays one short game. In a colluding league two of
the players are :class:`Colluder` bots: on a share of the hands (the ``strength``) each plays as
though the other were its partner, with the bots' own partnership play (let the partner's
winning card stand, cover its nil, set the others together). Everything else, the bidding
included, is the honest bot's. Honest leagues hold the same bots, none colluding.

After every checkpoint (hands played per player), :func:`services.integrity.signals.pair_signals`
reads the league's hand records so far, and the figures say which pairs it flagged: the share of
colluding pairs flagged, and of honest pairs (in honest leagues, and the innocent pairs of
colluding leagues).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from domain.cards import CARDS
from domain.commands import CreateGame, TakeSeat, from_api
from domain.game import decide, evolve, seat_to_act
from domain.records import HandRecorder
from domain.rules import resolve_rules
from domain.shuffle import SeededDeal
from domain.state import Game
from domain.table import Table
from domain.views import event_for, seat_view
from services.bots.play import choose_card
from services.bots.situation import read_situation
from services.bots.strategy import Bot, Player, View, as_json
from services.integrity.signals import FDR, SeatedHand, flagged_pairs, pair_signals

PRESET = "cutthroat"
GAME_HANDS = 10
"""Hands in one game of the league (``max_hands``): short games, so that seats are redrawn often."""
CHECKPOINTS = (50, 100, 200, 300)
STRENGTHS = (1.0, 0.5, 0.25)
COLLUDERS = ("p0", "p1")


class AlliedTable(Table):
    """A cutthroat table as two colluders see it: the pair is one unit, each the other's
    partner."""

    __slots__ = ("allies",)

    allies: dict[int, int]

    def partner_of(self, seat: int) -> int | None:
        return self.allies.get(seat)


_ALLIED: dict[tuple[int, int, int], AlliedTable] = {}


def allied_table(table: Table, seat: int, ally: int) -> AlliedTable:
    """``table`` with ``seat`` and ``ally`` made partners (one per table and pair, so that the
    bots' caches keyed by table stay small)."""
    key = (id(table), min(seat, ally), max(seat, ally))
    if key not in _ALLIED:
        allied = AlliedTable.__new__(AlliedTable)
        for slot in Table.__slots__:
            setattr(allied, slot, getattr(table, slot))
        pair = (min(seat, ally), max(seat, ally))
        allied.units = (pair, *((s,) for s in range(table.players) if s not in pair))
        allied.unit_of = tuple(
            next(u for u, seats in enumerate(allied.units) if s in seats)
            for s in range(table.players)
        )
        allied.allies = {seat: ally, ally: seat}
        _ALLIED[key] = allied
    return _ALLIED[key]


class Colluder(Bot):
    """The honest bot, but on a ``strength`` share of the hands it plays its cards as the
    partner of the seat ``ally``."""

    def __init__(self, ally: int, strength: float, rng: random.Random) -> None:
        super().__init__()
        self.ally = ally
        self.strength = strength
        self.rng = rng
        self._hands: dict[int, bool] = {}

    def colluding(self, hand_number: int) -> bool:
        if hand_number not in self._hands:
            self._hands[hand_number] = self.rng.random() < self.strength
        return self._hands[hand_number]

    def act(self, view: View) -> dict[str, Any] | None:
        data = as_json(view)
        plays = any(action["type"] == "play" for action in data["legal"])
        if not plays or not self.colluding(int(data["hand_number"])):
            return super().act(data)
        sit = read_situation(data, self.memory, self._rules_of(data["rules"]))
        sit = msgspec.structs.replace(sit, table=allied_table(sit.table, sit.seat, self.ally))
        return {"type": "play", "card": CARDS[choose_card(sit)].value}


def play_league_game(
    game_id: str,
    names: Sequence[str],
    players: Sequence[Player],
    rng: random.Random,
    rules: Mapping[str, Any],
) -> list[SeatedHand]:
    """One game to its end; its hands as the integrity signals read them."""
    game: Game | None = None
    for event in decide(game, CreateGame(game_id, dict(rules))):
        game = evolve(game, event)
    assert game is not None
    for seat in range(game.rules.players):
        for event in decide(game, TakeSeat(names[seat]), deal=SeededDeal(rng.randbytes(32))):
            game = evolve(game, event)
    deal = SeededDeal(rng.randbytes(32))
    recorder = HandRecorder()
    hands: list[SeatedHand] = []
    while game.status != "finished":
        turn = seat_to_act(game)
        assert turn is not None
        action = players[turn].act(msgspec.to_builtins(seat_view(game, turn)))
        if action is None:
            raise RuntimeError(f"seat {turn} must act in {game.hand} but did not")
        played = game.hands_played
        for event in decide(game, from_api(turn, action), deal=deal):
            game = evolve(game, event)
            for reader, player in enumerate(players):
                player.observe(event_for(event, reader))
            record = recorder.feed(event)
            if record is not None:
                hands.append(
                    SeatedHand(
                        game_id=game_id, rules=game.rules, players=tuple(names), record=record
                    )
                )
        if game.hands_played != played:
            deal = SeededDeal(rng.randbytes(32))
    return hands


def play_league(size: int, hands_each: int, seed: int, strength: float | None) -> list[SeatedHand]:
    """A league of ``size`` players (a multiple of three) until each has played about
    ``hands_each`` hands; ``p0`` and ``p1`` collude at ``strength`` (None: an honest league)."""
    rules = {"preset": PRESET, "max_hands": GAME_HANDS}
    seats = resolve_rules(rules).players
    rng = random.Random(f"integrity {seed} {strength}")
    names = [f"p{number}" for number in range(size)]
    hands: list[SeatedHand] = []
    games = 0
    while len(hands) * seats < hands_each * size:
        drawn = rng.sample(names, size)
        for start in range(0, size, seats):
            at = drawn[start : start + seats]
            players = [_player(name, at, strength, rng) for name in at]
            games += 1
            hands += play_league_game(f"s{seed}-g{games}", at, players, rng, rules)
    return hands


def _player(name: str, at: Sequence[str], strength: float | None, rng: random.Random) -> Player:
    if strength is None or name not in COLLUDERS:
        return Bot()
    ally = next(other for other in COLLUDERS if other != name)
    if ally not in at:
        return Bot()
    return Colluder(at.index(ally), strength, random.Random(rng.random()))


class CheckpointFigures(msgspec.Struct, frozen=True):
    """At one number of hands per player, over every league of one kind."""

    strength: float | None
    """How often the colluders collude; None for the honest leagues."""
    hands_each: int
    leagues: int
    colluding_flagged: int
    """Colluding pairs flagged (one per colluding league)."""
    honest_pairs: int
    honest_flagged: int
    signals: dict[str, int]
    """How many colluding pairs each signal flagged."""
    honest_signals: dict[str, int]
    """How many honest pairs each signal flagged."""


def checkpoints(
    hands: Sequence[SeatedHand], size: int, strength: float | None, fdr: float
) -> list[tuple[int, set[tuple[str, str]], dict[str, int]]]:
    """(Hands each, the pairs flagged, how many flags each signal raised on the colluders and
    on honest pairs, as ``colluders:NAME`` and ``honest:NAME``) at each checkpoint, reading the
    league's first hands only."""
    seats = resolve_rules({"preset": PRESET}).players
    found: list[tuple[int, set[tuple[str, str]], dict[str, int]]] = []
    for hands_each in CHECKPOINTS:
        upto = hands[: hands_each * size // seats]
        signals = pair_signals(upto, fdr)
        caught: dict[str, int] = {}
        for signal in signals:
            if signal.flagged:
                ours = tuple(sorted(signal.players)) == COLLUDERS
                side = "colluders" if strength and ours else "honest"
                key = f"{side}:{signal.signal}"
                caught[key] = caught.get(key, 0) + 1
        found.append((hands_each, flagged_pairs(signals), caught))
    return found


@dataclass
class _Tally:
    colluding_flagged: int = 0
    honest_pairs: int = 0
    honest_flagged: int = 0
    signals: dict[str, int] = field(default_factory=dict)
    honest_signals: dict[str, int] = field(default_factory=dict)


def run(
    size: int = 6,
    seeds: int = 4,
    strengths: Sequence[float] = STRENGTHS,
    honest_seeds: int | None = None,
    fdr: float = FDR,
    progress: Callable[[str], None] | None = None,
) -> list[CheckpointFigures]:
    """Colluding leagues at each strength and honest leagues, ``seeds`` of each (the honest
    ones ``honest_seeds``, by default twice as many), read at every checkpoint."""
    kinds: list[tuple[float | None, int]] = [(s, seeds) for s in strengths]
    kinds.append((None, honest_seeds if honest_seeds is not None else 2 * seeds))
    pairs = size * (size - 1) // 2
    figures: list[CheckpointFigures] = []
    for strength, count in kinds:
        tallies = {h: _Tally() for h in CHECKPOINTS}
        for seed in range(count):
            start = time.perf_counter()
            hands = play_league(size, max(CHECKPOINTS), seed, strength)
            for hands_each, flagged, caught in checkpoints(hands, size, strength, fdr):
                tally = tallies[hands_each]
                if strength is None:
                    tally.honest_pairs += pairs
                    tally.honest_flagged += len(flagged)
                else:
                    tally.colluding_flagged += COLLUDERS in flagged
                    tally.honest_pairs += pairs - 1
                    tally.honest_flagged += len(flagged - {COLLUDERS})
                for key, flags in caught.items():
                    side, signal = key.split(":")
                    kept = tally.signals if side == "colluders" else tally.honest_signals
                    kept[signal] = kept.get(signal, 0) + flags
            if progress is not None:
                progress(
                    f"strength {strength}, seed {seed}: {len(hands)} hands"
                    f" in {time.perf_counter() - start:.1f} s"
                )
        done = [
            CheckpointFigures(
                strength=strength,
                hands_each=hands_each,
                leagues=count,
                colluding_flagged=tally.colluding_flagged,
                honest_pairs=tally.honest_pairs,
                honest_flagged=tally.honest_flagged,
                signals=tally.signals,
                honest_signals=tally.honest_signals,
            )
            for hands_each, tally in tallies.items()
        ]
        figures += done
        if progress is not None:
            for row in done:
                progress(msgspec.json.encode(row).decode())
    return figures
