"""The HTTP API's bodies, as pydantic models: what requests may hold and what responses hold.

Only the HTTP edge uses these. Responses mirror the domain's own shapes field for field
(``domain.views.PublicState``/``SeatView``, ``domain.events``, ``domain.records.HandRecord``),
so the OpenAPI document describes exactly what leaves the service; a test keeps them in step.
Request models are strict: a value of the wrong JSON type is ``malformed``, never coerced.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from domain.bids import BID_PATTERN
from domain.knockout import MAX_EXTRA_DEALS
from domain.league import (
    MAX_ADJUSTMENT,
    MAX_PLAYERS,
    MAX_REASON,
    MAX_ROUNDS,
    REASON_PATTERN,
    MatchTies,
    PairingChoice,
)
from domain.movement import MAX_BOARDS_PER_ROUND
from domain.platforms import Seating, Visibility
from domain.rules import (
    CARD_INPUT_PATTERN,
    MAX_HANDS,
    MAX_POINTS,
    PLAYERS,
    rule_set_schema,
)
from domain.seating import (
    ENTROPY_PATTERN,
    MAX_ENTROPY_HEX,
    PLAYER_NAME_PATTERN,
    PLAYER_NAME_RULE,
    is_player_name,
)

Card = Annotated[
    str,
    Field(
        pattern=r"^(?:[2-9TJQKA][CDHS]|BJ|LJ)$",
        description="Rank and suit, e.g. `QH`, `TS`; jokers `BJ` and `LJ` (docs/rules.md).",
        examples=["QH"],
    ),
]
CardInput = Annotated[
    str,
    Field(
        pattern=CARD_INPUT_PATTERN,
        description="A card as docs/rules.md writes it; `10H` and lower case are accepted too.",
        examples=["QH"],
    ),
]


def _whole(value: object) -> object:
    """``3.0`` is the integer 3, as JSON Schema counts integers (``true`` stays refused)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Whole = Annotated[int, BeforeValidator(_whole)]
"""An integer of a request: ``3`` or ``3.0``, never ``"3"`` or ``true`` (its bounds go before
the validator, so that the JSON Schema states them)."""
SeatNumber = Annotated[int, Field(ge=0, le=max(PLAYERS) - 1), BeforeValidator(_whole)]
"""A seat, 0 for the first; a seat the table does not have is refused by the game."""


def _player_name(value: str) -> str:
    if not is_player_name(value):
        raise ValueError(PLAYER_NAME_RULE)
    return value


PlayerName = Annotated[
    str,
    AfterValidator(_player_name),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": PLAYER_NAME_PATTERN,
            "minLength": 1,
            "maxLength": 64,
            "description": "1 to 64 characters: no control character, line separator or "
            "invisible space or mark (a plain space is fine).",
            "examples": ["ada"],
        }
    ),
]
Entropy = Annotated[
    str,
    Field(
        pattern=ENTROPY_PATTERN,
        max_length=MAX_ENTROPY_HEX,
        description="Whole bytes of hex (at most 256 digits) the deal mixes in.",
    ),
]
RuleSetInput = Annotated[
    dict[str, Any],
    WithJsonSchema(rule_set_schema()),
]
"""``{"preset": NAME, ...overrides}``: its schema is generated from the domain's options
(:func:`domain.rules.rule_set_schema`); the domain resolves and checks it."""
Bid = Annotated[
    Whole | Annotated[str, Field(pattern=BID_PATTERN)],
    Field(
        description="A number of tricks, `nil`, `blind_nil`, or a blind bid `blind_N` "
        "(`blind_6`: six tricks bid before looking, `blind_bids`).",
        examples=[3, "nil", "blind_6"],
    ),
]
Version = Annotated[int, Field(ge=0, description="A game version: how many events made it.")]
VersionInput = Annotated[
    int,
    Field(ge=0, le=2**53, description="A game version: how many events made it."),
    BeforeValidator(_whole),
]


DOMAIN_SCHEMA = "x-spades-domain-schema"
"""Marks where the document takes a schema from the domain's structs: the OpenAPI tidying
(:mod:`services.gateway.openapi`) puts a ``$ref`` to the named component there."""


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


# --------------------------------------------------------------------------- requests


