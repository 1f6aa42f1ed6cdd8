"""The read models against the replay: the scoreboard and the hand records the API serves.

The projections copy what the record says; the replay knows what the record says. Any field
that differs is a projection that went wrong (or a read model written by hand). Read models
are eventually consistent, so a model that has not yet caught up is compared only on what it
has applied: the scoreboard's hands up to its ``version``, the hand records it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from domain.records import HandRecord
from domain.scenario import differences
from domain.state import Game
from domain.table import table_for
from services.audit.history import Problem

RULE = "the read models show what the record shows"
SHOWN_DIFFERENCES = 3


class ReadModelsView(Protocol):
    """What the audit needs of the read models, already read (so the audit stays pure):
    docs/api.md's scoreboard (``GET /v1/games/{id}/scoreboard``; None when there is none) and the
    finished hands' records (the ``hands`` of ``GET /v1/games/{id}/hands``), as JSON dicts."""

    @property
    def scoreboard(self) -> Mapping[str, Any] | None: ...

    @property
    def hand_records(self) -> Sequence[Mapping[str, Any]]: ...


@dataclass(frozen=True)
class ReadModels:
    """The plain :class:`ReadModelsView`: ``ReadModels(await queries.scoreboard(...),
    await queries.hand_records(...))``."""

    scoreboard: Mapping[str, Any] | None = None
    hand_records: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


def replayed_scoreboard(state: Game | None, records: Sequence[HandRecord]) -> dict[str, Any]:
    """docs/api.md's scoreboard as the replay gives it."""
    if state is None:
        return {}
    return {
        "units": [list(unit) for unit in table_for(state.rules).units],
        "hands": [
            {"hand": r.hand, "points": r.points, "scores": r.scores, "bags": r.bags}
            for r in records
        ],
        "scores": list(state.scores),
        "bags": list(state.bags),
        "game_over": state.status == "finished",
        "winners": list(state.winners),
    }


def read_model_findings(
    view: ReadModelsView,
    state: Game | None,
    finished: Sequence[tuple[HandRecord, int]],
    last_version: int,
) -> list[Problem]:
    """Every read model that differs from the replay. ``finished`` holds each finished hand's
    record with the version that scored it."""
    records = [record for record, _ in finished]
    scored_at = {record.hand: version for record, version in finished}
    problems = _scoreboard_findings(
        view.scoreboard, replayed_scoreboard(state, records), scored_at, last_version
    )
    problems.extend(_record_findings(view.hand_records, records, scored_at, last_version))
    return problems


def _scoreboard_findings(
    shown: Mapping[str, Any] | None,
    replayed: dict[str, Any],
    scored_at: dict[int, int],
    last_version: int,
) -> list[Problem]:
    if shown is None:
        if not replayed:
            return []
        detail = "the scoreboard read model has no such game"
        return [Problem(last_version, "read_model", detail, RULE)]
    applied = shown.get("version")
    caught_up = not isinstance(applied, int) or applied >= last_version
    problems: list[Problem] = []
    hands = shown.get("hands")
    for position, entry in enumerate(replayed.get("hands", [])):
        if not caught_up and (not isinstance(hands, list) or position >= len(hands)):
            break
        found = differences(entry, _item(hands, position), f"hands[{position}]")
        version = scored_at.get(entry["hand"], last_version)
        problems.extend(_told(version, "the scoreboard", found))
    if caught_up:
        totals = {key: value for key, value in replayed.items() if key != "hands"}
        problems.extend(_told(last_version, "the scoreboard", differences(totals, shown)))
    return problems


def _item(values: Any, position: int) -> Any:
    return values[position] if isinstance(values, list) and position < len(values) else None


def _record_findings(
    shown: Sequence[Mapping[str, Any]],
    records: Sequence[HandRecord],
    scored_at: dict[int, int],
    last_version: int,
) -> list[Problem]:
    by_hand = {record.get("hand"): record for record in shown if isinstance(record, Mapping)}
    latest = max((hand for hand in by_hand if isinstance(hand, int)), default=0)
    problems: list[Problem] = []
    for record in records:
        version = scored_at.get(record.hand, last_version)
        read = by_hand.pop(record.hand, None)
        if read is None:
            if record.hand < latest:  # a gap, not a model still catching up
                detail = f"the hand records have no record of hand {record.hand}"
                problems.append(Problem(version, "read_model", detail, RULE))
            continue
        where = f"the record of hand {record.hand}"
        problems.extend(_told(version, where, differences(msgspec.to_builtins(record), read)))
    for hand in by_hand:
        detail = f"the hand records hold hand {hand}, which the record never finished"
        problems.append(Problem(last_version, "read_model", detail, RULE))
    return problems


def _told(version: int, where: str, found: list[str]) -> list[Problem]:
    """One finding per read model entry, naming its first few differing fields."""
    if not found:
        return []
    shown = "; ".join(found[:SHOWN_DIFFERENCES])
    more = f" (and {len(found) - SHOWN_DIFFERENCES} more)" if len(found) > SHOWN_DIFFERENCES else ""
    detail = f"{where} differs from the replay (expected: the replay): {shown}{more}"
    return [Problem(version, "read_model", detail, RULE)]
