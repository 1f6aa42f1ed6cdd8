"""The league aggregate: players, a rule set and rounds of tables, event-sourced like a game.

``decide(state, command, *, seed=..., results=...) -> list[LeagueEvent]`` checks a command and
returns its events, or raises :class:`~domain.errors.RuleViolation` (``malformed``,
``invalid_rules``, ``wrong_phase``, ``game_over``, ``seat_taken``); ``evolve(state, event)``
applies one event. A league's
state is the fold of its events, so every reader, and every read model, can rebuild it.

What a league cannot know by itself comes in as inputs, as a deal's seed does for a game:

- ``seed`` (creating a league): shuffles the players once, into the league's order, which breaks
  every tie of the schedule (:mod:`domain.schedule`); no randomness of the league's own.
- ``results`` (finishing or scheduling a round, seating a substitute): how the games of the
  round ended, for those that have, read by the engine from the games' own histories. The
  service sends :class:`FinishRound` as each table's game ends, and the round is recorded over
  (:class:`RoundCompleted`) as soon as its last game is; the league is finished
  (:class:`LeagueFinished`) with its last planned round. A round is scheduled only once every
  game of the round before is over (recorded then, if it was not yet): Swiss pairing ranks
  players by the results.

The league's operations: :class:`WithdrawPlayer` (no round scheduled later seats the player)
and :class:`SubstitutePlayer` (someone else plays the player's running seat, for the player's
record: the tables, and so the results and standings, keep the player's name). A late
player is replaced the same way: their table's game is created, and their seat taken, when the
round starts, so a substitute can take the seat before its first move. The director's:
:class:`AdjustScore` (points added to or taken from a player's total, with the reason, as
:class:`ScoreAdjusted`) and :class:`VoidTable` (a finished table's result counts for no one,
as :class:`TableVoided`); both are events of the league's history, so every reader, the
standings and the exports see each one and why.

A league's games are ordinary games: the round's tables name them (:func:`table_game_id`), and
whoever starts the round creates each one with ``league`` set and seats its players. Standings,
points and ratings are a read model of those games, not part of this aggregate.

    >>> created = decide(None, CreateLeague("north", "North", {"preset": "two-player"},
    ...                                     ("ann", "bob", "cat")), seed="00")
    >>> league = fold(created)
    >>> league.pairing, len(league.players)
    ('round_robin', 3)
    >>> (scheduled,) = decide(league, ScheduleRound(1))
    >>> [table.game_id for table in scheduled.tables], len(scheduled.byes)
    (['north-1-1'], 1)
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

import msgspec
from msgspec.structs import replace

from domain.boards import BoardCommitments, commit
from domain.clock import Clock, OnTimeout
from domain.errors import RuleViolation
from domain.events import TieRule
from domain.knockout import (
    MAX_EXTRA_DEALS,
    TIE_BREAKS,
    Match,
    first_round,
    places,
    seeded_by_rating,
)
from domain.knockout import next_round as next_knockout_round
from domain.matchpoints import Convention
from domain.movement import MAX_ROUNDS as MAX_MOVEMENT_ROUNDS
from domain.movement import Movement, MovementError, Style, default_rounds, movement
from domain.platforms import Visibility
from domain.rules import Rules, resolve_rules
from domain.schedule import Pairing, Seating, choose_pairing, seat_round
from domain.seating import is_player_name
from domain.shuffle import commitment
from domain.state import Game

LEAGUE_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
"""At most 40 characters, so that a table's game id (``<league>-<round>-<table>``) is a game
id too (64 at most)."""
_TABLE_GAME = re.compile(
    r"(?P<league>[A-Za-z0-9_-]{1,40})-(?P<round>[0-9]{1,9})-(?P<table>[0-9]{1,9})"
)
MAX_NAME = 64
MAX_PLAYERS = 1000
MAX_ROUNDS = 1000
MAX_TURN_S = 86_400.0
"""A league's clock gives a turn at most a day."""
MAX_AWAY_AFTER = 100
MAX_ADJUSTMENT = 100_000
"""An adjusted score moves a total by at most this many points, either way."""
MAX_REASON = 500
_UNPRINTED = (
    "\\x00-\\x1f\\x7f-\\xa0\\xad\\u061c\\u1680\\u180e\\u2000-\\u200f"
    "\\u2028-\\u202f\\u205f-\\u206f\\u3000\\ufeff\\ufff9-\\ufffb"
)
REASON_PATTERN = f"^ *[^ {_UNPRINTED}][^{_UNPRINTED}]*$"
"""A director's reason: characters as a player's name takes them (no control character, line
separator or invisible mark), not only spaces, and at most :data:`MAX_REASON` of them; Python
and JSON Schema read the expression alike, so the API's schema states it."""
REASON = re.compile(REASON_PATTERN)

Format = Literal["standard", "duplicate"]
"""``standard``: each table plays its own game to the rules' end; ``duplicate``: every table of
a round plays the same boards, compared by matchpoints (see the duplicate block below)."""
DEFAULT_BOARDS_PER_ROUND = 2
Partners = Literal["fixed", "rotating"]
"""A duplicate event at partnership tables: ``fixed`` pairs (players listed partner beside
partner), or an individual event whose partners ``rotate`` round by round."""

PairingChoice = Literal["auto", "round_robin", "swiss"]
"""How a league pairs its players; ``auto`` chooses by :func:`domain.schedule.choose_pairing`."""


# --------------------------------------------------------------------------- values


class LeagueTable(msgspec.Struct, frozen=True):
    """One table of a round: its game, and the players by seat."""

    game_id: str
    players: tuple[str, ...]


class TableResult(msgspec.Struct, frozen=True):
    """How a table's game ended, per seat: the final score of the seat's unit, whether that
    unit won (every unit tied for the win counts as a winner), and whether it lost by forfeit
    (its clock ran out under ``on_timeout: forfeit``; empty for a result recorded before
    forfeits existed, which had none)."""

    game_id: str
    points: tuple[int, ...]
    won: tuple[bool, ...]
    forfeited: tuple[bool, ...] = ()

    def forfeit_at(self, seat: int) -> bool:
        return bool(self.forfeited) and self.forfeited[seat]


class Substitution(msgspec.Struct, frozen=True):
    """``substitute`` plays ``player``'s seat of ``game_id`` from now on, for ``player``'s
    record: the standings credit the game to ``player``, whoever finished it."""

    round: int
    game_id: str
    seat: int
    player: str
    substitute: str


class Round(msgspec.Struct, frozen=True):
    number: int
    tables: tuple[LeagueTable, ...]
    byes: tuple[str, ...]
    results: tuple[TableResult, ...] = ()
    """Once the next round is scheduled: each table's result, in table order."""
    boards: tuple[int, ...] = ()
    """A duplicate event's round: the boards every table plays, in order."""

    @property
    def seating(self) -> Seating:
        return Seating(tuple(table.players for table in self.tables), self.byes)

    @property
    def finished(self) -> bool:
        """Every table's game is over and its result recorded."""
        return len(self.results) == len(self.tables)


BYE_WINS = 1
"""What a bye is worth: a round without a table counts as one win, no points and no game (it
moves no rating). A player sits out only when the players do not divide into tables, and byes
rotate (:mod:`domain.schedule`), so no one is ranked down for the league's arithmetic."""


