"""Each finished hand's score, line by line, as the rules reckon it: what a person reading a
hand record wants to know is not only the points but why (a table's end-of-hand summary and
the replay page show these lines).

The lines come from :func:`domain.scoring.score_hand`, given the hand's bids and tricks and the
units' scores and bags before it (after the hand before, or as the game started). They are the
rules' own account; the audit (``GET .../audit``) is what checks the recorded score against it.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.answers import ScoreLine
from domain.events import GameCreated
from domain.records import HandRecord
from domain.scoring import score_hand


def score_lines(created: GameCreated, records: Sequence[HandRecord]) -> list[list[ScoreLine]]:
    """For each of a game's finished hands, in order from the first, its score lines, each
    ``rule`` naming the option that decided it."""
    units = len(records[0].points) if records else 0
    bags = list(created.bags) if created.bags is not None else [0] * units
    out: list[list[ScoreLine]] = []
    for record in records:
        scores = [
            total - points for total, points in zip(record.scores, record.points, strict=True)
        ]
        reneged = sum(1 << unit for unit in record.reneged)
        result = score_hand(
            created.rules, record.bids, record.tricks_won, scores=scores, bags=bags, reneged=reneged
        )
        out.append(
            [
                ScoreLine(unit=line.unit, rule=line.rule, points=line.points, text=line.text)
                for line in result.lines
            ]
        )
        bags = list(record.bags)
    return out