class CreateGame(_Strict):
    rules: RuleSetInput
    dealer: SeatNumber | None = Field(
        default=None,
        description="The first dealer; absent, the game's shuffle cuts for it. A seat the "
        "table does not have is 422 `invalid_rules`.",
    )
    entropy: Entropy = ""
    visibility: Visibility | None = Field(
        default=None,
        description="`public`: anyone may read and watch it; `private`: its platform and its "
        "seats only. Absent: `private` when the server has platform keys, else `public`.",
    )
    seating: Seating = Field(
        default="platform",
        description="`platform`: its platform seats its users; `open`: anyone may sit.",
    )
    league: Annotated[str | None, WithJsonSchema({"type": "null"})] = Field(
        default=None,
        max_length=64,
        description="Never settable: a game joins a league only through the league's rounds "
        "(422 `invalid_rules`).",
    )
    clock: ClockSettings | None = Field(
        default=None,
        description="The game's clock; absent: none (a seat may take as long as it likes).",
        examples=[{"turn_s": 20, "bank_s": 60, "on_timeout": "auto", "away_after": 2}],
    )


class ClockSettings(_Strict):
    """A game's clock (docs/api.md, "Clocks"): ``turn_s`` per turn plus a ``bank_s`` reserve per
    seat; at the deadline ``auto`` acts for the seat, ``forfeit`` ends the game with its unit
    losing; after ``away_after`` timeouts in a row (0: never) the seat is acted for at once."""

    turn_s: float = Field(gt=0, le=86_400, description="Seconds each turn gives.", examples=[20])
    bank_s: float = Field(
        default=0, ge=0, le=86_400, description="Seconds per seat that time past turn_s uses."
    )
    on_timeout: Literal["auto", "forfeit"] = Field(
        default="auto", description="`auto`: the service acts; `forfeit`: the seat's unit loses."
    )
    away_after: Annotated[int, Field(ge=0, le=1000), BeforeValidator(_whole)] = Field(
        default=0, description="Timeouts in a row that make a seat away; 0: never."
    )


class TakeSeat(_Strict):
    player: PlayerName
    seat: SeatNumber | None = Field(
        default=None,
        description="Absent: the first free seat. One the table does not have is 409 "
        "`seat_taken`, as a taken one.",
    )
    entropy: Entropy = ""


class ReissueToken(_Strict):
    player: PlayerName | None = Field(
        default=None,
        description="A substitute who sits in the seat from now on; absent: the same player.",
        examples=["bea"],
    )


class _Action(_Strict):
    expected_version: VersionInput | None = Field(
        default=None, description="Refused with 409 `conflict` when the game has moved on."
    )
    seat: SeatNumber | None = Field(
        default=None, description="Optional; when given it must be the seat token's seat."
    )


class BidAction(_Action):
    type: Literal["bid"]
    bid: Bid


class PlayAction(_Action):
    type: Literal["play"]
    card: CardInput


class PassAction(_Action):
    type: Literal["pass"]
    cards: list[CardInput] = Field(max_length=54)


class DiscardAction(_Action):
    """The dealer's discard (`dealer_discard`); with two decks a card named twice gives up
    both copies."""

    type: Literal["discard"]
    cards: list[CardInput] = Field(max_length=54)


class DrawAction(_Action):
    type: Literal["draw"]
    keep: bool


class LookAction(_Action):
    type: Literal["look"]


class BackAction(_Action):
    """An away seat's player is back: the service stops acting for it at once."""

    type: Literal["back"]


Action = BidAction | PlayAction | PassAction | DiscardAction | DrawAction | LookAction | BackAction
"""The body of ``POST .../actions``, told apart by ``type``."""


# --------------------------------------------------------------------------- game state


SeatInfo = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "SeatInfo"})]
"""A seat and its player: :class:`domain.views.SeatInfo`."""
TrickCard = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "TrickCard"})]
"""A card of the trick being played and its seat: :class:`domain.views.TrickCard`."""
ClockState = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "ClockState"})]
"""A game's clock as anyone may see it: :class:`domain.views.ClockView` (its seats'
:class:`domain.views.SeatClockView` are ``SeatClock``)."""


PublicState = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "PublicState"})]
"""The table as anyone watching it sees it: :class:`domain.views.PublicState`, its schema (and
its rules', seats', trick's and clock's) generated from the struct the answer is encoded from."""
SeatView = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "SeatView"})]
"""The table as one seat sees it, with every action it may send now (``LegalBid``,
``LegalPlay``, ...): :class:`domain.views.SeatView`."""


SeatTaken = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "SeatTaken"})]
"""A seat and its token: :class:`contracts.answers.SeatTaken` (the domain's event of that name is
``SeatTakenEvent``)."""


# --------------------------------------------------------------------------- events


Event = Annotated[
    dict[str, Any],
    WithJsonSchema({DOMAIN_SCHEMA: "Event"}),
]
"""An event as the reader may see it: the domain's own struct (:data:`domain.events.AnyEvent`),
encoded by msgspec. Its schema is generated from the domain (:mod:`services.gateway.openapi`
puts the struct's JSON Schema in the document), so no shape here mirrors it by hand."""