class Standing(msgspec.Struct, frozen=True):
    """A player's record in the recorded rounds: what Swiss pairing ranks by."""

    player: str
    wins: int = 0
    points: int = 0
    games: int = 0
    byes: int = 0
    forfeits: int = 0


MatchTies = Literal["play_on", "extra_deal", "higher_seed"]
"""How a knockout's match tied on top at its end is decided: ``play_on``, or a
:data:`~domain.knockout.TieBreak`."""


class KnockoutStage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A knockout after the league's rounds (or instead of them: ``rounds`` 0): the first
    ``top`` of the standings then (every player still in, when absent; a duplicate event's
    fixed pairs, by its matchpoints), or of ``ratings`` when the organiser gives them, meet
    head to head in a bracket (:mod:`domain.knockout`), one round of the league a bracket
    round. A match is a game of ``deals`` hands or to a
    ``target``; a tie on top plays on, a hand at a time, as the game's rules do, until one
    leads alone (or a clock forfeits someone)."""

    top: int | None = None
    deals: int | None = None
    target: int | None = None
    ratings: dict[str, float] | None = None
    """Seeds by these ratings (highest first, then by name), not by the standings."""
    tie_break: MatchTies = "play_on"
    """How a match tied on top at its end is decided: ``play_on`` a hand at a time until one
    leads alone; ``extra_deal`` so for up to ``extra_deals`` hands, then the better seed;
    ``higher_seed`` the better seed at once (:class:`domain.events.TieRule`)."""
    extra_deals: int = 3

    @property
    def ties(self) -> TieRule | None:
        """The tie rule of its matches' games (the better seed sits in the first unit); None:
        they play on."""
        if self.tie_break == "play_on":
            return None
        return TieRule(self.tie_break, self.extra_deals)


Side = tuple[str, ...]
"""A knockout's entrant: a player of the two-player game, or a fixed pair of a duplicate
event (its players in seat order)."""


class Knockout(msgspec.Struct, frozen=True):
    """A knockout under way: its entrants, best seed first, and its first round's number."""

    entrants: tuple[Side, ...]
    first: int

    @property
    def rounds(self) -> int:
        """The bracket's rounds: a final, a semifinal before it, ..."""
        return places(len(self.entrants)).bit_length() - 1


class League(msgspec.Struct, frozen=True):
    league_id: str
    name: str
    rules: Rules
    players: tuple[str, ...]
    """As the organiser gave them."""
    order: tuple[str, ...]
    """The players shuffled by the league's seed: the schedule's tie-breaks."""
    planned: int | None
    """How many rounds the league has; None: no last round."""
    pairing: Pairing
    seed: str
    rounds: tuple[Round, ...] = ()
    version: int = 0
    platform: str | None = None
    """The platform the league (and every game of its rounds) belongs to; None: anyone's."""
    visibility: Visibility = "public"
    clock: Clock | None = None
    """The clock of every table the league starts; None: its games have no clock."""
    withdrawn: tuple[str, ...] = ()
    """Players who left the league, in the order they left: no later round seats them."""
    substitutions: tuple[Substitution, ...] = ()
    finished: bool = False
    """Its last planned round is over (:class:`LeagueFinished`); a league of no planned end
    never finishes."""
    stage: KnockoutStage | None = None
    """The knockout the league ends with, if any; its rounds come after ``before_knockout``."""
    before_knockout: int = 0
    """The rounds the league plays before its knockout (Swiss or round robin)."""
    knockout: Knockout | None = None
    """Once the knockout is seeded (:class:`KnockoutSeeded`)."""
    adjustments: tuple[ScoreAdjusted, ...] = ()
    """The director's adjusted scores, in the order made."""
    voided: tuple[TableVoided, ...] = ()
    """The tables the director voided, in the order voided."""

    def in_knockout(self, number: int) -> bool:
        """Whether round ``number`` is a round of the knockout."""
        return self.knockout is not None and number >= self.knockout.first

    def knockout_round(self, number: int) -> bool:
        """Whether round ``number`` comes after the rounds before the knockout (if any)."""
        return self.stage is not None and number > self.before_knockout

    def rules_of_round(self, number: int) -> Rules:
        """The rules of round ``number``'s games: the league's, and a knockout's match length."""
        if self.stage is None or not self.in_knockout(number):
            return self.rules
        if self.stage.deals is not None:
            return replace(self.rules, max_hands=self.stage.deals)
        assert self.stage.target is not None
        return replace(self.rules, target=self.stage.target, max_hands=None)

    def ties_of_round(self, number: int) -> TieRule | None:
        """How a tie on top ends round ``number``'s games: a knockout's tie rule; None (play
        on) for any other round."""
        if self.stage is None or not self.in_knockout(number):
            return None
        return self.stage.ties

    def voided_game(self, game_id: str) -> bool:
        """Whether the whole table ``game_id`` is void."""
        return any(void.game_id == game_id and void.board is None for void in self.voided)

    def voided_board(self, game_id: str, board: int) -> bool:
        """Whether board ``board`` counts for no one at the table ``game_id``."""
        return any(void.game_id == game_id and void.board in (None, board) for void in self.voided)

    def table_named(self, game_id: str) -> tuple[Round, LeagueTable] | None:
        """The round and table whose game is ``game_id``, if the league scheduled it."""
        place = table_of(game_id)
        if place is None or place.league_id != self.league_id:
            return None
        if not 1 <= place.round <= len(self.rounds):
            return None
        played = self.rounds[place.round - 1]
        for table in played.tables:
            if table.game_id == game_id:
                return played, table
        return None

    format: Format = "standard"
    boards_per_round: int | None = None
    """A duplicate event's boards a round; None for a standard league."""
    boards: BoardCommitments | None = None
    """A duplicate event's published boards: the Merkle root and every board's commitment."""
    revealed: tuple[tuple[int, str], ...] = ()
    """A duplicate event's boards revealed so far: (board, seed in hex), board order."""
    partners: Partners = "fixed"
    convention: Convention = "as_scored"
    """How a duplicate event counts sets and bags before it compares (:mod:`domain.matchpoints`)."""

    @property
    def next_round(self) -> int:
        return len(self.rounds) + 1

    @property
    def over(self) -> bool:
        """Every planned round is scheduled."""
        return self.planned is not None and len(self.rounds) >= self.planned

    @property
    def active(self) -> tuple[str, ...]:
        """The players still in the league, in the league's order."""
        gone = set(self.withdrawn)
        return tuple(player for player in self.order if player not in gone)

    @property
    def current(self) -> Round | None:
        """The round being played: the last scheduled one, until its last table ends."""
        if self.rounds and not self.rounds[-1].finished:
            return self.rounds[-1]
        return None

    def seat_of(self, player: str) -> tuple[LeagueTable, int] | None:
        """The table of the round being played where ``player`` has a seat, and the seat."""
        current = self.current
        if current is None:
            return None
        for table in current.tables:
            if player in table.players:
                return table, table.players.index(player)
        return None

    def sitting(self, table: LeagueTable, seat: int) -> str:
        """Who plays ``seat`` of ``table`` now: its player, or their latest substitute."""
        sitting = table.players[seat]
        for substitution in self.substitutions:
            if substitution.game_id == table.game_id and substitution.seat == seat:
                sitting = substitution.substitute
        return sitting


