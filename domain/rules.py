"""Rule sets: every option and preset of docs/rules.md, resolved and validated at creation.

A rule set is written ``{"preset": NAME, ...overrides}``. :func:`resolve_rules` turns that into a
:class:`Rules` with every option filled in, or raises :class:`~domain.errors.InvalidRules` naming
the option that cannot be played::

    >>> resolve_rules({"preset": "cutthroat"}).players
    3
    >>> resolve_rules({"preset": "partnership", "trump_order": "jokers"})
    Traceback (most recent call last):
    ...
    domain.errors.InvalidRules: invalid_rules: trump_order 'jokers' needs jokers: true
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
from msgspec import Meta

from domain.cards import Card
from domain.errors import InvalidRules

if TYPE_CHECKING:
    from domain.table import Table

TrumpOrder = Literal["standard", "jokers", "jokers_deuce", "jokers_deuces"]
DealKind = Literal["deal", "draw"]
FailedNilTricks = Literal["bags_if_partner_made", "partner", "none"]
SpadesLead = Literal["broken", "any"]
FirstLead = Literal["left_of_dealer", "lowest_club", "dealer"]
Renege = Literal["reject", "penalize"]
FailedBid = Literal["bid", "short"]
FirstHand = Literal["bid", "no_bid"]
PresetName = Literal[
    "partnership",
    "solo",
    "cutthroat",
    "three-player-house",
    "two-player",
    "six-player",
    "jokers-54",
]
PLAYERS = (2, 3, 4, 6)
DECKS = (1, 2)
MAX_TRICKS = 54
"""The most tricks any table has: two decks with jokers, two players."""
MAX_POINTS = 1_000_000
"""The largest number of points any one option names (a target, a bonus, a penalty)."""
MAX_HANDS = 10_000

Count = Annotated[int, Meta(ge=0, le=2 * 54)]
"""Cards of the pack: none to two decks with their jokers."""
Tricks = Annotated[int, Meta(ge=0, le=MAX_TRICKS)]
Points = Annotated[int, Meta(ge=0, le=MAX_POINTS)]
SignedPoints = Annotated[int, Meta(ge=-MAX_POINTS, le=MAX_POINTS)]


class Rules(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    cache_hash=True,
    dict=True,  # only so that a rule set keeps its table beside it (never encoded)
):
    """Every option of a table, resolved. Defaults are those of the ``partnership`` preset."""

    preset: PresetName = "partnership"
    players: Annotated[int, Meta(ge=min(PLAYERS), le=max(PLAYERS))] = 4
    partnerships: bool = True
    decks: Annotated[int, Meta(ge=min(DECKS), le=max(DECKS))] = 1
    deck_remove: Annotated[tuple[Card, ...], Meta(max_length=2 * 54)] = ()
    jokers: bool = False
    trump_order: TrumpOrder = "standard"
    out_of_play: Count = 0
    dealer_discard: Count = 0
    deal: DealKind = "deal"
    first_hand: FirstHand = "bid"
    min_bid: Tricks = 1
    team_min_bid: Tricks = 0
    nil: bool = True
    nil_value: Points = 100
    blind_nil: bool = True
    blind_nil_value: Points = 200
    blind_nil_behind: Points | None = 100
    blind_nil_pass: Annotated[int, Meta(ge=0, le=MAX_TRICKS - 1)] = 2
    blind_bids: Tricks = 0
    failed_nil_tricks: FailedNilTricks = "bags_if_partner_made"
    spades_lead: SpadesLead = "broken"
    first_lead: FirstLead = "left_of_dealer"
    must_beat: bool = False
    renege: Renege = "reject"
    failed_bid: FailedBid = "bid"
    overtrick_points: SignedPoints = 1
    bag_limit: Annotated[int, Meta(ge=1, le=MAX_POINTS)] | None = 10
    bag_penalty: Points = 100
    ten_for_two_hundred: bool = False
    boston: bool = False
    blind_boston: bool = False
    all_tricks_bonus: Points = 0
    target: Annotated[int, Meta(ge=1, le=MAX_POINTS)] = 500
    lose_at: SignedPoints | None = None
    max_hands: Annotated[int, Meta(ge=1, le=MAX_HANDS)] | None = None

    @property
    def pack_size(self) -> int:
        """Cards in the pack: ``decks`` decks, with their jokers, less ``deck_remove``."""
        return self.decks * (52 + (2 if self.jokers else 0)) - len(self.deck_remove)

    @property
    def tricks_per_hand(self) -> int:
        """Cards each seat holds, which is the number of tricks in a hand."""
        if self.deal == "draw":
            return DRAW_HAND
        return (self.pack_size - self.out_of_play - self.dealer_discard) // self.players

    @cached_property
    def table(self) -> Table:
        """The table these rules describe (:func:`domain.table.table_for`), kept beside them:
        the engine asks for it at every play, and an attribute is the cheapest way to ask."""
        from domain.table import table_for

        return table_for(self)

    def to_json(self) -> dict[str, Any]:
        """Every option, as JSON values (lists, not tuples)."""
        out: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(self))
        return out

    @cached_property
    def shown(self) -> dict[str, Any]:
        """:meth:`to_json`, made once per rule set and shared by every view of a game under
        it (a view of the table was a copy of the rules each time): read it, never change it."""
        return self.to_json()


DRAW_HAND = 13
"""Cards each player holds when the two-player draw is over."""

PRESETS: dict[str, dict[str, Any]] = {
    "partnership": {},
    "solo": {
        "players": 4,
        "partnerships": False,
        "blind_nil_pass": 0,
        "failed_nil_tricks": "none",
    },
    "cutthroat": {
        "players": 3,
        "partnerships": False,
        "deck_remove": ["2C"],
        "blind_nil_pass": 0,
        "failed_nil_tricks": "none",
        "renege": "reject",
    },
    "three-player-house": {
        "players": 3,
        "partnerships": False,
        "deck_remove": ["2C"],
        "nil": False,
        "blind_nil": False,
        "first_lead": "lowest_club",
        "failed_nil_tricks": "none",
    },
    "two-player": {
        "players": 2,
        "partnerships": False,
        "deal": "draw",
        "blind_nil": False,
        "first_lead": "dealer",
        "failed_nil_tricks": "none",
    },
    "six-player": {
        "players": 6,
        "partnerships": True,
        "decks": 2,
        "deck_remove": ["2C", "2C"],
    },
    "jokers-54": {
        "jokers": True,
        "trump_order": "jokers_deuce",
        "dealer_discard": 2,
    },
}


def resolve_rules(raw: Mapping[str, Any] | Rules) -> Rules:
    """Resolve ``{"preset": NAME, ...overrides}`` into a validated :class:`Rules`."""
    if isinstance(raw, Rules):
        _check(raw)
        return raw
    if not isinstance(raw, Mapping):
        raise InvalidRules(f"a rule set is a JSON object, not {type(raw).__name__}")
    preset = raw.get("preset", "partnership")
    if not isinstance(preset, str) or preset not in PRESETS:
        raise InvalidRules(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    merged = {**PRESETS[preset], **{key: _whole(value) for key, value in raw.items()}}
    merged["preset"] = preset
    if isinstance(merged.get("deck_remove"), list):
        merged["deck_remove"] = [_card_text(text) for text in merged["deck_remove"]]
    try:
        rules = msgspec.convert(merged, Rules, strict=True)
    except msgspec.ValidationError as error:
        raise InvalidRules(_explain(str(error))) from None
    _check(rules)
    return rules


def _card_text(text: Any) -> Any:
    """Accept ``10H`` and lower case in ``deck_remove`` (:data:`CARD_INPUT_PATTERN`); leave
    the rest to ``convert``."""
    if isinstance(text, str) and re.fullmatch(CARD_INPUT_PATTERN, text):
        return Card.parse(text).value
    return text


def _whole(value: Any) -> Any:
    """A number JSON writes ``300.0`` is the integer 300 (as JSON Schema counts it)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _explain(message: str) -> str:
    """Turn msgspec's ``... - at `$.option` `` into ``option: ...``."""
    if " - at `$." in message:
        text, _, where = message.partition(" - at `$.")
        option = where.rstrip("`")
        if text.startswith("Object contains unknown field"):
            return f"unknown option {option!r}"
        return f"{option}: {text[0].lower()}{text[1:]}"
    if message.startswith("Object contains unknown field"):
        return "unknown option " + message.split("`")[1]
    return message


