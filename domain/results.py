"""The end of a hand and of the game: the hand scored (:mod:`domain.scoring`), then the game
ended or another hand due.

A hand ends with its last trick, or with a tally (tricks counted at a table, a score sheet) once
the bids are in. The end of the game is checked only after the whole hand, penalties included;
a tie on top plays another hand.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from domain.commands import RecordTally
from domain.errors import RuleViolation
from domain.events import AnyEvent, GameEnded, HandScored
from domain.rules import Rules
from domain.scoring import score_hand
from domain.state import Game, Hand, in_hand
from domain.table import Unit

# --------------------------------------------------------------------------- decide


def decide_tally(state: Game, command: RecordTally) -> list[AnyEvent]:
    hand = in_hand(state)
    if hand.phase not in ("pass", "play") or hand.tricks_played or hand.trick:
        raise RuleViolation("wrong_phase", "a tally is recorded once the bids (if any) are in")
    table = state.rules.table
    tricks = command.tricks
    if (
        len(tricks) != table.players
        or any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in tricks)
        or sum(tricks) != table.hand_size
    ):
        raise RuleViolation(
            "malformed", f"tricks must be {table.players} counts adding up to {table.hand_size}"
        )
    return end_of_hand(state, hand, list(tricks), 0)


def end_of_hand(state: Game, hand: Hand, won: list[int], reneged: int) -> list[AnyEvent]:
    """Score the hand; end the game when it is over. ``reneged``: a bit set of units."""
    rules = state.rules
    bids = hand.bids  # all None in a hand without bidding
    result = score_hand(rules, bids, won, scores=state.scores, bags=state.bags, reneged=reneged)
    units = tuple(u for u in range(len(result.points)) if reneged >> u & 1)
    scored = HandScored(
        hand.number,
        bids,
        tuple(won),
        result.points,
        result.scores,
        result.bags,
        units,
        hand.seed if state.duplicate is None else None,  # a board's: its league reveals it
    )
    winners = (
        _winners(rules, result.scores, state.hands_played + 1)
        if state.duplicate is None
        else _duplicate_winners(state.duplicate.count, result.scores, state.hands_played + 1)
    )
    return [scored, GameEnded(winners, result.scores)] if winners else [scored]


def _winners(rules: Rules, scores: Sequence[int], hands_played: int) -> tuple[Unit, ...]:
    """The winning unit when the game ends after this hand, else (); a tie on top plays on."""
    over = (
        max(scores) >= rules.target
        or (rules.lose_at is not None and min(scores) <= rules.lose_at)
        or (rules.max_hands is not None and hands_played >= rules.max_hands)
    )
    if not over:
        return ()
    top = max(scores)
    leaders = tuple(unit for unit, score in enumerate(scores) if score == top)
    return leaders if len(leaders) == 1 else ()


def _duplicate_winners(boards: int, scores: Sequence[int], hands_played: int) -> tuple[Unit, ...]:
    """A duplicate table ends with its last board, whatever the scores (every unit tied on top
    wins), and not before: its results are compared board by board, not by who won."""
    if hands_played < boards:
        return ()
    top = max(scores)
    return tuple(unit for unit, score in enumerate(scores) if score == top)


# --------------------------------------------------------------------------- evolve


def hand_scored(state: Game, event: HandScored) -> Game:
    return replace(
        state,
        scores=event.scores,
        bags=event.bags,
        hands_played=state.hands_played + 1,
        hand=None,
    )


def game_ended(state: Game, event: GameEnded) -> Game:
    return replace(
        state, status="finished", winners=event.winners, forfeited=event.forfeited, hand=None
    )