# --------------------------------------------------------------------------- commands, events


class LeagueCommand(msgspec.Struct, frozen=True, tag_field="type"):
    """Base of every league command."""


class CreateLeague(LeagueCommand, tag="create_league", frozen=True):
    league_id: str
    name: str
    rules: dict[str, Any]
    players: tuple[str, ...]
    rounds: int | None = None
    pairing: PairingChoice = "auto"
    platform: str | None = None
    visibility: Visibility = "public"
    clock: Clock | None = None
    knockout: KnockoutStage | None = None
    format: Format = "standard"
    boards_per_round: int | None = None
    partners: Partners = "fixed"
    convention: Convention = "as_scored"


class ScheduleRound(LeagueCommand, tag="schedule_round", frozen=True):
    """Seat round ``round`` (which must be the next) and name its games."""

    round: int


class FinishRound(LeagueCommand, tag="finish_round", frozen=True):
    """Record round ``round`` as over if every one of its games has ended (the ``results``
    input says which have); otherwise, if it is recorded already, or if there is no such
    round, nothing happens (and nothing is recorded: the command is never refused). Sent by
    the service as each table's game ends, so the last one to end finishes the round."""

    round: int


class WithdrawPlayer(LeagueCommand, tag="withdraw_player", frozen=True):
    """``player`` leaves the league: no round scheduled from now on seats them. Their record
    stays in the standings, marked withdrawn."""

    player: str


class SubstitutePlayer(LeagueCommand, tag="substitute_player", frozen=True):
    """``substitute`` takes over ``player``'s seat at their table of the round being played
    (whose game must still be running: the ``results`` input says which have ended)."""

    player: str
    substitute: str


class AdjustScore(LeagueCommand, tag="adjust_score", frozen=True):
    """The director's adjusted score: ``points`` (positive or negative, not 0) added to
    ``player``'s total, for ``reason``; ``round``, when given, names the round it concerns.
    In a duplicate event they are matchpoints, added to the player's side's."""

    player: str
    points: int
    reason: str
    round: int | None = None


class VoidTable(LeagueCommand, tag="void_table", frozen=True):
    """The director voids the table ``game_id`` (its game must be over: the ``results`` input
    says so): its result counts for no one, in the standings and in Swiss pairing. In a
    duplicate event, ``board`` voids that one board at the table: it is scored over the other
    tables, and the table's other boards still count."""

    game_id: str
    reason: str
    board: int | None = None


class LeagueEvent(msgspec.Struct, frozen=True, tag_field="type"):
    """Base of every league event."""


class LeagueCreated(LeagueEvent, tag="league_created", frozen=True):
    """A new league. ``platform`` and ``visibility`` as for a game (:mod:`domain.platforms`);
    a league recorded before they existed has no platform and is public, as it was."""

    league_id: str
    name: str
    rules: Rules
    players: tuple[str, ...]
    rounds: int | None
    pairing: Pairing
    seed: str
    platform: str | None = None
    visibility: Visibility = "public"
    clock: Clock | None = None
    knockout: KnockoutStage | msgspec.UnsetType = msgspec.UNSET
    """The knockout after ``rounds`` rounds (``rounds`` 0: the league is only a knockout);
    left out of the bytes of a league without one."""
    format: Format | msgspec.UnsetType = msgspec.UNSET
    """``duplicate`` for a duplicate event; left out of a standard league's bytes (as its
    ``boards_per_round`` and ``boards``), so that it is recorded exactly as before."""
    boards_per_round: int | msgspec.UnsetType = msgspec.UNSET
    boards: BoardCommitments | msgspec.UnsetType = msgspec.UNSET
    """A duplicate event's boards, committed to before any is dealt (:mod:`domain.boards`)."""
    partners: Partners | msgspec.UnsetType = msgspec.UNSET
    """A duplicate event's partners, when they rotate (left out for fixed pairs)."""
    convention: Convention | msgspec.UnsetType = msgspec.UNSET
    """A duplicate event's sets and bags convention, when ``transferred`` (left out else)."""


class RoundCompleted(LeagueEvent, tag="round_completed", frozen=True):
    """Every game of ``round`` is over; each table's result, in table order. Recorded as soon
    as the service sees the round's last game end (:class:`FinishRound`), or at the latest
    when the next round is scheduled."""

    round: int
    results: tuple[TableResult, ...]


class LeagueFinished(LeagueEvent, tag="league_finished", frozen=True):
    """The league's last planned round is over: it is finished, and schedules no more."""

    rounds: int


class PlayerWithdrawn(LeagueEvent, tag="player_withdrawn", frozen=True):
    """``player`` left the league after ``after_round`` rounds were scheduled: rounds from
    ``after_round + 1`` on do not seat them. A table of theirs still running is played out
    by its clock."""

    player: str
    after_round: int


class PlayerSubstituted(LeagueEvent, tag="player_substituted", frozen=True):
    """``substitute`` sits in ``player``'s seat of ``game_id`` (round ``round``) from now on,
    playing for ``player``'s record."""

    round: int
    game_id: str
    seat: int
    player: str
    substitute: str


class RoundScheduled(LeagueEvent, tag="round_scheduled", frozen=True):
    """A round's tables (each with its game id and players by seat) and its byes, seated by
    the league's pairing (:mod:`domain.schedule`)."""

    round: int
    tables: tuple[LeagueTable, ...]
    byes: tuple[str, ...]
    boards: tuple[int, ...] | msgspec.UnsetType = msgspec.UNSET
    """A duplicate event's round: its boards, played at every table in this order (left out
    of a standard league's bytes)."""


class BoardsRevealed(LeagueEvent, tag="boards_revealed", frozen=True):
    """A duplicate event's round is over at every table: its boards' seeds, in hex, by board,
    so that anyone can check each table's deals against the published commitments."""

    round: int
    boards: tuple[tuple[int, str], ...]


class ScoreAdjusted(LeagueEvent, tag="score_adjusted", frozen=True):
    """An adjusted score (:class:`AdjustScore`), the league's ``number``-th, from 1."""

    number: int
    player: str
    points: int
    reason: str
    round: int | None = None


class TableVoided(LeagueEvent, tag="table_voided", frozen=True):
    """The table ``game_id`` of round ``round`` is void, for ``reason``; ``result`` is how its
    game had ended, which no standing counts any more."""

    round: int
    game_id: str
    reason: str
    result: TableResult
    board: int | None = None
    """A duplicate event's one board voided at the table; None: the whole table."""


class KnockoutSeeded(LeagueEvent, tag="knockout_seeded", frozen=True):
    """The knockout's entrants (players, or a duplicate event's pairs), best seed first, as its
    first round (``round``) is scheduled: the standings' first (or the organiser's ratings'),
    of those still in."""

    round: int
    entrants: tuple[Side, ...]


