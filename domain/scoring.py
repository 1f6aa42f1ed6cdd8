"""Scoring a hand, for every option of docs/rules.md, with the arithmetic written out.

For each unit, in this order: contract points (made: 10 x bid, plus ``overtrick_points`` and a
bag per overtrick; set: ``failed_bid``; the bid part doubled, ``blind_bids``, for a contract
holding a blind bid), nil and blind nil results, special bids (``ten_for_two_hundred``,
``boston``, ``blind_boston``, which replace the contract's points, are never doubled and count
no bags), bonuses (``all_tricks_bonus``), then the bag penalty as many times as the count passes
``bag_limit``. A hand without bidding (``first_hand: no_bid``, every bid None) scores 10 a trick
and nothing else. Every step is also a :class:`ScoreLine` naming the option that decided it, so a
disputed score can be answered line by line.

    >>> from domain.rules import resolve_rules
    >>> rules = resolve_rules({"preset": "partnership"})
    >>> result = score_hand(rules, [3, "nil", 2, 6], [5, 1, 3, 4], scores=[0, 0], bags=[0, 0])
    >>> result.points, result.bags
    ((53, -160), (3, 0))
    >>> for line in result.lines:
    ...     print(line.unit, line.rule, line.points, line.text)
    0 contract 50 bid 5, took 8: 10 x 5
    0 overtrick_points 3 3 overtrick(s) x 1
    1 failed_bid -60 bid 6, took 4: failed_bid 'bid' costs 10 x 6
    1 nil_value -100 seat 1 nil, took 1: failed
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from domain.bids import BLIND_NIL, Bid, is_blind, is_nil, tricks_bid
from domain.rules import Rules

_TEXT = {
    "contract": "bid {0}, took {1}: 10 x {0}",
    "overtrick_points": "{0} overtrick(s) x {1}",
    "failed_bid": "bid {0}, took {1}: failed_bid {2!r} costs 10 x {3}",
    "renege": "a renege sets the contract of {0} (took {1}): failed_bid {2!r} costs 10 x {3}",
    "failed_nil_tricks": "the nil bidder's {0} trick(s) count as overtricks, the partner having "
    "made: {0} x {1}",
    "nil_value": "seat {0} nil, took {1}: {2}",
    "blind_nil_value": "seat {0} blind nil, took {1}: {2}",
    "ten_for_two_hundred": "a contract of 10, took {0}{1}: 200 for exactly 10, else -200",
    "boston": "a contract of all {0} tricks, took {1}{2}: 200 made, -200 failed",
    "blind_boston": "a blind contract of all {0} tricks, took {1}{2}: 400 made, -400 failed",
    "blind_bids": "a contract holding a blind bid counts twice: {0} once more",
    "first_hand": "no bidding in the first hand: took {0}, 10 a trick{1}",
    "all_tricks_bonus": "took all {0} tricks",
    "bag_limit": "bags reach {0}: -{1}, {2} carried over",
}


class ScoreLine(msgspec.Struct, frozen=True, gc=False):
    """One step of a unit's score: the option that decided it and what it is worth."""

    unit: int
    rule: str
    points: int
    facts: tuple[int | str, ...] = ()

    @property
    def text(self) -> str:
        """The step in words."""
        return _TEXT[self.rule].format(*self.facts)


class HandScore(msgspec.Struct, frozen=True, gc=False):
    points: tuple[int, ...]
    scores: tuple[int, ...]
    bags: tuple[int, ...]
    lines: tuple[ScoreLine, ...]


def score_hand(
    rules: Rules,
    bids: Sequence[Bid | None],
    tricks: Sequence[int],
    *,
    scores: Sequence[int],
    bags: Sequence[int],
    reneged: int = 0,
) -> HandScore:
    """Score one hand. ``reneged`` is a bit set of the units that reneged; ``bids`` all None is
    a hand without bidding."""
    table = rules.table
    bidding = bids.count(None) < len(bids)
    lines: list[ScoreLine] = []
    points: list[int] = []
    new_scores: list[int] = []
    new_bags: list[int] = []
    for unit, seats in enumerate(table.units):
        cheated = bool(reneged >> unit & 1)
        count = bags[unit]
        if not bidding:
            taken = sum(tricks[seat] for seat in seats)
            value = 0 if cheated else 10 * taken
            lines.append(
                ScoreLine(unit, "first_hand", value, (taken, " (renege): 0" if cheated else ""))
            )
            points.append(value)
            new_scores.append(scores[unit] + value)
            new_bags.append(count)
            continue
        first = len(lines)
        earned = _score_unit(rules, unit, seats, bids, tricks, cheated, lines)
        total = 0
        for line in lines[first:]:  # the lines the unit's score just added
            total += line.points
        if rules.bag_limit is not None:
            count += earned
            while count >= rules.bag_limit:
                count -= rules.bag_limit
                lines.append(
                    ScoreLine(
                        unit,
                        "bag_limit",
                        -rules.bag_penalty,
                        (rules.bag_limit, rules.bag_penalty, count),
                    )
                )
                total -= rules.bag_penalty
        points.append(total)
        new_scores.append(scores[unit] + total)
        new_bags.append(count)
    return HandScore(tuple(points), tuple(new_scores), tuple(new_bags), tuple(lines))


