"""The audit of a duplicate event's boards (``spades league audit LEAGUE_ID``).

What it reads: the event as published (its boards' Merkle root and commitments, its rounds'
tables and boards, the seeds revealed so far) and each table's deals (from its hand records,
public once a hand is scored, or from the game's history). What it checks, for every table of
every round, hand ``k`` being the round's board ``k``:

- ``board_commitment``: the deal's commitment is the board's leaf under the published root
  (:func:`domain.boards.check_commitment`, with the board's proof from the commitments);
- ``wrong_board``: the table dealt another board of the event (its commitment is another
  board's), more hands than the round has boards, or, its game over, fewer;
- ``late``: the table dealt a board after its seed was revealed (a board of an earlier round,
  or, where times are known, a deal committed after the reveal);
- ``seed``: a revealed seed opens its board's commitment (:func:`domain.boards.check_seed`);
- ``deal``: the table's dealer and hands (the draw pile, two-player) are the board's dealt
  from the revealed seed (:func:`domain.boards.check_table_deal`);
- ``unrevealed``: every board of a round that is over has been revealed;
- ``table_missing``: every table of a round that is over has its deals to check.

Each finding names its round, board and table where it has them. An empty list: every table
of every round held the same cards on each board, the cards the published root promised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec
from msgspec.structs import replace

from domain.boards import (
    BoardMismatch,
    board_proof,
    check_commitment,
    check_seed,
    check_table_deal,
)
from domain.cards import Card
from domain.events import HandDealt
from domain.league import League, round_boards
from domain.records import HandRecord
from domain.rules import Rules

Finding = Literal[
    "board_commitment", "seed", "deal", "late", "wrong_board", "unrevealed", "table_missing"
]


class BoardFinding(msgspec.Struct, frozen=True, kw_only=True):
    finding: Finding
    round: int
    board: int | None = None
    game_id: str | None = None
    detail: str


class EventRound(msgspec.Struct, frozen=True, kw_only=True):
    """A round as the audit reads it: its tables' games, its boards, whether every table is
    over, and when its boards were revealed (None: not known, or not yet)."""

    number: int
    games: tuple[str, ...]
    boards: tuple[int, ...]
    over: bool
    revealed_at: str | None = None


class DuplicateEvent(msgspec.Struct, frozen=True, kw_only=True):
    league_id: str
    rules: Rules
    root: str
    commitments: tuple[str, ...]
    rounds: tuple[EventRound, ...]
    revealed: Mapping[int, str]
    """Board -> seed in hex."""


class TableHand(msgspec.Struct, frozen=True, kw_only=True):
    """One hand of a table as dealt; ``at``: when its deal was committed, if known."""

    dealt: HandDealt
    at: str | None = None


def event_of(league: League, revealed_at: Mapping[int, str] | None = None) -> DuplicateEvent:
    """What the audit reads of a duplicate league's state."""
    if league.format != "duplicate" or league.boards is None:
        raise ValueError(f"league {league.league_id} is not a duplicate event")
    return DuplicateEvent(
        league_id=league.league_id,
        rules=league.rules,
        root=league.boards.root,
        commitments=league.boards.commitments,
        rounds=tuple(
            EventRound(
                number=played.number,
                games=tuple(table.game_id for table in played.tables),
                boards=played.boards or round_boards(league, played.number),
                over=played.finished,
                revealed_at=(revealed_at or {}).get(played.number),
            )
            for played in league.rounds
        ),
        revealed=dict(league.revealed),
    )


def hands_of_records(records: Sequence[HandRecord], rules: Rules) -> list[TableHand]:
    """A table's deals from its hand records (each scored hand's, with its seed)."""
    hands = []
    for record in records:
        deal = record.deal
        dealt_hands: tuple[tuple[Card, ...], ...] = (
            tuple(() for _ in range(rules.players))
            if rules.deal == "draw"
            else tuple(tuple(cards) for cards in deal.hands)
        )
        deck = tuple(deal.deck) if deal.deck is not None else None
        dealt = HandDealt(record.hand, record.dealer, deal.commitment, dealt_hands, deck, deal.seed)
        hands.append(TableHand(dealt=dealt))
    return hands