AnyLeagueCommand = (
    CreateLeague
    | ScheduleRound
    | FinishRound
    | WithdrawPlayer
    | SubstitutePlayer
    | AdjustScore
    | VoidTable
)
AnyLeagueEvent = (
    LeagueCreated
    | RoundCompleted
    | RoundScheduled
    | LeagueFinished
    | PlayerWithdrawn
    | PlayerSubstituted
    | ScoreAdjusted
    | TableVoided
    | KnockoutSeeded
    | BoardsRevealed
)


# --------------------------------------------------------------------------- decide


def decide(
    state: League | None,
    command: AnyLeagueCommand,
    *,
    seed: str = "",
    results: Mapping[str, TableResult] | None = None,
    board_seeds: Mapping[int, bytes] | None = None,
    seeding: Sequence[Side] | None = None,
) -> list[AnyLeagueEvent]:
    """The events ``command`` causes in ``state``; raises RuleViolation when it is refused.

    ``board_seeds`` (a duplicate event's): the boards' seeds by number, every board's when it
    is created, the round's when a round may end (:func:`duplicate_boards` says which)."""
    if isinstance(command, CreateLeague):
        if state is not None:
            raise RuleViolation("wrong_phase", f"league {state.league_id} already exists")
        if command.format not in get_args(Format):
            choices = ", ".join(get_args(Format))
            raise RuleViolation("malformed", f"format {command.format!r} is not one of {choices}")
        duplicate_options = (command.boards_per_round, command.partners, command.convention)
        if command.format == "duplicate" or duplicate_options != (None, "fixed", "as_scored"):
            return [_create_duplicate(command, seed, board_seeds or {})]
        return [_create(command, seed)]
    if state is None:
        raise RuleViolation("wrong_phase", "no such league")
    knockout = isinstance(command, ScheduleRound | FinishRound) and state.knockout_round(
        command.round
    )
    if state.format == "duplicate" and isinstance(command, ScheduleRound | FinishRound):
        if not knockout:
            return _duplicate_round(state, command, results or {}, board_seeds or {})
        if isinstance(command, ScheduleRound) and state.rounds and not state.rounds[-1].finished:
            # the event's last round is recorded over, its boards revealed, before the knockout
            last = FinishRound(state.rounds[-1].number)
            over = _duplicate_round(state, last, results or {}, board_seeds or {})
            if not over:
                raise RuleViolation("wrong_phase", f"round {last.round} is still being played")
            after = state
            for event in over:
                after = evolve(after, event)
            return [*over, *_schedule(after, command.round, {}, seeding)]
    if isinstance(command, ScheduleRound):
        return _schedule(state, command.round, results or {}, seeding)
    if isinstance(command, FinishRound):
        return _finish(state, command.round, results or {})
    if isinstance(command, WithdrawPlayer):
        if state.format == "duplicate":
            raise RuleViolation(
                "wrong_phase",
                "a duplicate event's movement is fixed: a player cannot withdraw from it "
                "(a substitute may play their seat)",
            )
        return _withdraw(state, command.player)
    if isinstance(command, SubstitutePlayer):
        return _substitute(state, command, results or {})
    if isinstance(command, AdjustScore):
        return [_adjust(state, command)]
    if isinstance(command, VoidTable):
        return [_void(state, command, results or {})]
    raise RuleViolation("malformed", f"unknown command {type(command).__name__}")


def _create(command: CreateLeague, seed: str) -> LeagueCreated:
    if not LEAGUE_ID.match(command.league_id):
        raise RuleViolation("malformed", "a league id is 1 to 40 of A-Z a-z 0-9 _ -")
    if not _printable(command.name):
        raise RuleViolation("malformed", f"a league's name is 1 to {MAX_NAME} printable characters")
    rules = resolve_rules(command.rules)
    _check_players(command.players, rules.players)
    rounds = command.rounds
    if command.knockout is not None:
        rounds = rounds or 0
        _check_stage(command.knockout, rules, command.players)
        if not 0 <= rounds <= MAX_ROUNDS:
            raise RuleViolation("malformed", f"rounds before a knockout is 0 to {MAX_ROUNDS}")
    elif rounds is not None and not 1 <= rounds <= MAX_ROUNDS:
        raise RuleViolation(
            "invalid_rules",  # well formed (0 is a knockout's), but a league of no round
            f"rounds is 1 to {MAX_ROUNDS}, or absent for no end (0: a knockout alone)",
        )
    if command.pairing not in get_args(PairingChoice):
        choices = ", ".join(get_args(PairingChoice))
        raise RuleViolation("malformed", f"pairing {command.pairing!r} is not one of {choices}")
    pairing: Pairing = (
        choose_pairing(len(command.players), rules.players, rounds)
        if command.pairing == "auto"
        else command.pairing
    )
    if command.platform is not None and not 1 <= len(command.platform) <= MAX_NAME:
        raise RuleViolation("malformed", f"a platform's name is 1 to {MAX_NAME} characters")
    if command.visibility not in get_args(Visibility):
        raise RuleViolation("malformed", f"visibility {command.visibility!r} is not public/private")
    return LeagueCreated(
        league_id=command.league_id,
        name=command.name,
        rules=rules,
        players=tuple(command.players),
        rounds=rounds,
        pairing=pairing,
        seed=seed,
        platform=command.platform,
        visibility=command.visibility,
        clock=_clock(command.clock),
        knockout=msgspec.UNSET if command.knockout is None else command.knockout,
    )


def _clock(clock: Clock | None) -> Clock | None:
    """A league's clock, checked as a game would check it."""
    if clock is None:
        return None
    if not (isinstance(clock.turn_s, (int, float)) and 0 < clock.turn_s <= MAX_TURN_S):
        raise RuleViolation("invalid_rules", f"clock turn_s is over 0 and at most {MAX_TURN_S}")
    if not (isinstance(clock.bank_s, (int, float)) and 0 <= clock.bank_s <= MAX_TURN_S * 100):
        raise RuleViolation("invalid_rules", "clock bank_s is 0 or more, within reason")
    if not (isinstance(clock.away_after, int) and 0 <= clock.away_after <= MAX_AWAY_AFTER):
        raise RuleViolation("invalid_rules", f"clock away_after is 0 to {MAX_AWAY_AFTER}")
    if clock.on_timeout not in get_args(OnTimeout):
        raise RuleViolation("invalid_rules", "clock on_timeout is auto or forfeit")
    return clock


def _printable(name: str) -> bool:
    """A league's name follows the rule of a player's (:data:`domain.seating.PLAYER_NAME`)."""
    return is_player_name(name)


def _check_players(players: tuple[str, ...], table_size: int) -> None:
    """The same names a seat takes (:func:`domain.game.decide`), each once, enough for a table."""
    for player in players:
        if not is_player_name(player):
            raise RuleViolation(
                "malformed", f"a player's name is 1 to {MAX_NAME} printable characters"
            )
    if len(set(players)) != len(players):
        raise RuleViolation("malformed", "a league names each player once")
    if not table_size <= len(players) <= MAX_PLAYERS:
        raise RuleViolation(
            "invalid_rules",  # well formed, but not enough for the tables its rules set
            f"a league of tables of {table_size} needs {table_size} to {MAX_PLAYERS} players, "
            f"not {len(players)}",
        )


