"""The ``decision_times`` signal on leagues whose clocks we make: a pair that slows down
together (talking out of band) stands out from tables that are slow together anyway."""

from __future__ import annotations

import random

from services.integrity.signals import HandFacts, report
from services.integrity.significance import benjamini_hochberg
from services.integrity.timing import MIN_SHARED_HANDS, decision_times

PLAYERS = [f"p{n}" for n in range(9)]
TALKERS = ("p0", "p1")


def league(hands: int, seed: int, talk: float) -> list[HandFacts]:
    """Cutthroat hands at tables of three drawn at random. Every player has a pace of its own,
    every hand a pace of its table (hard cards, a slow link), every decision its noise; when
    both talkers sit at a table, on a ``talk`` share of its hands both wait on each other."""
    rng = random.Random(seed)
    own = {player: rng.uniform(1.0, 6.0) for player in PLAYERS}
    made = []
    for number in range(hands):
        seated = tuple(rng.sample(PLAYERS, 3))
        table = rng.lognormvariate(0.0, 0.4)
        talking = set(TALKERS) <= set(seated) and rng.random() < talk
        seconds = tuple(
            tuple(
                own[player]
                * table
                * rng.lognormvariate(0.0, 0.5)
                * (2.5 if talking and player in TALKERS else 1.0)
                for _ in range(17)
            )
            for player in seated
        )
        made.append(
            HandFacts(
                game_id=f"g{number}",
                hand=1,
                players=seated,
                units=((0,), (1,), (2,)),
                points=(0, 0, 0),
                seconds=seconds,
            )
        )
    return made


def flagged(hands: list[HandFacts], fdr: float = 0.01) -> set[tuple[str, str]]:
    signals = decision_times(hands)
    adjusted = benjamini_hochberg([signal.p_value for signal in signals])
    return {signal.players for signal, q in zip(signals, adjusted, strict=True) if q <= fdr}


def test_talkers_who_slow_down_together_are_flagged_and_nobody_else() -> None:
    for seed in range(5):
        assert flagged(league(900, seed, talk=0.1)) == {TALKERS}, seed


def test_tables_slow_together_flag_no_one() -> None:
    honest = [flagged(league(900, seed, talk=0.0)) for seed in range(10)]
    assert honest == [set()] * 10


def test_the_evidence_is_the_shared_hands_slowest_first() -> None:
    hands = league(900, 1, talk=0.1)
    pair = next(signal for signal in decision_times(hands) if signal.players == TALKERS)
    shared = [h for h in hands if set(TALKERS) <= set(h.players)]
    assert pair.count == len(shared) >= MIN_SHARED_HANDS
    assert sorted(pair.evidence) == sorted((h.game_id, h.hand) for h in shared)
    slowest = max(shared, key=lambda h: sum(map(sum, h.seconds)))
    assert pair.evidence.index((slowest.game_id, slowest.hand)) < len(shared) // 4


def test_partners_and_seats_the_service_played_are_not_read() -> None:
    hands = [
        HandFacts(
            game_id=f"g{n}",
            hand=1,
            players=("a", "b", "c", "d"),
            units=((0, 2), (1, 3)),
            points=(0, 0),
            seconds=((1.0 + n % 3, 2.0), (), (1.0 + n % 3, 2.5), (3.0, 1.0 + n % 5)),
        )
        for n in range(MIN_SHARED_HANDS + 5)
    ]
    pairs = {signal.players for signal in decision_times(hands)}
    assert ("a", "c") not in pairs  # partners
    assert not any("b" in pair for pair in pairs)  # the service played b's seat
    assert pairs == {("a", "d"), ("c", "d")}


def test_the_report_carries_decision_times_with_the_other_signals() -> None:
    signals = report(league(900, 2, talk=0.1))
    timed = [signal for signal in signals if signal.signal == "decision_times"]
    assert {signal.players for signal in timed if signal.flagged} == {TALKERS}
    flagged = next(signal for signal in timed if signal.flagged)
    assert flagged.evidence  # the hands to replay, the slowest first
    assert report(league(300, 2, talk=0.1)[:0]) == []
