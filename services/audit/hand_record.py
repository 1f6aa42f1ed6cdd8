"""Auditing hands played elsewhere: a file of hand records or tallies, under the table's rules.

Each hand is played again by :class:`~services.audit.table_replay.TableReplay` (a file's shapes
are :mod:`services.audit.record_file`). Hands of one file are played in order, each starting
where the last ended unless it gives its own ``start`` (which must then be where the last one
ended); a single hand without ``start`` starts where its own figures imply (its scores less its
points, and the bags that its bags after the hand imply). :func:`exported_records` writes a
game's hands so that an auditor elsewhere can audit each alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from domain.bids import Bid
from domain.deal_phase import entropies_of
from domain.errors import RuleViolation
from domain.rules import Rules, resolve_rules
from domain.scoring import score_hand
from domain.table import table_for
from services.audit.history import Problem
from services.audit.record_file import Given, Start, TallyGiven, UnreadableRecord, read_hand_records
from services.audit.replay import HandAccount, Replay, hand_report
from services.audit.report import AuditReport, in_record_order
from services.audit.table_replay import TableReplay

DEFAULT_RULES: dict[str, Any] = {"preset": "partnership"}


@dataclass
class RecordAudit:
    """The audit of records played elsewhere, and an account of each hand to tell it."""

    rules: Rules
    report: AuditReport
    hands: list[HandAccount]


def audit_hand_records(document: Any, rules: Mapping[str, Any] | None = None) -> RecordAudit:
    """Audit the hands of a record file under ``rules`` (else the file's own, else the
    ``partnership`` preset). Raises :class:`UnreadableRecord` when it cannot be audited."""
    given = read_hand_records(document)
    table_rules = _rules(rules if rules is not None else given[0].rules or DEFAULT_RULES)
    accounts: list[HandAccount] = []
    problems: list[Problem] = []
    carried: tuple[list[int], list[int]] | None = None
    events = 0
    for position, hand in enumerate(given):
        where = f"hands[{position}]"
        start = _start(table_rules, hand, carried, where)
        problems.extend(_carry_over(hand, start, carried))
        table = TableReplay(table_rules, hand, start, where)
        account = table.run()
        accounts.append(account)
        problems.extend(table.problems)
        events += table.events
        carried = table.end
    ordered = in_record_order(problems)
    report = AuditReport(
        ok=not ordered,
        events=events,
        chain=True,
        hands=[
            hand_report(account, ordered, followed=account.record is not None)
            for account in accounts
        ],
        problems=ordered,
        first_problem=ordered[0] if ordered else None,
    )
    return RecordAudit(table_rules, report, accounts)


def _rules(raw: Mapping[str, Any]) -> Rules:
    try:
        return resolve_rules(raw)
    except RuleViolation as violation:
        raise UnreadableRecord("rules", violation.detail) from None


def _start(
    rules: Rules, hand: Given, carried: tuple[list[int], list[int]] | None, where: str
) -> Start:
    """The scores and bags before the hand: as given, else where the last hand ended, else
    what the record's own figures imply (its scores less its points, and the bag count that
    its bags after the hand imply)."""
    units = len(table_for(rules).units)
    start = hand.start
    if start is None and carried is not None:
        start = Start(*carried)
    if start is None:
        start = _implied_start(rules, hand, units)
    if len(start.scores) != units or len(start.bags) != units or min(start.bags) < 0:
        raise UnreadableRecord(f"{where}.start", f"needs {units} scores and bag counts")
    if rules.bag_limit is not None and max(start.bags) >= rules.bag_limit:
        # Bags carry over below the limit: a count at or past it was never a table's.
        raise UnreadableRecord(f"{where}.start", f"bag counts are below {rules.bag_limit}")
    return start


def _carry_over(
    hand: Given, start: Start, carried: tuple[list[int], list[int]] | None
) -> list[Problem]:
    """A hand given with its own start must start where the hand before it ended."""
    if carried is None or hand.start is None or (start.scores, start.bags) == carried:
        return []
    detail = (
        f"hand {hand.hand} starts at scores {start.scores}, bags {start.bags}; the hand before "
        f"it ended at scores {carried[0]}, bags {carried[1]}"
    )
    return [Problem(0, "score", detail, "scores and bags carry over from hand to hand", hand.hand)]


def _implied_start(rules: Rules, hand: Given, units: int) -> Start:
    scores = [0] * units
    after, points = hand.scores, hand.points
    if after is not None and points is not None and len(after) == len(points) == units:
        scores = [total - gained for total, gained in zip(after, points, strict=True)]
    bags = [0] * units
    tricks = hand.tricks if isinstance(hand, TallyGiven) else hand.tricks_won
    if (
        hand.bags is not None
        and len(hand.bags) == units
        and tricks is not None
        and len(tricks) == len(hand.bids) == rules.players
    ):
        bags = _bags_before(rules, hand.bids, tricks, hand.bags)
    return Start(scores, bags)


def _bags_before(
    rules: Rules, bids: Sequence[Bid | None], tricks: Sequence[int], after: Sequence[int]
) -> list[int]:
    """The bag counts before a hand that leave ``after`` once its bags are counted."""
    units = len(after)
    if rules.bag_limit is None:
        return list(after)
    fresh = score_hand(rules, bids, tricks, scores=[0] * units, bags=[0] * units)
    limit = rules.bag_limit
    earned = [
        fresh.bags[unit]
        + limit * sum(1 for line in fresh.lines if line.unit == unit and line.rule == "bag_limit")
        for unit in range(units)
    ]
    return [(after[unit] - earned[unit]) % limit for unit in range(units)]


def exported_records(replay: Replay) -> list[dict[str, Any]]:
    """A game's finished hands as docs/api.md's hand records, each with what an auditor elsewhere
    needs to audit it alone: the ``rules``, the ``start`` scores and bags, and the
    ``entropies`` that, with the revealed seed, derive the deck."""
    state = replay.state
    entropies = [] if state is None else entropies_of(state)
    exported: list[dict[str, Any]] = []
    for account in replay.hands:
        if account.record is None:
            continue
        record: dict[str, Any] = msgspec.to_builtins(account.record)
        record["rules"] = account.rules.to_json()
        record["start"] = {"scores": list(account.start_scores), "bags": list(account.start_bags)}
        record["entropies"] = entropies
        exported.append(record)
    return exported