def _schedule(
    state: League,
    number: int,
    results: Mapping[str, TableResult],
    seeding: Sequence[Side] | None = None,
) -> list[AnyLeagueEvent]:
    if state.over:
        raise RuleViolation("wrong_phase", f"all {state.planned} rounds are scheduled")
    if number != state.next_round:
        raise RuleViolation("wrong_phase", f"round {state.next_round} is next, not {number}")
    events: list[AnyLeagueEvent] = []
    if state.rounds and not state.rounds[-1].finished:
        completed = _completed(state.rounds[-1], results)
        events.append(completed)
        state = evolve(state, completed)
    if state.stage is not None and number > state.before_knockout:
        return [*events, *_knockout_round(state, number, seeding)]
    playing = state.active
    if len(playing) < state.rules.players:
        raise RuleViolation(
            "wrong_phase",
            f"{len(playing)} players are left in the league: too few for a table",
        )
    swiss = state.pairing == "swiss"
    left = set(playing)
    ranked = (
        [standing.player for standing in ranking(state) if standing.player in left]
        if swiss
        else None
    )
    seating = seat_round(
        state.pairing,
        playing,
        state.rules.players,
        [past.seating for past in state.rounds],
        partnerships=state.rules.partnerships,
        ranking=ranked,
    )
    tables = tuple(
        LeagueTable(table_game_id(state.league_id, number, index), players)
        for index, players in enumerate(seating.tables, start=1)
    )
    events.append(RoundScheduled(number, tables, seating.byes))
    return events


def _finish(state: League, number: int, results: Mapping[str, TableResult]) -> list[AnyLeagueEvent]:
    """The round's end once its last game has ended; nothing before, nor a second time."""
    if not 1 <= number <= len(state.rounds):
        return []  # no such round: no game of it can have ended, and nothing is recorded
    played = state.rounds[number - 1]
    if played.finished or any(table.game_id not in results for table in played.tables):
        return []
    completed = _completed(played, results)
    events: list[AnyLeagueEvent] = [completed]
    if state.planned is not None and number == state.planned and not state.finished:
        events.append(LeagueFinished(state.planned))
    return events


def _withdraw(state: League, player: str) -> list[AnyLeagueEvent]:
    if player not in state.players:
        raise RuleViolation("malformed", f"{player!r} is not a player of the league")
    if player in state.withdrawn:
        raise RuleViolation("wrong_phase", f"{player!r} has withdrawn already")
    if state.knockout is not None:
        raise RuleViolation(
            "wrong_phase",
            "the knockout is seeded: an entrant's matches are played out (or forfeited on the "
            "clock), not left",
        )
    if state.finished:
        raise RuleViolation("wrong_phase", "the league is finished")
    if len(state.active) - 1 < state.rules.players and not state.over:
        raise RuleViolation(
            "wrong_phase",
            f"without {player!r} the league could not seat a table of {state.rules.players}",
        )
    return [PlayerWithdrawn(player, len(state.rounds))]


def _substitute(
    state: League, command: SubstitutePlayer, results: Mapping[str, TableResult]
) -> list[AnyLeagueEvent]:
    if not _printable(command.substitute):
        raise RuleViolation("malformed", f"a player's name is 1 to {MAX_NAME} printable characters")
    if command.player not in state.players:
        raise RuleViolation("malformed", f"{command.player!r} is not a player of the league")
    place = state.seat_of(command.player)
    if place is None:
        raise RuleViolation(
            "wrong_phase", f"{command.player!r} has no table in a round being played"
        )
    table, seat = place
    if table.game_id in results:
        raise RuleViolation("game_over", f"{table.game_id} is over")
    current = state.current
    assert current is not None
    seated = {
        state.sitting(other, index)
        for other in current.tables
        for index in range(len(other.players))
    }
    if command.substitute in seated:
        raise RuleViolation(
            "seat_taken", f"{command.substitute!r} already plays a seat in this round"
        )
    return [
        PlayerSubstituted(current.number, table.game_id, seat, command.player, command.substitute)
    ]


def _adjust(state: League, command: AdjustScore) -> ScoreAdjusted:
    if command.player not in state.players:
        raise RuleViolation("malformed", f"{command.player!r} is not a player of the league")
    if command.points == 0 or abs(command.points) > MAX_ADJUSTMENT:
        raise RuleViolation(
            "malformed", f"an adjustment is 1 to {MAX_ADJUSTMENT} points, either way"
        )
    _check_reason(command.reason)
    if command.round is not None and not 1 <= command.round <= len(state.rounds):
        raise RuleViolation("wrong_phase", f"the league has no round {command.round} yet")
    return ScoreAdjusted(
        len(state.adjustments) + 1, command.player, command.points, command.reason, command.round
    )


def _void(state: League, command: VoidTable, results: Mapping[str, TableResult]) -> TableVoided:
    _check_reason(command.reason)
    found = state.table_named(command.game_id)
    if found is None:
        raise RuleViolation("malformed", f"{command.game_id!r} is not a table of the league")
    played, table = found
    if state.in_knockout(played.number):
        raise RuleViolation(
            "wrong_phase", "a knockout match decides who goes on: it is not voided, but replayed"
        )
    if state.voided_game(table.game_id):
        raise RuleViolation("wrong_phase", f"{table.game_id} is void already")
    if command.board is not None:
        if state.format != "duplicate" or command.board not in played.boards:
            raise RuleViolation(
                "malformed", f"{table.game_id} plays no board {command.board} of a duplicate event"
            )
        if state.voided_board(table.game_id, command.board):
            raise RuleViolation(
                "wrong_phase", f"board {command.board} at {table.game_id} is void already"
            )
    if played.finished:
        result = played.results[played.tables.index(table)]
    elif table.game_id in results:
        result = results[table.game_id]
    else:
        raise RuleViolation(
            "wrong_phase", f"{table.game_id} is still being played: void it once it is over"
        )
    return TableVoided(played.number, table.game_id, command.reason, result, command.board)


def _check_reason(reason: str) -> None:
    if len(reason) > MAX_REASON or REASON.fullmatch(reason) is None:
        raise RuleViolation("malformed", f"a reason is 1 to {MAX_REASON} printable characters")


