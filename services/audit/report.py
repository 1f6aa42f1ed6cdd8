"""The audit report: docs/api.md's audit shape, plus where the first problem is and the
arithmetic.

``{"ok", "events", "chain", "hands": [{"hand", "deal_verified", "replayed", "score_matches",
"problems"}]}`` as docs/api.md promises it; added (docs/api.md allows additions): ``problems``
(everything found, in the order of the record), ``first_problem`` (the first event where
anything fails, and why) and, per hand, ``arithmetic`` (the rules' score of the hand, line by
line). ``hands`` lists the finished hands only, as docs/api.md's hand records do.
"""

from __future__ import annotations

from typing import Annotated, Any

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
    arithmetic: Annotated[
        list[str], msgspec.Meta(description="The rules' score of the hand, line by line.")
    ]


class AuditReport(msgspec.Struct, frozen=True, kw_only=True):
    """The game's history replayed and checked: its hash chain, every deal against its
    commitment and seed, every event against the rules, every score against the rules'."""

    ok: bool
    events: int
    chain: Annotated[
        bool, msgspec.Meta(description="The commits' hash chain is intact and versions contiguous.")
    ]
    hands: Annotated[list[HandReport], msgspec.Meta(description="Every finished hand.")]
    problems: Annotated[
        list[Problem], msgspec.Meta(description="Everything found, hands' included.")
    ]
    first_problem: Annotated[
        Problem | None,
        msgspec.Meta(description="The first event where anything fails, and why."),
    ]

    def as_json(self) -> dict[str, Any]:
        """The report as JSON values (docs/api.md's field names)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


def in_record_order(problems: list[Problem]) -> list[Problem]:
    """Problems by version, and at one version in :data:`CHECK_ORDER`."""
    rank = {check: position for position, check in enumerate(CHECK_ORDER)}
    return sorted(problems, key=lambda p: (p.version, rank.get(p.check, len(rank))))