def _check(rules: Rules) -> None:
    """The combinations that cannot be played."""
    if rules.players not in PLAYERS:
        raise InvalidRules(f"players must be 2, 3, 4 or 6, not {rules.players}")
    if rules.partnerships and rules.players not in (4, 6):
        raise InvalidRules("partnerships need 4 or 6 players")
    if rules.decks not in DECKS:
        raise InvalidRules(f"decks must be 1 or 2, not {rules.decks}")
    if rules.trump_order != "standard" and not rules.jokers:
        raise InvalidRules(f"trump_order {rules.trump_order!r} needs jokers: true")
    if rules.jokers and rules.trump_order == "standard":
        raise InvalidRules("jokers: true needs a trump_order that ranks them")
    for card in set(rules.deck_remove):
        if card.is_joker and not rules.jokers:
            raise InvalidRules(f"deck_remove: {card} is not in a pack without jokers")
        if rules.deck_remove.count(card) > rules.decks:
            raise InvalidRules(f"deck_remove takes {card} out more often than the pack holds it")
    for option in ("out_of_play", "dealer_discard"):
        if getattr(rules, option) < 0:
            raise InvalidRules(f"{option} cannot be negative")
    if rules.deal == "draw":
        if rules.players != 2:
            raise InvalidRules("deal 'draw' is the two-player deal: players must be 2")
        if rules.dealer_discard:
            raise InvalidRules("dealer_discard has no dealer to discard in deal 'draw'")
        dealt = rules.pack_size - rules.out_of_play
        if dealt < 4 * DRAW_HAND:  # each turn sees two cards; both players draw 13 turns
            raise InvalidRules(f"deal 'draw' needs 52 cards to draw from; this pack leaves {dealt}")
    else:
        dealt = rules.pack_size - rules.out_of_play - rules.dealer_discard
        if dealt <= 0 or dealt % rules.players:
            raise InvalidRules(
                f"{rules.pack_size} cards less {rules.out_of_play} out of play and "
                f"{rules.dealer_discard} discarded do not divide evenly among "
                f"{rules.players} players"
            )
    tricks = rules.tricks_per_hand
    if not 0 <= rules.min_bid <= tricks:
        raise InvalidRules(f"min_bid must be between 0 and {tricks}")
    if not 0 <= rules.team_min_bid <= tricks:
        raise InvalidRules(f"team_min_bid must be between 0 and {tricks}")
    if not 0 <= rules.blind_nil_pass < tricks:
        raise InvalidRules(f"blind_nil_pass must be between 0 and {tricks - 1}")
    if not 0 <= rules.blind_bids <= tricks:
        raise InvalidRules(f"blind_bids must be between 0 and {tricks}")
    if rules.blind_boston and not (rules.boston and rules.blind_bids):
        raise InvalidRules("blind_boston needs boston: true and blind_bids above 0")
    for option in ("nil_value", "blind_nil_value", "bag_penalty", "all_tricks_bonus"):
        if getattr(rules, option) < 0:
            raise InvalidRules(f"{option} cannot be negative")
    if rules.blind_nil_behind is not None and rules.blind_nil_behind < 0:
        raise InvalidRules("blind_nil_behind cannot be negative")
    if rules.bag_limit is not None and rules.bag_limit < 1:
        raise InvalidRules("bag_limit must be at least 1, or null")
    if rules.target < 1:
        raise InvalidRules("target must be positive")
    if rules.lose_at is not None and rules.lose_at >= rules.target:
        raise InvalidRules("lose_at must be below target")
    if rules.max_hands is not None and rules.max_hands < 1:
        raise InvalidRules("max_hands must be at least 1, or null")


