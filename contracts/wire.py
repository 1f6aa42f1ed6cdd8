"""The messages services exchange over NATS, and the names of subjects and streams.

Commands travel as NATS requests on ``spades.commands.<game_id>`` (one queue group of engines
answers them); a game's history is the JetStream stream ``SPADES_GAMES``, one subject per game,
``spades.games.<game_id>``, one message per accepted command: a :class:`Commit`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from domain.clock import Clock
from domain.errors import Code
from domain.events import AnyEvent, DuplicateBoards, TieRule
from domain.league import AnyLeagueEvent, Format, KnockoutStage, PairingChoice, Partners
from domain.matchpoints import Convention
from domain.platforms import Seating, Visibility
from domain.rules import rule_set_schema

RuleSetInput = Annotated[dict[str, Any], msgspec.Meta(extra_json_schema=rule_set_schema())]
"""A rule set as a request writes it; its schema is the domain's (``rule_set_schema``)."""

SCHEMA = 1
"""The version of the commit and event shapes written now (see :func:`read_commit`)."""

GAMES_STREAM = "SPADES_GAMES"
GAME_SUBJECTS = "spades.games.>"
COMMAND_SUBJECTS = "spades.commands.*"
MAX_COMMAND_BYTES = 64 * 1024
"""A command larger than this is refused as malformed without being decoded."""

COMMAND_ID = re.compile(r"^[A-Za-z0-9_=-]{1,128}$")
GENESIS = "0" * 64
"""The ``previous`` hash of a game's first commit."""


def game_subject(game_id: str) -> str:
    """The stream subject that holds one game's commits."""
    return f"spades.games.{game_id}"


def command_subject(game_id: str) -> str:
    """The subject an engine answers a game's commands on."""
    return f"spades.commands.{game_id}"


class Refusal(msgspec.Struct, frozen=True):
    """Why a command was refused: a docs/rules.md code (or ``conflict``) and what it says."""

    code: str
    detail: str = ""


