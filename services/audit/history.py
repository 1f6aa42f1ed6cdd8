"""Checks of a game's stored history: the hash chain, the versions, the deals.

These need nothing but the commits as stored, so an auditor can run them on a copy.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from contracts.wire import GENESIS
from domain.events import GameCreated, HandDealt, HandScored, SeatTaken
from domain.fairness import deal_problems
from domain.rules import Rules
from services.runtime.game_stream import StoredCommit


class Problem(msgspec.Struct, frozen=True):
    """The first thing found wrong at one place of the record."""

    version: int
    """The game version (event number) where it is found; 0 for the history as a whole."""
    check: str
    detail: str


def chain_problems(commits: Sequence[StoredCommit]) -> list[Problem]:
    """Hash chain, contiguous versions, one commit per command id."""
    problems: list[Problem] = []
    previous_digest = GENESIS
    previous_version = 0
    seen: set[str] = set()
    for stored in commits:
        commit = stored.commit
        if commit.previous != previous_digest:
            problems.append(
                Problem(commit.first_version, "chain", "the commit does not name the one before it")
            )
        if commit.first_version != previous_version + 1:
            problems.append(
                Problem(
                    commit.first_version,
                    "versions",
                    f"versions jump from {previous_version} to {commit.first_version}",
                )
            )
        if commit.command_id in seen:
            problems.append(
                Problem(commit.first_version, "idempotency", f"command {commit.command_id} twice")
            )
        seen.add(commit.command_id)
        previous_digest = stored.digest
        previous_version = commit.version
    return problems


def deal_checks(commits: Sequence[StoredCommit]) -> list[Problem]:
    """Every revealed seed hashes to its commitment and derives the deck that was dealt."""
    problems: list[Problem] = []
    rules: Rules | None = None
    entropies: dict[int, str] = {}
    game_entropy = ""
    dealt: HandDealt | None = None
    dealt_at = 0
    for stored in commits:
        for offset, event in enumerate(stored.commit.events):
            version = stored.commit.first_version + offset
            if isinstance(event, GameCreated):
                rules, game_entropy = event.rules, event.entropy
            elif isinstance(event, SeatTaken):
                entropies[event.seat] = event.entropy
            elif isinstance(event, HandDealt):
                dealt, dealt_at = event, version
            elif isinstance(event, HandScored) and dealt is not None and rules is not None:
                seats = [entropies.get(seat, "") for seat in range(rules.players)]
                for detail in deal_problems(
                    rules,
                    [game_entropy, *seats],
                    dealt.hand,
                    dealt.commitment,
                    event.seed,
                    dealt.deck,
                ):
                    problems.append(Problem(dealt_at, "deal", f"hand {dealt.hand}: {detail}"))
                dealt = None
    return problems
