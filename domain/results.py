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
from domain.events import AnyEvent, GameEnded, HandScored, TieRule
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
        winners_after(rules, result.scores, state.hands_played + 1, state.ties, state.tied_ends)
        if state.duplicate is None
        else _duplicate_winners(state.duplicate.count, result.scores, state.hands_played + 1)
    )
    return [scored, GameEnded(winners, result.scores)] if winners else [scored]


def winners_after(
    rules: Rules,
    scores: Sequence[int],
    hands_played: int,
    ties: TieRule | None = None,
    tied_ends: int = 0,
) -> tuple[Unit, ...]:
    """The winning unit when the game ends after this hand, else (). A tie on top plays on;
    a knockout match's ``ties`` rule gives it to its better seed at once (``higher_seed``) or
    once ``tied_ends`` (the hands already played on for a tie) reaches its ``extra_deals``."""
    if not _over(rules, scores, hands_played):
        return ()
    leaders = _leaders(scores)
    if len(leaders) == 1:
        return leaders
    if ties is not None and (ties.tie_break == "higher_seed" or tied_ends >= ties.extra_deals):
        return (ties.better,) if ties.better in leaders else (min(leaders),)
    return ()


def _over(rules: Rules, scores: Sequence[int], hands_played: int) -> bool:
    """Whether the game would end after this hand but for a tie on top."""
    return (
        max(scores) >= rules.target
        or (rules.lose_at is not None and min(scores) <= rules.lose_at)
        or (rules.max_hands is not None and hands_played >= rules.max_hands)
    )


def _leaders(scores: Sequence[int]) -> tuple[Unit, ...]:
    top = max(scores)
    return tuple(unit for unit, score in enumerate(scores) if score == top)


def _duplicate_winners(boards: int, scores: Sequence[int], hands_played: int) -> tuple[Unit, ...]:
    """A duplicate table ends with its last board, whatever the scores (every unit tied on top
    wins), and not before: its results are compared board by board, not by who won."""
    if hands_played < boards:
        return ()
    top = max(scores)
    return tuple(unit for unit, score in enumerate(scores) if score == top)


# --------------------------------------------------------------------------- evolve


def hand_scored(state: Game, event: HandScored) -> Game:
    hands_played = state.hands_played + 1
    # a knockout match over but for a tie plays on: one more hand towards its tie rule's cap
    tied = state.ties is not None and state.duplicate is None
    tied = (
        tied and _over(state.rules, event.scores, hands_played) and len(_leaders(event.scores)) > 1
    )
    return replace(
        state,
        scores=event.scores,
        bags=event.bags,
        hands_played=hands_played,
        hand=None,
        tied_ends=state.tied_ends + tied,
    )


def game_ended(state: Game, event: GameEnded) -> Game:
    return replace(
        state, status="finished", winners=event.winners, forfeited=event.forfeited, hand=None
    )
