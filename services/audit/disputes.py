"""Findings in words, each with the rule that decided it.

A table that disputes an outcome wants to know which rule settled it: the docs/rules.md code that
refuses a play, the trump order that took a trick, the option behind every line of a score.
Findings about a hand name only cards that were played face up (never a hand, a deck, a pass or
a kept draw), so they can be shown to anyone.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.bids import Bid
from domain.cards import Card
from domain.commands import (
    AnyCommand,
    CreateGame,
    DealHand,
    DiscardCards,
    Draw,
    LookAtHand,
    PassCards,
    PlaceBid,
    PlayCard,
    RecordTally,
    TakeSeat,
)
from domain.errors import RuleViolation
from domain.events import (
    AnyEvent,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    CardsReceived,
    GameEnded,
    HandDealt,
    HandLooked,
    HandScored,
)
from domain.rules import Rules
from domain.scoring import HandScore, ScoreLine
from domain.table import TRUMP, table_for
from services.audit.history import Problem

SUIT_NAMES = {0: "club", 1: "diamond", 2: "heart", 3: "spade"}
TRICK_RULE_LED = "suit_led: the highest card of the suit led wins when no trump is played"
GAME_END_RULE = "target, lose_at, max_hands: the game ends after a hand that reaches one"


def command_text(command: AnyCommand) -> str:
    """What a command asked, naming only what the table saw face up."""
    if isinstance(command, PlayCard):
        return f"seat {command.seat} plays {command.card}"
    if isinstance(command, PlaceBid):
        return f"seat {command.seat} bids {command.bid}"
    if isinstance(command, PassCards):
        return f"seat {command.seat} passes {len(command.cards)} card(s)"
    if isinstance(command, DiscardCards):
        return f"seat {command.seat} discards {len(command.cards)} card(s) face down"
    if isinstance(command, Draw):
        return f"seat {command.seat} {'keeps' if command.keep else 'discards'} the top card"
    if isinstance(command, LookAtHand):
        return f"seat {command.seat} looks at its cards"
    if isinstance(command, TakeSeat):
        return f"{command.player!r} takes seat {command.seat}"
    if isinstance(command, CreateGame):
        return f"game {command.game_id} is created"
    if isinstance(command, DealHand):
        return "a hand is dealt"
    if isinstance(command, RecordTally):
        return f"the tally {list(command.tricks)} is recorded"
    return type(command).__name__


def event_text(event: AnyEvent | None) -> str:
    """An event as anyone may read it: its type and its public fields."""
    if event is None:
        return "nothing"
    if isinstance(event, HandDealt):
        return f"hand_dealt (hand {event.hand}, dealer {event.dealer})"
    if isinstance(event, HandLooked):
        return f"hand_looked (seat {event.seat})"
    if isinstance(event, CardsPassed):
        return f"cards_passed (seat {event.seat} to seat {event.to})"
    if isinstance(event, CardsDiscarded):
        return f"cards_discarded (seat {event.seat}, face down)"
    if isinstance(event, CardsReceived):
        return f"cards_received (seat {event.seat} from seat {event.giver})"
    if isinstance(event, CardDrawn):
        seen = "kept" if event.kept else f"discarded {event.card}"
        return f"card_drawn (seat {event.seat}, {seen})"
    if isinstance(event, CardPlayed):
        renege = ", a renege" if event.renege else ""
        return f"card_played (seat {event.seat}, {event.card}{renege})"
    if isinstance(event, HandScored):
        return f"hand_scored (hand {event.hand}, points {list(event.points)})"
    if isinstance(event, GameEnded):
        return f"game_ended (winners {list(event.winners)})"
    fields = ", ".join(f"{key} {value}" for key, value in _public_fields(event))
    return f"{_tag(event)} ({fields})"


def _tag(event: AnyEvent) -> str:
    return str(type(event).__struct_config__.tag)


def _public_fields(event: AnyEvent) -> list[tuple[str, object]]:
    return [(name, getattr(event, name)) for name in event.__struct_fields__]


def refusal_finding(version: int, command: AnyCommand, refusal: RuleViolation) -> Problem:
    """The rules refuse a command the record shows as accepted."""
    detail = (
        f"{command_text(command)}: the rules refuse it "
        f"({refusal.code}: {refusal.detail or 'no detail'})"
    )
    return Problem(version, "replay", detail, refusal.code)


def difference_finding(version: int, expected: AnyEvent | None, found: AnyEvent | None) -> Problem:
    """The record shows ``found`` where the rules give ``expected``."""
    if (
        isinstance(expected, CardPlayed)
        and isinstance(found, CardPlayed)
        and expected.renege != found.renege
    ):
        said = "a renege" if expected.renege else "no renege"
        detail = f"seat {found.seat}'s {found.card} is {said} by the rules, not as recorded"
        return Problem(version, "replay", detail, "renege")
    if isinstance(expected, GameEnded) or isinstance(found, GameEnded):
        detail = f"the record has {event_text(found)} where the rules give {event_text(expected)}"
        return Problem(version, "replay", detail, GAME_END_RULE)
    detail = f"the record has {event_text(found)} where the rules give {event_text(expected)}"
    return Problem(version, "replay", detail)


def trick_finding(
    version: int,
    rules: Rules,
    number: int,
    leader: int,
    cards: Sequence[Card],
    expected: int,
    found: int,
) -> Problem:
    """A trick recorded as won by the wrong seat, with the card and the rule that take it."""
    table = table_for(rules)
    winning = cards[(expected - leader) % table.players]
    played = ", ".join(f"{(leader + k) % table.players}:{card}" for k, card in enumerate(cards))
    detail = (
        f"trick {number} ({played}, led by seat {leader}) goes to seat {expected}, whose "
        f"{winning} takes it; the record gives it to seat {found}"
    )
    if table.suit_of[winning.ordinal] == TRUMP:
        order = " ".join(str(card) for card in table.trump_order[:5])
        rule = f"trump_order {rules.trump_order!r}: a trump beats every other suit ({order} ...)"
    else:
        rule = TRICK_RULE_LED
    return Problem(version, "replay", detail, rule)


def arithmetic(
    score: HandScore,
    start_scores: Sequence[int],
    start_bags: Sequence[int],
    units: Sequence[int] | None = None,
) -> list[str]:
    """The rules' score, line by line, each line naming the option that decided it."""
    shown = range(len(score.points)) if units is None else units
    out: list[str] = []
    for unit in shown:
        out.extend(_line(line) for line in score.lines if line.unit == unit)
        out.append(
            f"unit {unit}: {start_scores[unit]} {score.points[unit]:+d} = {score.scores[unit]}; "
            f"bags {start_bags[unit]} -> {score.bags[unit]}"
        )
    return out