CARD_INPUT_PATTERN = "^(?:(?:10|[2-9TJQKAtjqka])[CDHScdhs]|[BbLl][Jj])$"
"""A card as a request may write it: docs/rules.md's text, ``10`` for ``T``, either case."""


def rule_set_schema() -> dict[str, Any]:
    """The JSON Schema of a rule set as a request writes it, ``{"preset": NAME, ...overrides}``:
    every option of :class:`Rules` with its type, its values or range, and no other key.

    Generated from :class:`Rules` (its types and ``Meta`` bounds are what :func:`resolve_rules`
    enforces), so the HTTP and NATS contracts say what the domain accepts. Defaults are left
    out: they are the preset's. What a schema cannot say is whether the options chosen make a
    table that can be played (the pack dealt evenly, ``min_bid`` within the tricks of a hand,
    ``lose_at`` below ``target``, ...): such a set is refused as ``invalid_rules``."""
    full = msgspec.json.schema(Rules)
    defs = full.pop("$defs")
    options: dict[str, Any] = {}
    for name, option in defs["Rules"]["properties"].items():
        option = {key: value for key, value in option.items() if key != "default"}
        options[name] = option
    options["players"] = {"enum": list(PLAYERS), "type": "integer"}
    options["decks"] = {"enum": list(DECKS), "type": "integer"}
    options["deck_remove"]["items"] = {
        "type": "string",
        "pattern": CARD_INPUT_PATTERN,
        "description": "A card: `2C`..`AS`, `10H` for `TH`, either case; `BJ`, `LJ` jokers.",
    }
    options["preset"]["description"] = "The preset the other options override: " + "; ".join(
        f"`{name}` {_json_text(overrides) if overrides else '(the defaults)'}"
        for name, overrides in PRESETS.items()
    )
    return {
        "title": "RuleSetInput",
        "description": "A rule set: a preset and the options that override it (docs/rules.md).",
        "type": "object",
        "properties": dict(sorted(options.items())),
        "additionalProperties": False,
        "examples": [{"preset": "partnership", "target": 300}],
    }


def _json_text(value: Any) -> str:
    return msgspec.json.encode(value).decode()