Events = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "EventPage"})]
"""A page of events (:class:`contracts.answers.EventPage`, each :class:`contracts.wire.
EventRecord`)."""
Acted = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Acted"})]
"""An action's answer and who acts next: :class:`contracts.answers.Acted`."""


# --------------------------------------------------------------------------- records


HandRecords = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "HandRecords"})]
"""Every finished hand's record with its score lines: :class:`contracts.answers.HandRecords`
(each the domain's :class:`domain.records.HandRecord` with ``score_lines``, ``HandRecord``)."""
HandRecordWithReceipt = Annotated[
    dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "HandRecordWithReceipt"})
]
"""One finished hand with its receipt: :class:`contracts.answers.HandRecordWithReceipt`."""
Receipt = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Receipt"})]
"""A hand's receipt from the audit log: :class:`contracts.audit_log.Receipt`."""
Logs = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Logs"})]
"""Every partition's log head: :class:`contracts.audit_log.Logs`."""
InclusionProof = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "InclusionProof"})]
ConsistencyProof = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "ConsistencyProof"})]


Scoreboard = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Scoreboard"})]
"""A game's scores hand by hand: :class:`contracts.answers.Scoreboard` (its hands ``HandScore``)."""
GameList = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "GameList"})]
"""A page of the game list: :class:`contracts.answers.GameList` (its games ``GameSummary``)."""


# --------------------------------------------------------------------------- leagues


class KnockoutSettings(_Strict):
    top: Annotated[int, Field(ge=2, le=MAX_PLAYERS), BeforeValidator(_whole)] | None = Field(
        default=None,
        description="The knockout's field: the first `top` of the standings (or of `ratings`) "
        "of the players still in; absent: all of them.",
    )
    deals: Annotated[int, Field(ge=1, le=MAX_HANDS), BeforeValidator(_whole)] | None = Field(
        default=None, description="A match is this many hands (give `deals` or `target`)."
    )
    target: Annotated[int, Field(ge=1, le=MAX_POINTS), BeforeValidator(_whole)] | None = Field(
        default=None, description="A match is played to this score (give `deals` or `target`)."
    )
    ratings: dict[str, float] | None = Field(
        default=None,
        description="Seed by these ratings (every player's, highest first, ties by name) "
        "rather than by the standings of the rounds before.",
    )
    tie_break: MatchTies = Field(
        default="play_on",
        description="A match tied on top at its end: `play_on` a hand at a time until one "
        "side leads alone; `extra_deal` so for up to `extra_deals` hands, then the better "
        "seed wins; `higher_seed` the better seed wins at once.",
    )
    extra_deals: Annotated[int, Field(ge=0, le=MAX_EXTRA_DEALS), BeforeValidator(_whole)] = Field(
        default=3, description="Under `extra_deal`: the most hands played on for a tie."
    )


class CreateLeague(_Strict):
    name: PlayerName = Field(
        description="As a player's name, 1 to 64 printable characters.",
        examples=["Tuesday league"],
    )
    rules: RuleSetInput = Field(description="The rule set of every game, as for a game.")
    players: list[PlayerName] = Field(
        min_length=2,
        max_length=MAX_PLAYERS,
        description="Each name once.",
        json_schema_extra={"uniqueItems": True},
    )
    rounds: Annotated[int, Field(ge=0, le=MAX_ROUNDS), BeforeValidator(_whole)] | None = Field(
        default=None,
        description="The league's rounds; absent: no end. With a `knockout`, the rounds "
        "before it (0 or absent: the league is only the knockout).",
    )
    pairing: PairingChoice = Field(
        default="auto",
        description="`auto`: round robin when the rounds let everyone meet everyone (or there "
        "is no end), Swiss otherwise.",
    )
    visibility: Visibility | None = Field(
        default=None,
        description="Of the league and every game of its rounds, as for a game.",
    )
    clock: ClockSettings | None = Field(
        default=None, description="The clock of every table the league starts; absent: none."
    )
    knockout: KnockoutSettings | None = Field(
        default=None,
        description="A knockout the league ends with, head to head (the two-player game, or a "
        "duplicate event's fixed pairs): docs/leagues.md, Knockouts.",
    )
    format: Literal["standard", "duplicate"] = Field(
        default="standard",
        description="`standard`: each table plays its own game to the rules' end. `duplicate`: "
        "every table of a round plays the round's boards (the same cards), seated by a "
        "generated movement (fixed pairs at a partnership table, partners listed side by "
        "side); results are compared by matchpoints. A duplicate league has a fixed number of "
        "rounds (`rounds`, else the movement's) and takes `pairing: auto` only.",
    )
    boards_per_round: (
        Annotated[int, Field(ge=1, le=MAX_BOARDS_PER_ROUND), BeforeValidator(_whole)] | None
    ) = Field(default=None, description="A duplicate league's boards a round; absent: 2.")
    partners: Literal["fixed", "rotating"] = Field(
        default="fixed",
        description="A duplicate league at partnership tables: `fixed` pairs (partners listed "
        "side by side), or `rotating`: an individual event, each player ranked alone, partners "
        "changing round by round.",
    )
    convention: Literal["as_scored", "transferred"] = Field(
        default="as_scored",
        description="How a duplicate league counts sets and bags before it compares: "
        "`as_scored` as the table scored them, or `transferred` (a set's points go to the "
        "other side; a bag is -1 to its taker and +1 to the others).",
    )


