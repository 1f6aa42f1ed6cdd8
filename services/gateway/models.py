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
from domain.league import MAX_PLAYERS, MAX_ROUNDS, PairingChoice
from domain.platforms import Seating, Visibility
from domain.rules import (
    CARD_INPUT_PATTERN,
    PLAYERS,
    rule_set_schema,
)
from domain.schedule import Pairing
from domain.seating import (
    ENTROPY_PATTERN,
    MAX_ENTROPY_HEX,
    PLAYER_NAME_PATTERN,
    PLAYER_NAME_RULE,
    is_player_name,
)
from domain.state import Status

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


RuleSet = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Rules"})]
"""Every option of docs/rules.md, resolved: the domain's :class:`domain.rules.Rules`, its schema
generated from the struct."""


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


class SeatTaken(BaseModel):
    seat: int
    player: str
    token: str = Field(description="`Authorization: Bearer <token>` acts for this seat only.")
    expires_at: str = Field(
        description="When the token stops working (RFC 3339, UTC); its platform may issue "
        "the seat a new one before or after."
    )


# --------------------------------------------------------------------------- events


ClockShown = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Clock"})]
"""A table's clock as recorded (docs/api.md, "Clocks"): :class:`domain.clock.Clock`."""


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
    rounds: Annotated[int, Field(ge=1, le=MAX_ROUNDS), BeforeValidator(_whole)] | None = Field(
        default=None, description="The league's rounds; absent: no end."
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


class ScheduleRound(_Strict):
    round: Annotated[int, Field(ge=1, le=2**53), BeforeValidator(_whole)] | None = Field(
        default=None,
        description="The round meant; refused (409) if another is next.",
    )


class Substitution(BaseModel):
    """``substitute`` plays ``player``'s seat from then on, for ``player``'s record."""

    round: int
    game_id: str
    seat: int
    player: str
    substitute: str


class League(BaseModel):
    league_id: str
    name: str
    version: int = Field(description="How many events made the league.")
    rules: RuleSet
    players: list[str]
    rounds: int | None = Field(description="Rounds the league has; null: no end.")
    pairing: Pairing
    rounds_scheduled: int
    next_round: int | None = Field(description="The round to schedule next; null: none left.")
    rounds_finished: int = Field(description="Rounds whose every game is over.")
    finished: bool = Field(description="Its last planned round is over (a league of no end never).")
    clock: ClockShown | None = Field(description="The clock of every table it starts.")
    withdrawn: list[str] = Field(description="Players who left; no later round seats them.")
    substitutions: list[Substitution] = Field(description="Substitutes seated, oldest first.")


class Withdraw(_Strict):
    player: PlayerName = Field(description="A player of the league, still in it.")


class Withdrawn(BaseModel):
    league_id: str
    player: str
    after_round: int = Field(description="Rounds scheduled when they left; later ones skip them.")
    running_game: str | None = Field(
        description="Their table's game still being played, which their seat's clock plays out; "
        "null: none."
    )


class Substitute(_Strict):
    player: PlayerName = Field(description="The league player whose seat is taken over.")
    substitute: PlayerName = Field(description="Who plays the seat from now on.")


class Substituted(BaseModel):
    """The substitution, and the seat's new token (every earlier one is revoked)."""

    league_id: str
    round: int
    game_id: str
    seat: int
    player: str = Field(description="Whose record the seat's game counts for.")
    substitute: str
    token: str
    expires_at: str


class StartedTable(BaseModel):
    table: int
    game_id: str
    seats: list[SeatTaken] = Field(description="Every seat, with the token that acts for it.")


class RoundStarted(BaseModel):
    """A round scheduled and its games created, every player seated."""

    league_id: str
    round: int
    pairing: Pairing
    tables: list[StartedTable]
    byes: list[str] = Field(description="The players who sit this round out.")


class RoundTable(BaseModel):
    table: int
    game_id: str
    players: list[str] = Field(description="The player at each seat.")
    status: Status | None = Field(description="As the game list has it; null until it does.")
    scores: list[int] | None
    winners: list[int] | None
    sitting: list[str] = Field(description="Who plays each seat now (a substitute, if any).")


class LeagueRound(BaseModel):
    league_id: str
    round: int
    pairing: Pairing
    tables: list[RoundTable]
    byes: list[str]
    finished: bool = Field(description="Every game of the round is over, its results recorded.")


class Rating(BaseModel):
    mu: float
    sigma: float
    ordinal: float = Field(description="`mu - 3 sigma`: the rating to rank by.")


class PlayerStanding(BaseModel):
    rank: int
    player: str
    points: int = Field(description="The final scores of the player's unit, summed.")
    wins: int = Field(
        description="Games the player's unit won (a forfeit is won by every other unit), "
        "plus one per bye."
    )
    games: int
    byes: int = Field(description="Rounds without a table: each counts one win, no points.")
    forfeits: int = Field(description="Games the player's unit lost on time (`forfeit` clock).")
    withdrawn: bool = Field(description="The player left the league; the record stays.")
    rating: Rating


class Standings(BaseModel):
    """Most wins first (a bye counts one), then most points, then fewest forfeits, then the
    higher rating ``ordinal``, then the player's name."""

    league_id: str
    version: int = Field(description="How many of the league's games are counted.")
    players: list[PlayerStanding]


class ResultRow(BaseModel):
    """One seat of a finished round's table, or one bye (no table, no game, no seat)."""

    round: int
    table: int | None = Field(description="The table's number in its round, from 1; none: a bye.")
    game_id: str | None
    seat: int | None
    player: str = Field(description="The league's player who held the seat.")
    played_by: str | None = Field(description="Who finished the seat (a substitute, if any).")
    points: int
    result: Literal["win", "loss", "forfeit", "bye"]


class LeagueResults(BaseModel):
    """Every seat's result in the league's finished rounds, and every bye: in round, then
    table, then seat order."""

    league_id: str
    results: list[ResultRow]


# --------------------------------------------------------------------------- integrity


class EvidenceHand(BaseModel):
    """A hand that carries a flagged signal's evidence: where to look, never what was held."""

    game_id: str
    hand: int
    replay: str = Field(description="The hand's replay page (``/replay/GAME?hand=N``).")


class IntegritySignal(BaseModel):
    """One signal of one pair of players, against the field (README, "Integrity signals")."""

    signal: Literal[
        "sets",
        "free_sets_declined",
        "bags_fed",
        "nils_covered",
        "shared_table_lift",
        "co_seating",
        "decision_times",
    ]
    players: list[str] = Field(
        min_length=2,
        max_length=2,
        description="The pair; for ``sets``, the setter then the one set.",
    )
    observed: float = Field(description="The pair's figure, in the signal's unit.")
    expected: float = Field(description="The same figure of the field (or the schedule's draw).")
    effect: float = Field(description="Observed less expected (a ratio for ``co_seating``).")
    count: int = Field(description="The chances, shared hands or games shared behind it.")
    p_value: float = Field(description="One-sided, against the field.")
    q_value: float = Field(
        description="The p-value adjusted over every signal (Benjamini-Hochberg)."
    )
    flagged: bool = Field(description="Whether ``q_value`` is at or under the report's ``fdr``.")
    evidence: list[EvidenceHand] = Field(description="For a flagged signal, its first hands.")


class IntegrityReport(BaseModel):
    """Collusion signals per pair of the league's players, flagged ones first."""

    league_id: str
    hands: int = Field(description="The league's finished hands the signals read.")
    fdr: float = Field(description="The false discovery rate a signal is flagged at.")
    signals: list[IntegritySignal]


# --------------------------------------------------------------------------- audit


Audit = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Audit"})]
"""A game's audit: :class:`services.audit.report.AuditReport` (its hands ``HandAudit``, its
problems ``AuditProblem``), the very struct the audit makes."""


# --------------------------------------------------------------------------- service


class Problem(BaseModel):
    """RFC 9457 problem details, with the refusal's docs/rules.md ``code``."""

    type: str
    title: str
    status: int
    detail: str
    code: str


Health = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Health"})]
Readiness = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Readiness"})]
"""The service's health and readiness: :class:`contracts.answers.Health`, ``Readiness``."""