def _check_stage(
    stage: KnockoutStage, rules: Rules, players: Sequence[str], pairs: bool = False
) -> None:
    """A knockout the league can hold: head to head (two players, or two of a duplicate
    event's fixed ``pairs``), a match length, a field of two or more."""
    if rules.players != 2 and not (pairs and len(rules.table.units) == 2):
        raise RuleViolation(
            "invalid_rules",
            "a knockout is head to head: the two-player game, or a duplicate event's fixed "
            "pairs at a four-seat partnership table (a league of players has no fixed pairs)",
        )
    if stage.tie_break not in get_args(MatchTies):
        raise RuleViolation("invalid_rules", f"a tie break is play_on or one of {TIE_BREAKS}")
    if not 0 <= stage.extra_deals <= MAX_EXTRA_DEALS:
        raise RuleViolation("invalid_rules", f"a match plays 0 to {MAX_EXTRA_DEALS} extra deals")
    if pairs and stage.ratings is not None:
        raise RuleViolation(
            "invalid_rules", "a duplicate event's knockout is seeded by its standings, not ratings"
        )
    try:
        if (stage.deals is None) == (stage.target is None):
            raise RuleViolation(
                "invalid_rules", "a match is of a number of deals or to a target score, one"
            )
        if stage.deals is not None:
            resolve_rules(replace(rules, max_hands=stage.deals))
        else:
            resolve_rules(replace(rules, target=stage.target, max_hands=None))
    except msgspec.ValidationError as error:
        raise RuleViolation("invalid_rules", f"the knockout's match: {error}") from None
    field = len(players) // len(rules.table.units[0]) if pairs else len(players)
    if stage.top is not None and not 2 <= stage.top <= field:
        raise RuleViolation("invalid_rules", f"a knockout of the top {stage.top} of {field}")
    if stage.ratings is not None:
        if set(stage.ratings) != set(players):
            raise RuleViolation("invalid_rules", "the knockout's ratings rate every player, once")
        if not all(math.isfinite(rating) for rating in stage.ratings.values()):
            raise RuleViolation("malformed", "a rating is a finite number")


def _knockout_round(
    state: League, number: int, seeding: Sequence[Side] | None = None
) -> list[AnyLeagueEvent]:
    """Round ``number`` of a league in its knockout: the first seeds it (:class:`KnockoutSeeded`)
    from those still in; each later one pairs the winners of the one before. A duplicate
    event's pairs are seeded by its matchpoint standings, an input (``seeding``: every pair,
    best first), which the league cannot count from its tables' results alone."""
    assert state.stage is not None
    events: list[AnyLeagueEvent] = []
    if state.knockout is None:
        seeded = KnockoutSeeded(number, _entrants(state, state.stage, seeding))
        events.append(seeded)
        state = evolve(state, seeded)
    knockout = state.knockout
    assert knockout is not None
    bracket = knockout_rounds(state)
    index = number - knockout.first
    if not 0 <= index < len(bracket):
        raise RuleViolation("wrong_phase", f"the knockout has no round {index + 1} to play")
    matches = bracket[index]
    tables: list[LeagueTable] = []
    byes: list[str] = []
    units = state.rules.table.units
    for played in matches:
        sides = [knockout.entrants[seed - 1] for seed in played.match.seeds]
        if played.match.bye:
            byes.extend(sides[0])
            continue
        seats = [""] * state.rules.players
        for unit, side in zip(units, sides, strict=True):
            for seat, player in zip(unit, side, strict=True):
                seats[seat] = player
        game_id = table_game_id(state.league_id, number, len(tables) + 1)
        tables.append(LeagueTable(game_id, tuple(seats)))
    events.append(RoundScheduled(number, tuple(tables), tuple(byes)))
    return events


def _entrants(
    state: League, stage: KnockoutStage, seeding: Sequence[Side] | None
) -> tuple[Side, ...]:
    """The knockout's field, best seed first: of those still in, by the organiser's ratings
    or by the standings of the rounds before (a duplicate event's: ``seeding``), the first
    ``top``."""
    still_in = set(state.active)
    order: list[Side]
    if state.format == "duplicate":
        if seeding is None:
            raise ValueError("a duplicate event's standings are an input of its knockout")
        pairs = set(duplicate_pairs(state))
        if sorted(seeding) != sorted(pairs):
            raise RuleViolation("malformed", "the knockout's seeding names every pair once")
        order = list(seeding)
    elif stage.ratings is not None:
        rated = seeded_by_rating({p: r for p, r in stage.ratings.items() if p in still_in})
        order = [(player,) for player in rated]
    else:
        order = [(s.player,) for s in ranking(state) if s.player in still_in]
    field = order[: stage.top or len(order)]
    if len(field) < 2:
        raise RuleViolation("wrong_phase", "fewer than two are left for the knockout")
    return tuple(field)


def duplicate_pairs(state: League) -> list[Side]:
    """A duplicate event's fixed pairs, as listed (partner beside partner), each in the order
    its players sit: what its knockout's entrants are."""
    size = len(state.rules.table.units[0])
    return [tuple(state.players[i : i + size]) for i in range(0, len(state.players), size)]


class KnockoutMatch(msgspec.Struct, frozen=True):
    """A match of the knockout as played so far: its game (None: a bye, or not scheduled yet)
    and its winner's seed (None: not decided yet)."""

    match: Match
    game_id: str | None
    winner: int | None


def knockout_rounds(state: League) -> list[list[KnockoutMatch]]:
    """The knockout's rounds as far as they are known: each scheduled one with its games and
    winners (once it is recorded), and the next one to schedule, once the one before it is
    recorded (its byes decided). Empty before the seeding."""
    knockout = state.knockout
    if knockout is None:
        return []
    matches = first_round(len(knockout.entrants))
    rounds: list[list[KnockoutMatch]] = []
    number = knockout.first
    while True:
        scheduled = state.rounds[number - 1] if number <= len(state.rounds) else None
        played = _played(matches, scheduled, state.rules.table.units)
        rounds.append(played)
        if scheduled is None or not scheduled.finished or len(matches) == 1:
            return rounds
        matches = next_knockout_round(
            matches, {m.match.number: m.winner for m in played if m.winner is not None}
        )
        number += 1


def _played(
    matches: Sequence[Match], scheduled: Round | None, units: Sequence[Sequence[int]]
) -> list[KnockoutMatch]:
    """The matches with their games and, once their round is recorded, their winners."""
    if scheduled is None:
        return [KnockoutMatch(m, None, m.seeds[0] if m.bye else None) for m in matches]
    tables = iter(range(len(scheduled.tables)))
    played = []
    for match in matches:
        if match.bye:
            played.append(KnockoutMatch(match, None, match.seeds[0]))
            continue
        index = next(tables)
        game_id = scheduled.tables[index].game_id
        winner = None
        if scheduled.finished:
            won = scheduled.results[index].won
            # a side's seats are its unit's: seed k of the match sits in unit k
            unit_won = [won[seats[0]] for seats in units]
            winner = next(seed for seed, w in zip(match.seeds, unit_won, strict=True) if w)
        played.append(KnockoutMatch(match, game_id, winner))
    return played


def champion(state: League) -> Side | None:
    """The knockout's winner, once its final is recorded."""
    knockout = state.knockout
    bracket = knockout_rounds(state)
    if knockout is None or len(bracket) != knockout.rounds:
        return None
    (final,) = bracket[-1]
    return None if final.winner is None else knockout.entrants[final.winner - 1]


def _completed(last: Round, results: Mapping[str, TableResult]) -> RoundCompleted:
    """The round's results, once every one of its games is over."""
    recorded = []
    for table in last.tables:
        result = results.get(table.game_id)
        if result is None:
            raise RuleViolation(
                "wrong_phase", f"round {last.number} is still being played: {table.game_id}"
            )
        seats = len(table.players)
        if len(result.points) != seats or len(result.won) != seats:
            raise RuleViolation("malformed", f"the result of {table.game_id} is not per seat")
        recorded.append(result)
    return RoundCompleted(last.number, tuple(recorded))


# --------------------------------------------------------------------------- evolve