class ScheduleRound(_Strict):
    round: Annotated[int, Field(ge=1, le=2**53), BeforeValidator(_whole)] | None = Field(
        default=None,
        description="The round meant; refused (409) if another is next.",
    )


class Withdraw(_Strict):
    player: PlayerName = Field(description="A player of the league, still in it.")


class Substitute(_Strict):
    player: PlayerName = Field(description="The league player whose seat is taken over.")
    substitute: PlayerName = Field(description="Who plays the seat from now on.")


Reason = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_REASON,
        pattern=REASON_PATTERN,
        description="Why, as the players and the audit will read it: printable characters, "
        "not only spaces.",
        examples=["slow play, warned twice"],
    ),
]


class AdjustScore(_Strict):
    player: PlayerName = Field(description="A player of the league.")
    points: (
        Annotated[int, Field(ge=1, le=MAX_ADJUSTMENT), BeforeValidator(_whole)]
        | Annotated[int, Field(ge=-MAX_ADJUSTMENT, le=-1), BeforeValidator(_whole)]
    ) = Field(description="Added to the player's points (negative: taken); not 0.")
    reason: Reason
    round: Annotated[int, Field(ge=1, le=MAX_ROUNDS), BeforeValidator(_whole)] | None = Field(
        default=None, description="The round it concerns, if one; it must be scheduled."
    )


class VoidTable(_Strict):
    game_id: str = Field(
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="The table's game, of a round of the league; it must be over.",
        examples=["north-2-3"],
    )
    reason: Reason
    board: Annotated[int, Field(ge=1, le=2**31), BeforeValidator(_whole)] | None = Field(
        default=None,
        description="A duplicate event's one board to void at the table (absent: the whole "
        "table); it is then scored over the other tables.",
    )


League = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "League"})]
"""A league: :class:`contracts.leagues.League` (its substitutions ``Substitution``)."""
Withdrawn = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Withdrawn"})]
"""A player withdrawn: :class:`contracts.leagues.Withdrawn`."""
Substituted = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Substituted"})]
"""A substitute seated, with the seat's new token: :class:`contracts.leagues.Substituted`."""
RoundStarted = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "RoundStarted"})]
"""A round started: :class:`contracts.leagues.RoundStarted` (its tables ``StartedTable``)."""
LeagueRound = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "LeagueRound"})]
"""A scheduled round: :class:`contracts.leagues.LeagueRound` (its tables ``RoundTable``)."""
Standings = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Standings"})]
"""The standings: :class:`contracts.leagues.Standings` (``PlayerStanding``, ``Rating``)."""
LeagueResults = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "LeagueResults"})]
"""The results export: :class:`contracts.leagues.LeagueResults` (its rows ``ResultRow``)."""
IntegrityReport = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "IntegrityReport"})]
"""A league's integrity report: :class:`contracts.leagues.IntegrityReport` (its signals
``IntegritySignal``, their hands ``EvidenceHand``)."""
LeagueBoards = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "LeagueBoards"})]
"""A duplicate league's cross-table: :class:`contracts.leagues.LeagueBoards`."""
Adjustment = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Adjustment"})]
"""An adjusted score recorded: :class:`contracts.leagues.Adjustment`."""
VoidedTable = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "VoidedTable"})]
"""A table voided: :class:`contracts.leagues.VoidedTable`."""


# --------------------------------------------------------------------------- audit


Audit = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Audit"})]
"""A game's audit: :class:`services.audit.report.AuditReport` (its hands ``HandAudit``, its
problems ``AuditProblem``), the very struct the audit makes."""


# --------------------------------------------------------------------------- service


Health = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Health"})]
Readiness = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Readiness"})]
"""The service's health and readiness: :class:`contracts.answers.Health`, ``Readiness``."""