def _score_unit(
    rules: Rules,
    unit: int,
    seats: Sequence[int],
    bids: Sequence[Bid | None],
    tricks: Sequence[int],
    reneged: bool,
    lines: list[ScoreLine],
) -> int:
    """Append the unit's lines; return the bags it earned this hand."""
    hand_size = rules.table.hand_size
    nil_seats: list[int] = []
    contract_seats: list[int] = []
    contract = counted = nil_tricks = 0
    blind = False
    for seat in seats:  # a nil is scored apart; the others' bids and tricks make the contract
        bid = bids[seat]
        if is_nil(bid):
            nil_seats.append(seat)
            nil_tricks += tricks[seat]
        else:
            contract_seats.append(seat)
            contract += tricks_bid(bid)
            counted += tricks[seat]
            blind = blind or is_blind(bid)
    failed_nil_tricks = rules.failed_nil_tricks if rules.partnerships else "none"
    if failed_nil_tricks == "partner":
        counted += nil_tricks
    renege_note = " (renege)" if reneged else ""
    bags = 0

    # A special bid replaces the contract's points; docs/rules.md scores it after the nils.
    special: ScoreLine | None = None
    if contract_seats and rules.ten_for_two_hundred and contract == 10:
        exact = counted == 10 and not reneged
        value = 200 if exact else -200
        special = ScoreLine(unit, "ten_for_two_hundred", value, (counted, renege_note))
    elif contract_seats and rules.boston and contract == hand_size:
        made = counted == hand_size and not reneged
        rule = "blind_boston" if blind and rules.blind_boston else "boston"
        value = (400 if rule == "blind_boston" else 200) * (1 if made else -1)
        special = ScoreLine(unit, rule, value, (hand_size, counted, renege_note))
    else:
        made = counted >= contract and not reneged
        if contract_seats or failed_nil_tricks == "partner":
            if made:
                over = counted - contract
                lines.append(ScoreLine(unit, "contract", 10 * contract, (contract, counted)))
                if blind:
                    lines.append(ScoreLine(unit, "blind_bids", 10 * contract, (10 * contract,)))
                if over:
                    value = over * rules.overtrick_points
                    lines.append(
                        ScoreLine(unit, "overtrick_points", value, (over, rules.overtrick_points))
                    )
                    bags += over
            else:
                lost = contract if rules.failed_bid == "bid" else max(contract - counted, 0)
                rule = "renege" if reneged else "failed_bid"
                facts = (contract, counted, rules.failed_bid, lost)
                lines.append(ScoreLine(unit, rule, -10 * lost, facts))
                if blind:
                    lines.append(ScoreLine(unit, "blind_bids", -10 * lost, (-10 * lost,)))
        if failed_nil_tricks == "bags_if_partner_made" and nil_tricks and contract_seats and made:
            value = nil_tricks * rules.overtrick_points
            lines.append(
                ScoreLine(unit, "failed_nil_tricks", value, (nil_tricks, rules.overtrick_points))
            )
            bags += nil_tricks

    for seat in nil_seats:
        blind_nil = bids[seat] == BLIND_NIL
        value = rules.blind_nil_value if blind_nil else rules.nil_value
        made_nil = tricks[seat] == 0 and not reneged
        outcome = "made" if made_nil else f"failed{renege_note}"
        lines.append(
            ScoreLine(
                unit,
                "blind_nil_value" if blind_nil else "nil_value",
                value if made_nil else -value,
                (seat, tricks[seat], outcome),
            )
        )

    if special is not None:
        lines.append(special)
    if rules.all_tricks_bonus and sum(tricks[seat] for seat in seats) == hand_size:
        lines.append(ScoreLine(unit, "all_tricks_bonus", rules.all_tricks_bonus, (hand_size,)))
    return bags