def evolve(state: League | None, event: AnyLeagueEvent) -> League:
    """Apply one event; a valid history always begins with :class:`LeagueCreated`."""
    if isinstance(event, LeagueCreated):
        return _created(event)
    if state is None:
        raise ValueError(f"a league's history begins with league_created, not {event!r}")
    version = state.version + 1
    if isinstance(event, RoundCompleted):
        rounds = list(state.rounds)
        rounds[event.round - 1] = replace(rounds[event.round - 1], results=event.results)
        return replace(state, rounds=tuple(rounds), version=version)
    if isinstance(event, BoardsRevealed):
        return replace(state, revealed=(*state.revealed, *event.boards), version=version)
    if isinstance(event, RoundScheduled):
        boards = event.boards if isinstance(event.boards, tuple) else ()
        played = Round(event.round, event.tables, event.byes, boards=boards)
        return replace(state, rounds=(*state.rounds, played), version=version)
    if isinstance(event, LeagueFinished):
        return replace(state, finished=True, version=version)
    if isinstance(event, PlayerWithdrawn):
        return replace(state, withdrawn=(*state.withdrawn, event.player), version=version)
    if isinstance(event, ScoreAdjusted):
        return replace(state, adjustments=(*state.adjustments, event), version=version)
    if isinstance(event, TableVoided):
        return replace(state, voided=(*state.voided, event), version=version)
    if isinstance(event, KnockoutSeeded):
        knockout = Knockout(event.entrants, event.round)
        planned = event.round - 1 + knockout.rounds
        return replace(state, knockout=knockout, planned=planned, version=version)
    substitution = Substitution(
        event.round, event.game_id, event.seat, event.player, event.substitute
    )
    return replace(state, substitutions=(*state.substitutions, substitution), version=version)


def _created(event: LeagueCreated) -> League:
    planned = event.rounds
    if isinstance(event.knockout, KnockoutStage):
        field = len(event.knockout.ratings or event.players)
        if event.format == "duplicate":  # its fixed pairs enter
            field = len(event.players) // len(event.rules.table.units[0])
        field = min(event.knockout.top or field, field)
        planned = (event.rounds or 0) + places(field).bit_length() - 1
    return League(
        league_id=event.league_id,
        name=event.name,
        rules=event.rules,
        players=event.players,
        order=seeded_order(event.players, event.seed),
        planned=planned,
        pairing=event.pairing,
        seed=event.seed,
        version=1,
        platform=event.platform,
        visibility=event.visibility,
        clock=event.clock,
        stage=event.knockout if isinstance(event.knockout, KnockoutStage) else None,
        before_knockout=event.rounds or 0,
        format=event.format if isinstance(event.format, str) else "standard",
        boards_per_round=(
            event.boards_per_round if isinstance(event.boards_per_round, int) else None
        ),
        boards=event.boards if isinstance(event.boards, BoardCommitments) else None,
        partners="rotating" if event.partners == "rotating" else "fixed",
        convention="transferred" if event.convention == "transferred" else "as_scored",
    )


def fold(events: Iterable[AnyLeagueEvent], state: League | None = None) -> League | None:
    for event in events:
        state = evolve(state, event)
    return state


# --------------------------------------------------------------------------- reading


def seeded_order(players: Iterable[str], seed: str) -> tuple[str, ...]:
    """The players shuffled by ``seed``: ordered by SHA-256 of the seed and the name.

    >>> seeded_order(["ann", "bob", "cat"], "00")
    ('bob', 'cat', 'ann')
    """
    return tuple(
        sorted(players, key=lambda name: hashlib.sha256(f"{seed}:{name}".encode()).digest())
    )


def ranking(state: League) -> list[Standing]:
    """Every player's record in the recorded rounds, best first: most wins (a bye of a
    finished round counts :data:`BYE_WINS`), then most points, then fewest forfeits, then the
    league's order. A forfeited game is a loss for the unit that ran out of time and a win
    for the others, at the scores as they stood. A void table counts for no one, and the
    director's adjusted scores are in the points."""
    tally = {player: Standing(player) for player in state.order}
    for played in state.rounds:
        if not played.finished:
            continue
        for table, result in zip(played.tables, played.results, strict=True):
            if state.voided_game(table.game_id):
                continue
            for seat, player in enumerate(table.players):
                now = tally[player]
                tally[player] = replace(
                    now,
                    wins=now.wins + result.won[seat],
                    points=now.points + result.points[seat],
                    games=now.games + 1,
                    forfeits=now.forfeits + result.forfeit_at(seat),
                )
        for player in played.byes:
            now = tally[player]
            tally[player] = replace(now, wins=now.wins + BYE_WINS, byes=now.byes + 1)
    for adjusted in state.adjustments if state.format == "standard" else ():
        # a duplicate event's adjustments are matchpoints, counted with its matchpoints
        now = tally[adjusted.player]
        tally[adjusted.player] = replace(now, points=now.points + adjusted.points)
    place = {player: index for index, player in enumerate(state.order)}
    return sorted(tally.values(), key=lambda s: (-s.wins, -s.points, s.forfeits, place[s.player]))


def table_game_id(league_id: str, round_number: int, table: int) -> str:
    """The game id of a table: ``<league>-<round>-<table>``, numbered from 1.

    The gateway names the games it creates with 16 hex digits, never with a ``-``, so no game
    but a league's own has such an id (see :func:`is_table_game`).
    """
    return f"{league_id}-{round_number}-{table}"


class TablePlace(msgspec.Struct, frozen=True):
    """Where a league's game is played: its league, round and table."""

    league_id: str
    round: int
    table: int


def table_of(game_id: str) -> TablePlace | None:
    """The league, round and table a game id names (as :func:`table_game_id` makes it), or
    None for an id no league gives.

    >>> table_of("north-2-13")
    TablePlace(league_id='north', round=2, table=13)
    >>> table_of("3f9a0c1d2e4b5a69") is None
    True
    """
    match = _TABLE_GAME.fullmatch(game_id)
    if match is None:
        return None
    return TablePlace(match["league"], int(match["round"]), int(match["table"]))


def is_table_game(league_id: str, game_id: str) -> bool:
    """Whether ``game_id`` names a table of ``league_id``.

    >>> is_table_game("north", "north-2-13"), is_table_game("north", "north-x-1")
    (True, False)
    """
    place = table_of(game_id)
    return place is not None and place.league_id == league_id


def table_result(game: Game) -> TableResult:
    """A finished game's result per seat, for :class:`RoundCompleted`."""
    unit_of = game.rules.table.unit_of
    return TableResult(
        game.game_id,
        tuple(game.scores[unit] for unit in unit_of),
        tuple(unit in game.winners for unit in unit_of),
        tuple(unit == game.forfeited for unit in unit_of) if game.forfeited is not None else (),
    )