class Commit(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One command's outcome, appended as one message: its events, or its refusal.

    ``version`` is the game's version after these events (its event count), so they carry the
    versions ``version - len(events) + 1`` .. ``version``; a refusal has no events and leaves
    the version as it was. Refusals are kept so that a retried command id gets its first
    answer however late it comes. ``previous`` is the SHA-256 of the previous commit's message
    bytes (:data:`GENESIS` for the first): the history is a hash chain an auditor can check.
    ``time`` is when the engine decided (UTC ISO 8601); ``request`` the SHA-256 of the request
    body, so a reused command id with another body is told apart.
    """

    schema: int = SCHEMA
    game_id: str
    version: int
    command_id: str
    time: str
    previous: str
    request: str = ""
    events: list[AnyEvent] = []
    refusal: Refusal | None = None

    @property
    def first_version(self) -> int:
        return self.version - len(self.events) + 1


_commit_decoder = msgspec.json.Decoder(Commit)
_commit_encoder = msgspec.json.Encoder()


def commit_seconds(time: str) -> float:
    """A commit's ``time`` as seconds since the epoch (what the clocks reckon in)."""
    return datetime.fromisoformat(time).timestamp()


def encode_commit(commit: Commit) -> bytes:
    return _commit_encoder.encode(commit)


def read_commit(data: bytes) -> Commit:
    """Decode a stored commit, upcasting an older shape first (never rewriting the stored one).

    Raises ``msgspec.DecodeError``/``ValidationError`` for bytes that are not a commit.
    """
    raw = msgspec.json.decode(data)
    schema = raw.get("schema", 1) if isinstance(raw, dict) else None
    if schema == SCHEMA:
        return _commit_decoder.decode(data)
    if not isinstance(schema, int) or schema > SCHEMA:
        raise msgspec.ValidationError(f"unknown commit schema {schema!r}")
    for upcast in _UPCASTERS[schema:SCHEMA]:
        raw = upcast(raw)
    return msgspec.convert(raw, Commit)


_UPCASTERS: list[Any] = [None]
"""``_UPCASTERS[n]`` turns a schema-n commit (a dict) into schema n+1. Schema 1 is the first."""


# --------------------------------------------------------------------------- commands


class CreateGameRequest(msgspec.Struct, frozen=True, tag="create_game", kw_only=True):
    """A new game. ``league`` is set only by a league's round (the gateway refuses it from a
    client); ``platform``, ``visibility`` and ``seating`` as :mod:`domain.platforms` says."""

    rules: RuleSetInput
    dealer: int | None = None
    entropy: str = ""
    league: str | None = None
    platform: str | None = None
    visibility: Visibility = "public"
    seating: Seating = "platform"
    clock: Clock | None = None
    duplicate: DuplicateBoards | None = None
    """Set only by a duplicate league's round (the gateway refuses it from a client): the
    table's boards (:class:`domain.events.DuplicateBoards`)."""
    ties: TieRule | None = None
    """Set only by a knockout's round (the gateway refuses it from a client): how a tie on top
    ends the match (:class:`domain.events.TieRule`)."""


class TakeSeatRequest(msgspec.Struct, frozen=True, tag="take_seat", kw_only=True):
    player: str
    seat: int | None = None
    entropy: str = ""


class ReissueTokenRequest(msgspec.Struct, frozen=True, tag="reissue_token", kw_only=True):
    """Issue a taken seat's token again (revoking the earlier ones); ``player``, when given,
    is the substitute who sits there from now on."""

    seat: int
    player: str | None = None


class ActRequest(msgspec.Struct, frozen=True, tag="act", kw_only=True):
    """A seat's action, in the HTTP API's shape (``{"type": "bid", "bid": 3}``). ``issue`` is
    the issue of the seat token it came with: anything but the seat's current issue is refused
    ``unauthorized`` (the token was revoked), and nothing is recorded."""

    seat: int
    action: Any
    expected_version: int | None = None
    issue: int | None = None


class TimeOutRequest(msgspec.Struct, frozen=True, tag="time_out", kw_only=True):
    """A timer's: ``seat``'s clock has run out at ``expected_version`` (anything else is
    refused ``conflict``, so a timeout fires once however many timers send it). The engine
    decides it at its own time and, under ``auto``, chooses the seat's action with its bot."""

    seat: int
    expected_version: int


class MarkAwayRequest(msgspec.Struct, frozen=True, tag="mark_away", kw_only=True):
    """The seat's platform or league says its player is gone: it is played for at once."""

    seat: int


RequestBody = (
    CreateGameRequest
    | TakeSeatRequest
    | ReissueTokenRequest
    | ActRequest
    | TimeOutRequest
    | MarkAwayRequest
)


class CommandRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What the gateway sends an engine. ``command_id`` makes a retry safe: the same id gets
    the first answer, however long after."""

    command_id: str
    game_id: str
    body: RequestBody


ReplyCode = Literal[
    Code,
    "game_not_found",
    "conflict",
    "idempotency_key_reused",
    "unauthorized",
    "unavailable",
    "rate_limited",
]
"""The domain's refusal codes (:data:`domain.errors.Code`) and those only a service gives."""


class EventRecord(msgspec.Struct, frozen=True):
    """An event with its position in the game (its version), as one reader may see it."""

    version: Annotated[
        int, msgspec.Meta(description="The event's position in the game, 1 for the first.")
    ]
    event: AnyEvent

    @property
    def type(self) -> str:
        """The event's ``type`` as it travels (``bid_placed``, ``trick_won``, ...)."""
        return str(self.event.__struct_config__.tag)


class CommandReply(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An engine's answer: the events as the sender may see them, or a refusal code."""

    command_id: str
    ok: bool
    version: int = 0
    sequence: int = 0
    """The stream sequence of the commit (0 when nothing was committed)."""
    events: list[EventRecord] = []
    seat: int | None = None
    code: ReplyCode | None = None
    detail: str = ""


reply_decoder = msgspec.json.Decoder(CommandReply)
request_decoder = msgspec.json.Decoder(CommandRequest)


# --------------------------------------------------------------------------- leagues
#
# A league is event-sourced like a game, in a stream of its own: league commands travel as NATS
# requests on ``spades.league-commands.<league_id>`` (the engines answer them too), and a
# league's history is ``spades.leagues.<league_id>`` in the stream ``SPADES_LEAGUES``, one
# :class:`LeagueCommit` per accepted (or refused) command, appended with the same optimistic
# concurrency and deduplication as a game's.

ARCHIVE_STREAM = "SPADES_ARCHIVE"
ARCHIVE_SUBJECTS = "spades.archive.*"
"""The archive of finished games: one message per archived game, ``spades.archive.<game_id>``,
its whole history compressed (:mod:`services.runtime.game_archive`)."""

LEAGUES_STREAM = "SPADES_LEAGUES"
ROUND_WATCH_CONSUMER = "spades-league-rounds"
"""The engines' shared durable consumer of the game stream that finishes league rounds as their
last games end (:mod:`services.engine.round_watch`)."""
LEAGUE_SUBJECTS = "spades.leagues.>"
LEAGUE_COMMAND_SUBJECTS = "spades.league-commands.*"
MAX_LEAGUE_COMMAND_BYTES = 128 * 1024
"""A league names its players: room for the gateway's largest body, and its envelope."""


def league_subject(league_id: str) -> str:
    """The stream subject that holds one league's commits."""
    return f"spades.leagues.{league_id}"


def league_command_subject(league_id: str) -> str:
    """The subject an engine answers a league's commands on."""
    return f"spades.league-commands.{league_id}"


class LeagueCommit(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One league command's outcome, appended as one message: as :class:`Commit` is for a game
    (versions, the hash chain, the request digest, refusals kept), with league events."""

    schema: int = SCHEMA
    league_id: str
    version: int
    command_id: str
    time: str
    previous: str
    request: str = ""
    events: list[AnyLeagueEvent] = []
    refusal: Refusal | None = None


_league_commit_decoder = msgspec.json.Decoder(LeagueCommit)


def encode_league_commit(commit: LeagueCommit) -> bytes:
    return _commit_encoder.encode(commit)


def read_league_commit(data: bytes) -> LeagueCommit:
    """Decode a stored league commit (schema 1 is the only one so far)."""
    commit = _league_commit_decoder.decode(data)
    if commit.schema != SCHEMA:
        raise msgspec.ValidationError(f"unknown league commit schema {commit.schema!r}")
    return commit


class CreateLeagueRequest(msgspec.Struct, frozen=True, tag="create_league", kw_only=True):
    name: str
    rules: RuleSetInput
    players: list[str]
    rounds: int | None = None
    pairing: PairingChoice = "auto"
    platform: str | None = None
    visibility: Visibility = "public"
    clock: Clock | None = None
    """The clock of every table the league starts."""
    knockout: KnockoutStage | None = None
    """The knockout after ``rounds`` rounds (0: the league is only a knockout)."""
    format: Format = "standard"
    boards_per_round: int | None = None
    """A duplicate league's boards a round (default 2)."""
    partners: Partners = "fixed"
    convention: Convention = "as_scored"


class ScheduleRoundRequest(msgspec.Struct, frozen=True, tag="schedule_round", kw_only=True):
    """Schedule the next round; ``round``, when given, must be its number (else
    ``wrong_phase``), so that a second organiser's request cannot schedule another one."""

    round: int | None = None


class FinishRoundRequest(msgspec.Struct, frozen=True, tag="finish_round", kw_only=True):
    """Record round ``round`` as over if its last game has ended (sent by the engines' round
    watch as each table's game ends); otherwise nothing happens."""

    round: int


class WithdrawPlayerRequest(msgspec.Struct, frozen=True, tag="withdraw_player", kw_only=True):
    """``player`` leaves the league: later rounds skip them."""

    player: str


class SubstitutePlayerRequest(msgspec.Struct, frozen=True, tag="substitute_player", kw_only=True):
    """``substitute`` takes ``player``'s seat at their running table, for ``player``'s record."""

    player: str
    substitute: str


class AdjustScoreRequest(msgspec.Struct, frozen=True, tag="adjust_score", kw_only=True):
    """The director adds ``points`` (or takes them) to ``player``'s total, for ``reason``."""

    player: str
    points: int
    reason: str
    round: int | None = None


class VoidTableRequest(msgspec.Struct, frozen=True, tag="void_table", kw_only=True):
    """The director voids the finished table ``game_id``, for ``reason``."""

    game_id: str
    reason: str
    board: int | None = None


LeagueRequestBody = (
    CreateLeagueRequest
    | ScheduleRoundRequest
    | FinishRoundRequest
    | WithdrawPlayerRequest
    | SubstitutePlayerRequest
    | AdjustScoreRequest
    | VoidTableRequest
)


class LeagueCommandRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What the gateway sends an engine about a league; ``command_id`` as for a game."""

    command_id: str
    league_id: str
    body: LeagueRequestBody


LeagueReplyCode = Literal[ReplyCode, "league_not_found"]


class LeagueCommandReply(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An engine's answer about a league: the events the command caused, or a refusal code."""

    command_id: str
    ok: bool
    version: int = 0
    sequence: int = 0
    events: list[AnyLeagueEvent] = []
    code: LeagueReplyCode | None = None
    detail: str = ""


league_reply_decoder = msgspec.json.Decoder(LeagueCommandReply)
league_request_decoder = msgspec.json.Decoder(LeagueCommandRequest)
