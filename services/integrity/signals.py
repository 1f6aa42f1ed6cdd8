"""Collusion signals per pair of players, over a league's finished hands.

Pure functions in two steps. :func:`hand_facts` reads one finished hand (its record, with the
game, its rules and who sat where: :class:`SeatedHand`) into the few facts the signals need
(:class:`HandFacts`: who sat where and with whom, the points, the chances to take), and no card;
:func:`report` reads a league's facts into the signals. The ``integrity`` read model keeps the
facts as hands end (the cards never leave the sealed hands in progress); ``spades bench
integrity`` goes through :func:`pair_signals`, the same two steps in one.

Every signal compares a pair with the field and gives an effect size and a one-sided p-value;
:func:`report` then adjusts all the p-values of a league together (Benjamini-Hochberg), so that
among many honest pairs one does not flag by chance. A flagged signal names the hands that
carry its evidence.

The card signals rest on one kind of moment, a **chance to take**: a trick in which an
opponent's card is winning, and the seat to play holds a legal card that beats it. What the
seat does with it is weighed by what the trick means to the opponent winning it:

- ``free_sets_declined``: the opponent still needs tricks for its contract, and the seat, which
  needs tricks too, lets it have this one (a trick that was the seat's own gain and could have
  helped set the opponent);
- ``bags_fed``: the opponent has made its contract, and the seat, which still needs tricks,
  lets it take one more (a bag, given at the seat's own cost);
- ``nils_covered``: the opponent bid nil and has taken nothing yet, and the seat plays over it
  (saving the nil an opponent should break).

Each compares how often A does that to B, and B to A, with how often each does it to everyone
else: a player's own style (cautious, bag-averse) cancels out, what is left is the pair.
``sets`` (who sets whom) points one way: of the hands where A could take tricks V needed, how
often A took one and V ended set, against A's same rate towards everyone else; a victim singled
out shows there.

Two more signals read scores and seats: ``shared_table_lift`` (the pair's points at the tables
they share, above what each scores at tables without the other: their own rating, read from
the records, in place of a rating service), and ``co_seating`` (games shared, against what the
schedule's draw would give). ``decision_times`` (:mod:`.timing`) reads how two opponents' pace
moves together hand by hand, from the decision times the read model keeps of each hand (a hand
record alone carries no clock).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

import msgspec

from contracts.leagues import Signal
from domain.bids import is_nil, tricks_bid
from domain.records import HandRecord
from domain.rules import Rules
from domain.table import Table, table_for
from services.integrity.significance import (
    benjamini_hochberg,
    binomial_greater,
    fisher_greater,
    mean_above_zero,
)
from services.integrity.timing import decision_times

Moment = Literal["set", "bag", "nil"]
"""What a trick meant to the opponent winning it: it still needed tricks, it had made its
contract, or it was on a live nil."""

CARD_SIGNALS: dict[Signal, tuple[Moment, bool, bool]] = {
    "free_sets_declined": ("set", True, False),
    "bags_fed": ("bag", True, False),
    "nils_covered": ("nil", False, True),
}
"""Per card signal: the moment it reads, whether it reads only the chances at which the actor
itself still needed tricks, and whether the suspect act is taking (else letting the trick go).
Letting a trick go is ordinary play once one's own contract is made (bags cost points): only
while the actor still needs tricks is it a gift, and there honest play rarely makes it."""

FDR = 0.01
"""The false discovery rate a signal is flagged at, over every pair and signal of a league."""
MIN_CHANCES = 5
"""Fewer chances between a pair than this say nothing: the signal is left untested (p = 1)."""
MIN_SHARED_HANDS = 10
EVIDENCE = 20
"""Hands listed per flagged signal, first ones first."""


class SeatedHand(msgspec.Struct, frozen=True, kw_only=True):
    """One finished hand, with what the record alone does not say: the game, its rules and
    the player in each seat."""

    game_id: str
    rules: Rules
    players: tuple[str, ...]
    record: HandRecord


class HandRef(msgspec.Struct, frozen=True, order=True):
    """A hand to look at: its game and number (a replay page's address)."""

    game_id: str
    hand: int


class PairSignal(msgspec.Struct, frozen=True, kw_only=True):
    """One signal of one pair. ``observed`` and ``expected`` are in the signal's unit (a rate
    of chances, points a hand, games shared); ``effect`` is observed less expected (a ratio
    for ``co_seating``)."""

    signal: Signal
    players: tuple[str, str]
    observed: float
    expected: float
    effect: float
    count: int
    """Chances, shared hands or shared games behind the figure."""
    p_value: float
    q_value: float = 1.0
    flagged: bool = False
    evidence: list[HandRef] = []


class Chance(msgspec.Struct, array_like=True):
    """A chance to take: ``actor`` could beat ``target``'s winning card, and did or not. It
    names no card (kept as an array: a league's hands hold many)."""

    actor: str
    target: str
    moment: Moment
    took: bool
    where: HandRef
    target_set: bool = False
    """Whether the target's side ended the hand short of its contract."""
    actor_short: bool = False
    """Whether the actor's own side still needed tricks for its contract at the time."""


class HandFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the signals read of one finished hand: who sat where, which seats were partners,
    each unit's points and the hand's chances to take. No card: what is kept of a league's
    hands (the ``integrity`` read model) shows nothing a replay does not."""

    game_id: str
    hand: int
    players: tuple[str, ...]
    units: tuple[tuple[int, ...], ...]
    """The seats of each unit (a team, or one seat without partners)."""
    points: tuple[int, ...]
    """Each unit's points in the hand."""
    chances: tuple[Chance, ...] = ()
    seconds: tuple[tuple[float, ...], ...] = ()
    """Each seat's decisions in the hand, in seconds (from the commit before it to the seat's
    own), none for a move the service made; empty where the times are not known (a hand
    record alone carries no clock)."""

    @property
    def where(self) -> HandRef:
        return HandRef(self.game_id, self.hand)

    def unit_of(self, seat: int) -> int:
        return next(unit for unit, seats in enumerate(self.units) if seat in seats)


def hand_facts(hand: SeatedHand, seconds: Sequence[Sequence[float]] = ()) -> HandFacts:
    """The facts of one finished hand (its chances read from the cards each seat held), with
    each seat's decision times when they are known."""
    return HandFacts(
        game_id=hand.game_id,
        hand=hand.record.hand,
        players=hand.players,
        units=table_for(hand.rules).units,
        points=tuple(hand.record.points),
        chances=tuple(chances_to_take(hand)),
        seconds=tuple(tuple(times) for times in seconds),
    )


# ----------------------------------------------------------------------------- chances


def chances_to_take(hand: SeatedHand) -> list[Chance]:
    """Every chance to take in a hand, trick by trick, from the cards each seat then held.

    Not a chance: a play the service made for a seat whose clock ran out, and any play under
    ``must_beat``, where beating is the rule rather than a choice."""
    record, table = hand.record, table_for(hand.rules)
    if hand.rules.must_beat:
        return []
    held = _holdings(record)
    taken = [0] * table.players
    where = HandRef(hand.game_id, record.hand)
    forced = {(m.seat, m.trick) for m in record.timed_out if m.move == "play"}
    found: list[Chance] = []
    for number, trick in enumerate(record.tricks, start=1):
        cards = [(played.seat, played.card.ordinal) for played in trick.cards]
        for position, (seat, card) in enumerate(cards):
            if position and (seat, number) not in forced:
                winner, winning = _winning(table, cards[:position])
                moment = _moment(table, record, taken, winner)
                beaters = _beaters(table, held[seat], cards[0][1], winning)
                if table.unit_of[winner] != table.unit_of[seat] and beaters and moment:
                    took = table.beats(card, winning)
                    short = _moment(table, record, taken, seat) == "set"
                    found.append(
                        Chance(
                            hand.players[seat],
                            hand.players[winner],
                            moment,
                            took,
                            where,
                            actor_short=short,
                        )
                    )
            held[seat][card] -= 1
        taken[trick.winner] += 1
    for chance in found:
        seat = hand.players.index(chance.target)
        chance.target_set = _moment(table, record, taken, seat) == "set"
    return found


def _holdings(record: HandRecord) -> list[Counter[int]]:
    """Each seat's cards once passes and the dealer's discard are made (copies counted, for
    two decks)."""
    held = [Counter(card.ordinal for card in cards) for cards in record.deal.hands]
    for discarded in record.discards:
        held[discarded.seat].subtract(card.ordinal for card in discarded.cards)
    for passed in record.passes:
        for card in passed.cards:
            held[passed.from_seat][card.ordinal] -= 1
            held[passed.to][card.ordinal] += 1
    return held


def _winning(table: Table, cards: Sequence[tuple[int, int]]) -> tuple[int, int]:
    seat, winning = cards[0]
    for other_seat, other in cards[1:]:
        if table.beats(other, winning):
            seat, winning = other_seat, other
    return seat, winning


def _beaters(table: Table, held: Counter[int], led: int, winning: int) -> list[int]:
    """The cards held that may legally be played and beat ``winning`` (following suit when
    the seat can: a renege is never counted as a choice)."""
    cards = [card for card, copies in held.items() if copies > 0]
    suit = table.suit_of[led]
    following = [card for card in cards if table.suit_of[card] == suit]
    return [card for card in following or cards if table.beats(card, winning)]


def _moment(table: Table, record: HandRecord, taken: list[int], seat: int) -> Moment | None:
    bid = record.bids[seat] if seat < len(record.bids) else None
    if bid is None:
        return None  # a hand without bidding: no contract to set or to feed
    if is_nil(bid):
        return "nil" if taken[seat] == 0 else None
    unit = table.units[table.unit_of[seat]]
    contract = sum(tricks_bid(record.bids[s]) for s in unit)
    made = sum(taken[s] for s in unit if not is_nil(record.bids[s]))
    return "set" if made < contract else "bag"


# ----------------------------------------------------------------------------- signals


def pair_signals(hands: Iterable[SeatedHand], fdr: float = FDR) -> list[PairSignal]:
    """:func:`report` of the hands' facts."""
    return report([hand_facts(hand) for hand in hands], fdr)


def report(facts: Iterable[HandFacts], fdr: float = FDR) -> list[PairSignal]:
    """Every signal of every pair of players who sat together as opponents, with p-values
    adjusted over them all and flagged at ``fdr``."""
    facts = list(facts)
    chances = [chance for hand in facts for chance in hand.chances]
    signals = (
        who_sets_whom(chances)
        + card_signals(chances)
        + shared_table_lift(facts)
        + co_seating(facts)
        + timing_signals(facts)
    )
    adjusted = benjamini_hochberg([signal.p_value for signal in signals])
    return [
        msgspec.structs.replace(
            signal,
            q_value=q,
            flagged=q <= fdr,
            evidence=signal.evidence[:EVIDENCE] if q <= fdr else [],
        )
        for signal, q in zip(signals, adjusted, strict=True)
    ]


def timing_signals(facts: Sequence[HandFacts]) -> list[PairSignal]:
    """``decision_times`` of every two opponents with enough timed hands shared
    (:mod:`services.integrity.timing`)."""
    return [
        PairSignal(
            signal="decision_times",
            players=found.players,
            observed=found.observed,
            expected=found.expected,
            effect=found.effect,
            count=found.count,
            p_value=found.p_value,
            evidence=[HandRef(game_id, hand) for game_id, hand in found.evidence],
        )
        for found in decision_times(facts)
    ]


def flagged_pairs(signals: Iterable[PairSignal]) -> set[tuple[str, str]]:
    """The pairs with at least one flagged signal (in name order, whichever way it points)."""
    return {_pair(*signal.players) for signal in signals if signal.flagged}


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


@dataclass
class _Tally:
    acts: int = 0
    chances: int = 0
    evidence: list[HandRef] = field(default_factory=list)


def card_signals(chances: Sequence[Chance]) -> list[PairSignal]:
    """The three card signals of every pair with chances between them: A's and B's suspect
    acts towards each other against their suspect acts towards everyone else (Fisher's exact
    test, one-sided: more often within the pair)."""
    signals: list[PairSignal] = []
    for signal, (moment, when_short, suspect) in CARD_SIGNALS.items():
        between: dict[tuple[str, str], _Tally] = defaultdict(_Tally)
        by_actor: dict[str, _Tally] = defaultdict(_Tally)
        towards: dict[tuple[str, str], _Tally] = defaultdict(_Tally)
        for chance in chances:
            if chance.moment != moment or (when_short and not chance.actor_short):
                continue
            act = chance.took == suspect
            for tally in (
                between[_pair(chance.actor, chance.target)],
                by_actor[chance.actor],
                towards[(chance.actor, chance.target)],
            ):
                tally.acts += act
                tally.chances += 1
            if act:
                between[_pair(chance.actor, chance.target)].evidence.append(chance.where)
        for (a, b), tally in sorted(between.items()):
            others_acts = sum(by_actor[p].acts - towards[(p, q)].acts for p, q in ((a, b), (b, a)))
            others = sum(by_actor[p].chances - towards[(p, q)].chances for p, q in ((a, b), (b, a)))
            signals.append(_rates(signal, (a, b), tally, others_acts, others))
    return signals


def who_sets_whom(chances: Sequence[Chance]) -> list[PairSignal]:
    """Per setter and victim (in that order): of the hands in which A could take a trick from
    V while V still needed it, the share in which A took one and V ended set, against the same
    share of A towards everyone else (Fisher's exact test, one-sided). It points at a victim:
    the pair it names is the setter and the set, not two allies."""
    hands: dict[tuple[str, str], dict[HandRef, bool]] = defaultdict(dict)
    for chance in chances:
        if chance.moment == "set":
            seen = hands[(chance.actor, chance.target)]
            seen[chance.where] = seen.get(chance.where, False) or (
                chance.took and chance.target_set
            )
    signals: list[PairSignal] = []
    for (actor, target), outcome in sorted(hands.items()):
        within = _Tally(
            acts=sum(outcome.values()),
            chances=len(outcome),
            evidence=[where for where, set_ in outcome.items() if set_],
        )
        others = [seen for (a, t), seen in hands.items() if a == actor and t != target]
        acts = sum(sum(seen.values()) for seen in others)
        count = sum(len(seen) for seen in others)
        signals.append(_rates("sets", (actor, target), within, acts, count))
    return signals


def _rates(
    signal: Signal, players: tuple[str, str], within: _Tally, acts: int, chances: int
) -> PairSignal:
    observed = within.acts / within.chances
    expected = acts / chances if chances else 0.0
    tested = within.chances >= MIN_CHANCES and chances >= MIN_CHANCES
    p_value = (
        fisher_greater(within.acts, within.chances - within.acts, acts, chances - acts)
        if tested
        else 1.0
    )
    return PairSignal(
        signal=signal,
        players=players,
        observed=round(observed, 4),
        expected=round(expected, 4),
        effect=round(observed - expected, 4),
        count=within.chances,
        p_value=p_value,
        evidence=sorted(set(within.evidence)),
    )


def _points_by_player(hand: HandFacts) -> dict[str, int]:
    return {player: hand.points[hand.unit_of(seat)] for seat, player in enumerate(hand.players)}


def shared_table_lift(hands: Sequence[HandFacts]) -> list[PairSignal]:
    """How many more points a hand the pair scores together at tables they share as opponents
    than each scores at tables without the other (a z-test of the mean lift, one-sided)."""
    points = [_points_by_player(hand) for hand in hands]
    totals: dict[str, list[int]] = defaultdict(list)
    for scored in points:
        for player, gained in scored.items():
            totals[player].append(gained)
    shared: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, hand in enumerate(hands):
        for (sa, a), (sb, b) in combinations(enumerate(hand.players), 2):
            if hand.unit_of(sa) != hand.unit_of(sb):
                shared[_pair(a, b)].append(index)
    signals = []
    for (a, b), at in sorted(shared.items()):
        if len(at) < MIN_SHARED_HANDS:
            continue
        pair_a = [points[index][a] for index in at]
        pair_b = [points[index][b] for index in at]
        alone_a = _mean_without(totals[a], pair_a)
        alone_b = _mean_without(totals[b], pair_b)
        if alone_a is None or alone_b is None:
            continue
        lifts = [pa - alone_a + pb - alone_b for pa, pb in zip(pair_a, pair_b, strict=True)]
        mean, p_value = mean_above_zero(lifts)
        evidence = sorted(
            hands[index].where for index, lift in zip(at, lifts, strict=True) if lift > 0
        )
        signals.append(
            PairSignal(
                signal="shared_table_lift",
                players=(a, b),
                observed=round(mean + alone_a + alone_b, 2),
                expected=round(alone_a + alone_b, 2),
                effect=round(mean, 2),
                count=len(at),
                p_value=p_value,
                evidence=evidence,
            )
        )
    return signals


def _mean_without(every: list[int], some: list[int]) -> float | None:
    """The mean of ``every`` less the values of ``some`` (a sub-list of it)."""
    rest = len(every) - len(some)
    return (sum(every) - sum(some)) / rest if rest >= MIN_SHARED_HANDS else None


def co_seating(
    hands: Sequence[HandFacts], expected: dict[tuple[str, str], float] | None = None
) -> list[PairSignal]:
    """How often two players who were never partners sit at the same game, against the
    schedule's expectation (given per pair, in games; else that of a draw in which each game's
    other seats go to the field in proportion to how many games each plays): a binomial test
    over the games of the one who plays fewer."""
    games: dict[str, tuple[str, ...]] = {}
    opening: dict[str, HandRef] = {}
    partners: set[tuple[str, str]] = set()
    for hand in hands:
        games.setdefault(hand.game_id, hand.players)
        opening.setdefault(hand.game_id, hand.where)
        for unit in hand.units:
            partners.update(
                _pair(hand.players[a], hand.players[b]) for a, b in combinations(unit, 2)
            )
    played: Counter[str] = Counter(p for players in games.values() for p in set(players))
    together: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str], list[HandRef]] = defaultdict(list)
    for game_id, players in sorted(games.items()):
        for a, b in combinations(sorted(set(players)), 2):
            together[(a, b)] += 1
            first[(a, b)].append(opening[game_id])
    seats_total = sum(played.values())
    signals = []
    for a, b in combinations(sorted(played), 2):
        if (a, b) in partners:
            continue  # a team sits together by choice: nothing to read in it
        shared = together[(a, b)]
        trials = min(played[a], played[b])
        if expected is not None and (a, b) in expected:
            chance = expected[(a, b)] / trials if trials else 0.0
        else:
            chance = _draw_chance(games, played, seats_total, a, b)
        chance = min(chance, 1.0)
        signals.append(
            PairSignal(
                signal="co_seating",
                players=(a, b),
                observed=float(shared),
                expected=round(chance * trials, 2),
                effect=round(shared / (chance * trials), 3) if chance * trials else 0.0,
                count=trials,
                p_value=binomial_greater(shared, trials, chance),
                evidence=first[(a, b)],
            )
        )
    return signals


def _draw_chance(
    games: dict[str, tuple[str, ...]], played: Counter[str], seats_total: int, a: str, b: str
) -> float:
    """The chance that one game of the less busy of the two holds the other, had each game's
    other seats been drawn from the field by how many games each player plays."""
    one, other = (a, b) if played[a] <= played[b] else (b, a)
    rest = seats_total - played[one]
    if rest <= 0 or not played[one]:
        return 0.0
    seats = [len(set(players)) for players in games.values() if one in players]
    others = sum(seats) - len(seats)
    return min(1.0, others / len(seats) * played[other] / rest)
