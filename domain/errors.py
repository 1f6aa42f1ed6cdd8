"""The one error hierarchy of the game. Every refusal carries exactly one docs/rules.md code."""

from __future__ import annotations

from typing import Literal, get_args

Code = Literal[
    "not_your_turn",
    "wrong_phase",
    "card_not_in_hand",
    "must_follow_suit",
    "spades_not_broken",
    "must_beat",
    "wrong_opening_lead",
    "invalid_bid",
    "nil_not_allowed",
    "blind_nil_not_allowed",
    "blind_bid_not_allowed",
    "invalid_pass",
    "invalid_discard",
    "game_over",
    "malformed",
    "invalid_rules",
    "seat_taken",
]
"""The refusal codes of docs/rules.md (plus ``invalid_rules`` and ``seat_taken`` for set-up)."""

CODES: frozenset[str] = frozenset(get_args(Code))


class RuleViolation(Exception):
    """An action or a rule set the game refuses.

    ``code`` is one of :data:`Code`; ``detail`` says what was refused and why, quoting the input.
    """

    def __init__(self, code: Code, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code: Code = code
        self.detail = detail

    def __reduce__(self) -> tuple[type[RuleViolation], tuple[Code, str]]:
        return (type(self), (self.code, self.detail))


class InvalidRules(RuleViolation):
    """A rule set that cannot be played: an unknown option, a bad value or an impossible mix."""

    def __init__(self, detail: str) -> None:
        super().__init__("invalid_rules", detail)

    def __reduce__(self) -> tuple[type[RuleViolation], tuple[Code, str]]:  # pragma: no cover
        return (RuleViolation, (self.code, self.detail))
