"""Checks of a game's stored history: the hash chain, the versions, the deals.

These need nothing but the commits as stored, so an auditor can run them on a copy.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from contracts.wire import GENESIS
from domain.events import DuplicateBoards, GameCreated, HandDealt, HandScored, SeatTaken
from domain.fairness import deal_problems
from domain.rules import Rules
from domain.shuffle import table_entropies
from services.runtime.game_stream import StoredCommit

CHAIN_RULE = "previous = SHA-256 of the previous commit's stored bytes"
VERSIONS_RULE = "a commit's events carry the versions after the one before, without a gap"


class Problem(msgspec.Struct, frozen=True):
    """The first thing found wrong at one place of the record, and the rule it breaks."""

    version: int
    """The game version (event number) where it is found; 0 for the history as a whole."""
    check: str
    """Which check found it: chain, versions, idempotency, commit, deal, replay, score,
    read_model (the order in which the checks of one version are reported)."""
    detail: str
    rule: str | None = None
    """What decided it: a docs/rules.md code or option (``must_follow_suit``, ``failed_bid``), or
    the record's own rule (the hash chain, the deal's commitment)."""
    hand: int | None = None
    """The hand the version belongs to, when it belongs to one."""
    arithmetic: list[str] = []
    """For a score in question: the rules' own arithmetic, line by line."""


def chain_problems(commits: Sequence[StoredCommit]) -> list[Problem]:
    """Hash chain, contiguous versions, one commit per command id.

    A gap or a repeat is reported at the version that was due next, so a removed commit is
    named by the first version it took with it.
    """
    problems: list[Problem] = []
    previous_digest = GENESIS
    previous_version = 0
    seen: set[str] = set()
    for stored in commits:
        commit = stored.commit
        if commit.previous != previous_digest:
            problems.append(
                Problem(
                    commit.first_version,
                    "chain",
                    "the commit does not name the one before it",
                    CHAIN_RULE,
                )
            )
        due = previous_version + 1
        if commit.first_version != due:
            jump = _jump(due, commit.first_version)
            problems.append(Problem(due, "versions", jump, VERSIONS_RULE))
        if commit.command_id in seen:
            problems.append(
                Problem(
                    commit.first_version,
                    "idempotency",
                    f"command {commit.command_id} is committed twice",
                    "one commit per command id",
                )
            )
        seen.add(commit.command_id)
        previous_digest = stored.digest
        previous_version = commit.version
    return problems


def _jump(due: int, found: int) -> str:
    if found > due:
        missing = f"version {due} is" if found == due + 1 else f"versions {due} to {found - 1} are"
        return f"{missing} missing: the next commit starts at {found}"
    return f"the commit starts at version {found} again, where {due} was due"


def deal_checks(commits: Sequence[StoredCommit]) -> list[Problem]:
    """Every revealed seed hashes to its commitment and derives the deck that was dealt."""
    problems: list[Problem] = []
    rules: Rules | None = None
    entropies: dict[int, str] = {}
    game_entropy = ""
    dealt: HandDealt | None = None
    dealt_at = 0
    duplicate: DuplicateBoards | None = None
    for stored in commits:
        for offset, event in enumerate(stored.commit.events):
            version = stored.commit.first_version + offset
            if isinstance(event, GameCreated):
                rules, game_entropy = event.rules, event.entropy
                boards = event.duplicate
                duplicate = boards if isinstance(boards, DuplicateBoards) else None
            elif isinstance(event, SeatTaken):
                entropies[event.seat] = event.entropy
            elif isinstance(event, HandDealt):
                dealt, dealt_at = event, version
            elif isinstance(event, HandScored) and dealt is not None and rules is not None:
                seats = [entropies.get(seat) for seat in range(rules.players)]
                # a duplicate table deals board first + hand - 1, with no entropies (its
                # event's: domain.boards)
                for detail in deal_problems(
                    rules,
                    table_entropies(game_entropy, seats) if duplicate is None else [],
                    dealt.hand if duplicate is None else duplicate.first + dealt.hand - 1,
                    dealt.commitment,
                    event.seed if duplicate is None else dealt.seed,
                    dealt.deck,
                ):
                    problems.append(Problem(dealt_at, "deal", f"hand {dealt.hand}: {detail}"))
                dealt = None
    return problems