def _line(line: ScoreLine) -> str:
    return f"unit {line.unit}: {line.rule} {line.points:+d} ({line.text})"


def score_finding(
    version: int,
    hand: int,
    expected: HandScore,
    found: HandScored,
    start_scores: Sequence[int],
    start_bags: Sequence[int],
) -> Problem | None:
    """The record's score against the rules' own, or None when they agree."""
    wrong = [
        unit
        for unit in range(len(expected.points))
        if _at(found.points, unit) != expected.points[unit]
        or _at(found.scores, unit) != expected.scores[unit]
        or _at(found.bags, unit) != expected.bags[unit]
    ]
    if not wrong:
        return None
    detail = (
        f"hand {hand} is recorded as points {list(found.points)}, scores {list(found.scores)}, "
        f"bags {list(found.bags)}; the rules give points {list(expected.points)}, scores "
        f"{list(expected.scores)}, bags {list(expected.bags)} (unit(s) "
        f"{', '.join(map(str, wrong))} differ)"
    )
    decided_by = dict.fromkeys(line.rule for line in expected.lines if line.unit in wrong)
    rule = ", ".join(decided_by) or "contract"
    lines = arithmetic(expected, start_scores, start_bags, wrong)
    return Problem(version, "score", detail, rule, arithmetic=lines)


def _at(values: Sequence[int], index: int) -> int | None:
    return values[index] if index < len(values) else None


def tally_findings(
    version: int,
    found: HandScored,
    bids: list[Bid | None],
    won: Sequence[int],
    reneged: Sequence[int],
) -> list[Problem]:
    """The score's bids, tricks and reneges against those the hand's events show."""
    problems: list[Problem] = []
    if list(found.bids) != list(bids):
        detail = f"hand {found.hand} is scored on bids {list(found.bids)}; the bids were {bids}"
        problems.append(Problem(version, "replay", detail, "the bids placed"))
    if list(found.tricks) != list(won):
        detail = (
            f"hand {found.hand} is scored on tricks {list(found.tricks)}; the tricks won were "
            f"{list(won)}"
        )
        problems.append(Problem(version, "replay", detail, "the tricks won"))
    if list(found.reneged) != list(reneged):
        detail = (
            f"hand {found.hand} is scored with reneging unit(s) {list(found.reneged)}; the plays "
            f"show {list(reneged)}"
        )
        problems.append(Problem(version, "replay", detail, "renege"))
    return problems


def deal_difference(version: int, expected: HandDealt, found: HandDealt) -> Problem | None:
    """A deal against the one its recorded source gives, naming fields, never cards."""
    differ = [
        name
        for name in ("hand", "dealer", "commitment", "deck", "seed")
        if getattr(expected, name) != getattr(found, name)
    ]
    seats = [
        seat
        for seat in range(max(len(expected.hands), len(found.hands)))
        if expected.hands[seat : seat + 1] != found.hands[seat : seat + 1]
    ]
    if seats:
        differ.append("the hands of seat(s) " + ", ".join(map(str, seats)))
    if not differ:
        return None
    detail = (
        f"hand {found.hand}'s deal differs from the one its seed gives (dealt from the left of "
        f"dealer {expected.dealer}): {', '.join(differ)}"
    )
    rule = "deal: the seed's shuffle, dealt from the left of the dealer; the dealer rotates"
    return Problem(version, "replay", detail, rule)
