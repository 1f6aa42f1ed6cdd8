"""The audit report: docs/api.md's audit shape, plus where the first problem is and the
arithmetic.

``{"ok", "events", "chain", "hands": [{"hand", "deal_verified", "replayed", "score_matches",
"problems"}]}`` as docs/api.md promises it; added (docs/api.md allows additions): ``problems``
(everything found, in the order of the record), ``first_problem`` (the first event where
anything fails, and why) and, per hand, ``arithmetic`` (the rules' score of the hand, line by
line). ``hands`` lists the finished hands only, as docs/api.md's hand records do.
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.audit.history import Problem

CHECK_ORDER = (
    "chain",
    "versions",
    "idempotency",
    "commit",
    "deal",
    "replay",
    "score",
    "read_model",
)
"""When several checks fail at one version, the one listed first is reported first: a broken
chain explains a replay that fails, never the other way round."""
CHAIN_CHECKS = frozenset({"chain", "versions", "idempotency"})


class HandReport(msgspec.Struct, frozen=True, kw_only=True):
    """One finished hand: its deal kept its promise, its events replay, its score is right."""

    hand: int
    deal_verified: bool
    replayed: bool
    score_matches: bool
    problems: list[Problem]
    arithmetic: list[str]


class AuditReport(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    events: int
    chain: bool
    hands: list[HandReport]
    problems: list[Problem]
    first_problem: Problem | None

    def as_json(self) -> dict[str, Any]:
        """The report as JSON values (docs/api.md's field names)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


def in_record_order(problems: list[Problem]) -> list[Problem]:
    """Problems by version, and at one version in :data:`CHECK_ORDER`."""
    rank = {check: position for position, check in enumerate(CHECK_ORDER)}
    return sorted(problems, key=lambda p: (p.version, rank.get(p.check, len(rank))))