def audit_boards(
    event: DuplicateEvent, tables: Mapping[str, Sequence[TableHand]]
) -> list[BoardFinding]:
    """Every finding of the event's boards (see the module's docstring); [] when clean."""
    findings: list[BoardFinding] = []
    count = len(event.commitments)
    opened: dict[int, bytes] = {}
    revealed_in: dict[int, int] = {}
    """Board -> the round whose end revealed it."""
    for played in event.rounds:
        for board in played.boards:
            if board in event.revealed:
                revealed_in[board] = played.number
    for played in event.rounds:
        for board in played.boards:
            text = event.revealed.get(board)
            if text is None:
                if played.over:
                    findings.append(
                        BoardFinding(
                            finding="unrevealed",
                            round=played.number,
                            board=board,
                            detail=f"board {board}'s round is over and its seed is not revealed",
                        )
                    )
                continue
            try:
                seed = bytes.fromhex(text)
                check_seed(seed, board, _proof(event, board), event.root, count)
            except (ValueError, BoardMismatch) as error:
                findings.append(
                    BoardFinding(
                        finding="seed", round=played.number, board=board, detail=str(error)
                    )
                )
            else:
                opened[board] = seed
    for played in event.rounds:
        if not played.boards:
            continue  # a knockout's round after the event: its games are dealt afresh
        for game_id in played.games:
            findings += _table(event, played, game_id, tables.get(game_id), opened, revealed_in)
    return findings


def _proof(event: DuplicateEvent, board: int) -> tuple[str, ...]:
    if not 1 <= board <= len(event.commitments):
        raise BoardMismatch(f"no board {board} among {len(event.commitments)}")
    return board_proof(event.commitments, board)


def _table(
    event: DuplicateEvent,
    played: EventRound,
    game_id: str,
    hands: Sequence[TableHand] | None,
    opened: Mapping[int, bytes],
    revealed_in: Mapping[int, int],
) -> list[BoardFinding]:
    number = played.number
    if not hands:
        if not played.over:
            return []
        return [
            BoardFinding(
                finding="table_missing",
                round=number,
                game_id=game_id,
                detail=f"round {number} is over and no deal of {game_id} is there to check",
            )
        ]
    found: list[BoardFinding] = []

    def note(finding: Finding, board: int | None, detail: str) -> None:
        found.append(
            BoardFinding(finding=finding, round=number, board=board, game_id=game_id, detail=detail)
        )

    if played.over and len(hands) < len(played.boards):
        note("wrong_board", None, f"{game_id} dealt {len(hands)} of {len(played.boards)} boards")
    for index, hand in enumerate(hands):
        dealt = hand.dealt
        if index >= len(played.boards):
            note("wrong_board", None, f"{game_id} dealt hand {dealt.hand}: beyond its boards")
            continue
        board = played.boards[index]
        promised = dealt.commitment or ""
        if promised != event.commitments[board - 1] and promised in event.commitments:
            other = event.commitments.index(promised) + 1
            note("wrong_board", board, f"{game_id} dealt board {other} as board {board}")
            if other in revealed_in and revealed_in[other] < number:
                note("late", other, f"{game_id} dealt board {other} after it was revealed")
            continue
        try:
            check_commitment(
                promised, board, _proof(event, board), event.root, len(event.commitments)
            )
        except BoardMismatch as error:
            note("board_commitment", board, f"{game_id}: {error}")
            continue
        if hand.at is not None and played.revealed_at is not None and hand.at > played.revealed_at:
            note("late", board, f"{game_id} dealt board {board} after it was revealed")
        seed = opened.get(board)
        if seed is None:
            continue
        try:
            check_table_deal(event.rules, seed, board, replace(dealt, hand=board))
        except BoardMismatch as error:
            note("deal", board, f"{game_id}: {error}")
    return found
