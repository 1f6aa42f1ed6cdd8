"""The replay audit of one game, in API.md's shape.

Three checks of the record as stored: the hash chain of the commits
(:func:`services.audit.history.chain_problems`), every deal against its commitment
(:func:`~services.audit.history.deal_checks`), and a replay: each commit's command is read back
from its events and decided again against the state before it (with the deal's revealed seed),
so every play must have been legal, every trick won by the right seat and every score right;
then the recorded events are applied with ``evolve``. Findings name event types, codes and
scores, never a card, so an audit of a game in progress shows nothing of its hands.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest

import msgspec

from domain.commands import (
    AnyCommand,
    CreateGame,
    Draw,
    LookAtHand,
    PassCards,
    PlaceBid,
    PlayCard,
    TakeSeat,
)
from domain.dealing import SeededDeal
from domain.errors import RuleViolation
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsPassed,
    GameCreated,
    HandDealt,
    HandLooked,
    HandScored,
    SeatTaken,
)
from domain.game import decide, fold
from domain.state import Game
from services.audit.history import Problem, chain_problems, deal_checks
from services.runtime.game_stream import StoredCommit


class HandAudit(msgspec.Struct, frozen=True, kw_only=True):
    hand: int
    deal_verified: bool
    replayed: bool
    score_matches: bool
    problems: list[Problem]


class AuditReport(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    events: int
    chain: bool
    hands: list[HandAudit]
    problems: list[Problem]


def command_of(events: Sequence[AnyEvent]) -> AnyCommand | None:
    """The command whose outcome these events are (a bid's commit may open with its look)."""
    for event in events:
        if isinstance(event, GameCreated):
            return CreateGame(
                event.game_id,
                event.rules.to_json(),
                event.dealer,
                event.entropy,
                event.scores,
                event.bags,
                event.league,
            )
        if isinstance(event, SeatTaken):
            return TakeSeat(event.player, event.seat, event.entropy)
        if isinstance(event, BidPlaced):
            return PlaceBid(event.seat, event.bid)
        if isinstance(event, CardsPassed):
            return PassCards(event.seat, event.cards or ())
        if isinstance(event, CardDrawn):
            return Draw(event.seat, event.kept)
        if isinstance(event, CardPlayed):
            return PlayCard(event.seat, event.card)
    first = events[0] if events else None
    return LookAtHand(first.seat) if isinstance(first, HandLooked) else None


def _deal_of(events: Sequence[AnyEvent]) -> SeededDeal | None:
    """The recorded deal's seed, to deal the same cards again."""
    for event in events:
        if isinstance(event, HandDealt) and event.seed is not None:
            try:
                return SeededDeal(bytes.fromhex(event.seed))
            except ValueError:
                return None
    return None


def _difference(first: int, decided: list[AnyEvent], recorded: list[AnyEvent]) -> Problem | None:
    """The first event where the record departs from what the rules decide."""
    pairs = zip_longest(decided, recorded)
    for offset, (expected, found) in enumerate(pairs):
        if expected == found:
            continue
        if isinstance(expected, HandScored) and isinstance(found, HandScored):
            detail = (
                f"hand {found.hand} recorded points {list(found.points)}, scores "
                f"{list(found.scores)}; the replay gives {list(expected.points)}, "
                f"{list(expected.scores)}"
            )
            return Problem(first + offset, "score", detail)
        detail = f"recorded {_name(found)} where the rules give {_name(expected)}"
        return Problem(first + offset, "replay", detail)
    return None


def _name(event: AnyEvent | None) -> str:
    return type(event).__name__ if event is not None else "nothing"


def _replay_commit(state: Game | None, first: int, events: list[AnyEvent]) -> Problem | None:
    command = command_of(events)
    if command is None:
        return Problem(first, "replay", f"{_name(events[0])} is no command's outcome")
    try:
        decided = decide(state, command, deal=_deal_of(events))
    except RuleViolation as refused:
        return Problem(first, "replay", f"the rules refuse this {_name(events[0])}: {refused.code}")
    return _difference(first, decided, events)


def replay_problems(commits: Sequence[StoredCommit]) -> list[Problem]:
    """Decide every command again and apply every recorded event."""
    problems: list[Problem] = []
    state: Game | None = None
    for stored in commits:
        commit = stored.commit
        if not commit.events:  # a refusal changed nothing
            continue
        found = _replay_commit(state, commit.first_version, commit.events)
        if found is not None:
            problems.append(found)
        try:
            state = fold(commit.events, state)
        except Exception as error:  # any failure to apply is the finding itself
            detail = f"the recorded events do not apply: {type(error).__name__}"
            problems.append(Problem(commit.first_version, "replay", detail))
            break
    return problems


def _hand_spans(commits: Sequence[StoredCommit]) -> dict[int, tuple[int, int]]:
    """Each finished hand's versions, from its deal to its score."""
    dealt: dict[int, int] = {}
    spans: dict[int, tuple[int, int]] = {}
    for stored in commits:
        for offset, event in enumerate(stored.commit.events):
            version = stored.commit.first_version + offset
            if isinstance(event, HandDealt):
                dealt[event.hand] = version
            elif isinstance(event, HandScored) and event.hand in dealt:
                spans[event.hand] = (dealt[event.hand], version)
    return spans


def _hand_audit(hand: int, span: tuple[int, int], problems: list[Problem]) -> HandAudit:
    mine = [p for p in problems if span[0] <= p.version <= span[1]]
    checks = {p.check for p in mine}
    return HandAudit(
        hand=hand,
        deal_verified="deal" not in checks,
        replayed="replay" not in checks,
        score_matches="score" not in checks,
        problems=mine,
    )


def audit(commits: Sequence[StoredCommit]) -> AuditReport:
    """The whole audit of one game's commits, in order."""
    chain = chain_problems(commits)
    problems = sorted(
        [*chain, *deal_checks(commits), *replay_problems(commits)], key=lambda p: p.version
    )
    spans = _hand_spans(commits)
    return AuditReport(
        ok=not problems,
        events=sum(len(stored.commit.events) for stored in commits),
        chain=not chain,
        hands=[_hand_audit(hand, span, problems) for hand, span in sorted(spans.items())],
        problems=problems,
    )