# --------------------------------------------------------------------------- duplicate events
#
# A duplicate event (``format: duplicate``) deals its boards once: every table of a round plays
# the round's boards (``boards_per_round`` of them, board ``(r - 1) * boards_per_round + k``
# as hand ``k`` of round ``r``), and each side's result on a board is compared with the same
# direction's at the other tables (:mod:`domain.matchpoints`). The rounds are seated by a
# generated movement (:mod:`domain.movement`): fixed pairs at a partnership table (the players
# as listed, partners side by side: the first and second, the third and fourth, ...), each
# player alone otherwise. Its number of rounds is fixed when it is created (the movement's
# default when not given). The boards' seeds are inputs, as the league's seed is: their
# commitments and Merkle root are published with the event (:mod:`domain.boards`), and a
# round's seeds are revealed (:class:`BoardsRevealed`) when its last table is over.
#
# What makes no sense for it is refused: a pairing other than ``auto`` (the movement seats
# every round), a field or a number of rounds no movement seats (both ``invalid_rules``), and
# a withdrawal (the movement is fixed: ``wrong_phase``).


def duplicate_style(rules: Rules, partners: Partners = "fixed") -> Style:
    """How a duplicate event of ``rules`` moves: fixed pairs where there are partnerships,
    unless its partners rotate (an individual event)."""
    return "pairs" if rules.partnerships and partners == "fixed" else "individual"


def duplicate_boards(command: CreateLeague) -> int:
    """How many boards a duplicate event ``command`` creates has (the seeds it needs: boards
    1 to this), without making its movement (:func:`decide` does, and refuses what no
    movement seats); raises RuleViolation for a field it cannot count."""
    rules = resolve_rules(command.rules)
    _check_players(command.players, rules.players)
    rounds = command.rounds
    if rounds is None:
        try:
            style = duplicate_style(rules, command.partners)
            rounds = default_rounds(len(command.players), rules, style)
        except MovementError as error:
            raise RuleViolation("invalid_rules", error.detail) from None
    return max(1, min(rounds, MAX_MOVEMENT_ROUNDS)) * max(1, _boards_per_round(command))


def _boards_per_round(command: CreateLeague) -> int:
    return (
        DEFAULT_BOARDS_PER_ROUND if command.boards_per_round is None else command.boards_per_round
    )


def _movement_of(command: CreateLeague, rules: Rules) -> Movement:
    if command.format != "duplicate":
        raise RuleViolation(
            "invalid_rules",
            "boards_per_round, partners and convention are for a duplicate league only",
        )
    if command.partners not in get_args(Partners):
        raise RuleViolation("malformed", f"partners {command.partners!r}: fixed or rotating")
    if command.convention not in get_args(Convention):
        raise RuleViolation(
            "malformed", f"convention {command.convention!r}: as_scored or transferred"
        )
    if command.partners == "rotating" and not rules.partnerships:
        raise RuleViolation(
            "invalid_rules", "partners rotate only at partnership tables: these have none"
        )
    if command.pairing != "auto":
        raise RuleViolation(
            "invalid_rules", "a duplicate event is seated by its movement: pairing must be auto"
        )
    style = duplicate_style(rules, command.partners)
    rounds = command.rounds
    try:
        if rounds is None:
            rounds = default_rounds(len(command.players), rules, style)
        return movement(
            len(command.players),
            rules,
            style,
            rounds=rounds,
            boards_per_round=_boards_per_round(command),
        )
    except MovementError as error:  # well formed, but no movement seats such an event
        raise RuleViolation("invalid_rules", error.detail) from None


def _create_duplicate(
    command: CreateLeague, seed: str, board_seeds: Mapping[int, bytes]
) -> LeagueCreated:
    plain = replace(
        command,
        format="standard",
        boards_per_round=None,
        partners="fixed",
        convention="as_scored",
        knockout=None,
    )
    standard = _create(plain, seed)
    if command.knockout is not None:
        fixed = command.partners == "fixed"  # its sides keep their players: they can enter
        _check_stage(command.knockout, standard.rules, command.players, pairs=fixed)
    plan = _movement_of(command, standard.rules)
    per_round = _boards_per_round(command)
    count = len(plan.rounds) * per_round
    missing = [board for board in range(1, count + 1) if board not in board_seeds]
    if missing:
        raise ValueError(f"the seeds of boards {missing[:3]}... are an input of the event")
    return replace(
        standard,
        rounds=len(plan.rounds),
        pairing="round_robin",
        format="duplicate",
        boards_per_round=per_round,
        boards=commit([board_seeds[board] for board in range(1, count + 1)]),
        partners=msgspec.UNSET if command.partners == "fixed" else command.partners,
        convention=msgspec.UNSET if command.convention == "as_scored" else command.convention,
        knockout=msgspec.UNSET if command.knockout is None else command.knockout,
    )


def league_movement(state: League) -> Movement:
    """A duplicate event's whole movement (the same every time: it depends on the event alone)."""
    assert state.format == "duplicate"
    assert state.planned is not None
    return movement(
        len(state.players),
        state.rules,
        duplicate_style(state.rules, state.partners),
        rounds=state.before_knockout if state.stage is not None else state.planned,
        boards_per_round=state.boards_per_round or DEFAULT_BOARDS_PER_ROUND,
    )


def round_boards(state: League, number: int) -> tuple[int, ...]:
    """The boards of a duplicate event's round ``number``."""
    per_round = state.boards_per_round or DEFAULT_BOARDS_PER_ROUND
    first = (number - 1) * per_round + 1
    return tuple(range(first, first + per_round))


def _duplicate_round(
    state: League,
    command: ScheduleRound | FinishRound,
    results: Mapping[str, TableResult],
    board_seeds: Mapping[int, bytes],
) -> list[AnyLeagueEvent]:
    """A duplicate event's round: scheduled from its movement; over (with its boards revealed)
    once every table of it is."""
    if isinstance(command, FinishRound):
        events = _finish(state, command.round, results)
        if events:
            events.insert(1, _reveal(state, command.round, board_seeds))
        return events
    events = []
    if state.rounds and not state.rounds[-1].finished and not state.over:
        last = state.rounds[-1]
        completed = _completed(last, results)
        events += [completed, _reveal(state, last.number, board_seeds)]
        for event in events:
            state = evolve(state, event)
    if state.over:
        raise RuleViolation("wrong_phase", f"all {state.planned} rounds are scheduled")
    if command.round != state.next_round:
        raise RuleViolation("wrong_phase", f"round {state.next_round} is next, not {command.round}")
    planned = league_movement(state).rounds[command.round - 1]
    tables = tuple(
        LeagueTable(
            table_game_id(state.league_id, command.round, index),
            tuple(state.players[player] for player in seats),
        )
        for index, seats in enumerate(planned.tables, start=1)
    )
    byes = tuple(state.players[player] for player in planned.byes)
    events.append(RoundScheduled(command.round, tables, byes, boards=planned.boards))
    return events


def _reveal(state: League, number: int, board_seeds: Mapping[int, bytes]) -> BoardsRevealed:
    """Round ``number``'s seeds, each checked against the board's published commitment."""
    assert state.boards is not None
    revealed = []
    for board in round_boards(state, number):
        seed = board_seeds.get(board)
        if seed is None:
            raise ValueError(f"the seed of board {board} is an input of the round's end")
        if commitment(seed) != state.boards.commitments[board - 1]:
            raise RuleViolation(
                "invalid_rules", f"board {board}'s seed does not open its published commitment"
            )
        revealed.append((board, seed.hex()))
    return BoardsRevealed(number, tuple(revealed))
