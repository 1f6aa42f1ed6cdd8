"""A duplicate event's standings, counted from its tables' hand records: each board across
every table that played it (:func:`duplicate_results`), each side's matchpoints over the event
(:func:`duplicate_scores`), and its fixed sides best first (:func:`seeding`), what a knockout
after it is seeded by.

The league aggregate records how each table's game ended, not how each board went, so these
read the tables' hands: the gateway from the read models, the engine from the games'
histories when it seeds a knockout. Both count the same way: only the rounds every table has
finished (a round being played shows nothing of how its boards went); hand ``k`` of a round's
table is the round's board ``k``; each side compared by its score delta with the same
direction's sides at the other tables; a substitute's hands for the seat's player; a voided
table's or board's for no one; sets and bags by the event's convention.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from domain import matchpoints
from domain.league import League, Side, duplicate_pairs
from domain.records import HandRecord


def duplicate_scores(
    league: League, hands: Mapping[str, Sequence[HandRecord]]
) -> dict[str, matchpoints.Standing]:
    """Each player's side's matchpoints (:mod:`domain.matchpoints`, ``as_scored``), over the
    rounds every table has finished (:func:`duplicate_results`)."""
    results = duplicate_results(league, hands)
    if results is None:
        return {}
    scored: dict[str, matchpoints.Standing] = {}
    for standing in matchpoints.standings(matchpoints.cross_tables(results)):
        for player in standing.players:
            scored[player] = standing
    return scored


def duplicate_results(
    league: League, hands: Mapping[str, Sequence[HandRecord]]
) -> matchpoints.EventResults | None:
    """The boards of the rounds every table has finished (a round being played shows nothing
    of how its boards went), each with every table's sides: hand ``k`` of a round's table is
    the round's board ``k``, each side compared by its score delta with the same direction's
    sides at the other tables; a substitute's hands count for the seat's player, and a voided
    table's for no one. None before any board is over."""
    boards: dict[int, list[matchpoints.TableResult]] = {}
    units = league.rules.table.units
    for played in league.rounds:
        if not played.finished:  # its boards are still being played somewhere
            continue
        for table in played.tables:
            for record in hands.get(table.game_id, ()):
                if not 1 <= record.hand <= len(played.boards):
                    continue
                if league.voided_board(table.game_id, played.boards[record.hand - 1]):
                    continue  # the director voided it: scored over the other tables
                sides = tuple(
                    matchpoints.SideResult(
                        tuple(table.players[seat] for seat in seats), record.points[unit]
                    )
                    for unit, seats in enumerate(units)
                )
                board = played.boards[record.hand - 1]
                boards.setdefault(board, []).append(matchpoints.TableResult(table.game_id, sides))
    if not boards:
        return None
    return matchpoints.EventResults(
        tuple(
            matchpoints.BoardResults(board, tuple(tables))
            for board, tables in sorted(boards.items())
        ),
        convention=league.convention,
        overtrick_points=league.rules.overtrick_points,
    )


def seeding(league: League, hands: Mapping[str, Sequence[HandRecord]]) -> list[Side]:
    """A duplicate event's fixed sides best first: by percentage (the director's adjustments,
    in matchpoints, of its players added to the side's), then matchpoints, then the order the
    event lists them in."""
    scored = duplicate_scores(league, hands)
    adjusted = dict.fromkeys(league.players, 0)
    for adjustment in league.adjustments:
        adjusted[adjustment.player] += adjustment.points
    pairs = duplicate_pairs(league)

    def rank(index: int) -> tuple[float, float, int]:
        side = pairs[index]
        mine = scored.get(side[0])
        points = (mine.matchpoints if mine else 0) + sum(adjusted[p] for p in side)
        percentage = 100 * points / mine.top if mine and mine.top else 0
        return (-float(percentage), -float(points), index)

    return [pairs[index] for index in sorted(range(len(pairs)), key=rank)]
