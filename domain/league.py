"""The league aggregate: players, a rule set and rounds of tables, event-sourced like a game.

``decide(state, command, *, seed=..., results=...) -> list[LeagueEvent]`` checks a command and
returns its events, or raises :class:`~domain.errors.RuleViolation` (``malformed``,
``invalid_rules``, ``wrong_phase``); ``evolve(state, event)`` applies one event. A league's
state is the fold of its events, so every reader, and every read model, can rebuild it.

What a league cannot know by itself comes in as inputs, as a deal's seed does for a game:

- ``seed`` (creating a league): shuffles the players once, into the league's order, which breaks
  every tie of the schedule (:mod:`domain.schedule`); no randomness of the league's own.
- ``results`` (scheduling a round): how the games of the round before ended, read by the
  engine from the games' own histories. A round is scheduled only once every game of the round
  before is over, and the results are recorded then (:class:`RoundCompleted`): Swiss pairing
  ranks players by them.

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
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

import msgspec
from msgspec.structs import replace

from domain.errors import RuleViolation
from domain.platforms import Visibility
from domain.rules import Rules, resolve_rules
from domain.schedule import Pairing, Seating, choose_pairing, seat_round
from domain.seating import is_player_name
from domain.state import Game
from domain.table import table_for

LEAGUE_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
"""At most 40 characters, so that a table's game id (``<league>-<round>-<table>``) is a game
id too (64 at most)."""
_TABLE_GAME = re.compile(
    r"(?P<league>[A-Za-z0-9_-]{1,40})-(?P<round>[0-9]{1,9})-(?P<table>[0-9]{1,9})"
)
MAX_NAME = 64
MAX_PLAYERS = 1000
MAX_ROUNDS = 1000

PairingChoice = Literal["auto", "round_robin", "swiss"]
"""How a league pairs its players; ``auto`` chooses by :func:`domain.schedule.choose_pairing`."""


# --------------------------------------------------------------------------- values


class LeagueTable(msgspec.Struct, frozen=True):
    """One table of a round: its game, and the players by seat."""

    game_id: str
    players: tuple[str, ...]


class TableResult(msgspec.Struct, frozen=True):
    """How a table's game ended, per seat: the final score of the seat's unit, and whether
    that unit won (every unit tied for the win counts as a winner)."""

    game_id: str
    points: tuple[int, ...]
    won: tuple[bool, ...]


class Round(msgspec.Struct, frozen=True):
    number: int
    tables: tuple[LeagueTable, ...]
    byes: tuple[str, ...]
    results: tuple[TableResult, ...] = ()
    """Once the next round is scheduled: each table's result, in table order."""

    @property
    def seating(self) -> Seating:
        return Seating(tuple(table.players for table in self.tables), self.byes)


class Standing(msgspec.Struct, frozen=True):
    """A player's record in the recorded rounds: what Swiss pairing ranks by."""

    player: str
    wins: int = 0
    points: int = 0
    games: int = 0


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

    @property
    def next_round(self) -> int:
        return len(self.rounds) + 1

    @property
    def over(self) -> bool:
        """Every planned round is scheduled."""
        return self.planned is not None and len(self.rounds) >= self.planned


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


class ScheduleRound(LeagueCommand, tag="schedule_round", frozen=True):
    """Seat round ``round`` (which must be the next) and name its games."""

    round: int


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


class RoundCompleted(LeagueEvent, tag="round_completed", frozen=True):
    """Every game of ``round`` is over; each table's result, in table order."""

    round: int
    results: tuple[TableResult, ...]


class RoundScheduled(LeagueEvent, tag="round_scheduled", frozen=True):
    """A round's tables (each with its game id and players by seat) and its byes, seated by
    the league's pairing (:mod:`domain.schedule`)."""

    round: int
    tables: tuple[LeagueTable, ...]
    byes: tuple[str, ...]


AnyLeagueCommand = CreateLeague | ScheduleRound
AnyLeagueEvent = LeagueCreated | RoundCompleted | RoundScheduled


# --------------------------------------------------------------------------- decide


def decide(
    state: League | None,
    command: AnyLeagueCommand,
    *,
    seed: str = "",
    results: Mapping[str, TableResult] | None = None,
) -> list[AnyLeagueEvent]:
    """The events ``command`` causes in ``state``; raises RuleViolation when it is refused."""
    if isinstance(command, CreateLeague):
        if state is not None:
            raise RuleViolation("wrong_phase", f"league {state.league_id} already exists")
        return [_create(command, seed)]
    if state is None:
        raise RuleViolation("wrong_phase", "no such league")
    if isinstance(command, ScheduleRound):
        return _schedule(state, command.round, results or {})
    raise RuleViolation("malformed", f"unknown command {type(command).__name__}")


def _create(command: CreateLeague, seed: str) -> LeagueCreated:
    if not LEAGUE_ID.match(command.league_id):
        raise RuleViolation("malformed", "a league id is 1 to 40 of A-Z a-z 0-9 _ -")
    if not _printable(command.name):
        raise RuleViolation("malformed", f"a league's name is 1 to {MAX_NAME} printable characters")
    rules = resolve_rules(command.rules)
    _check_players(command.players, rules.players)
    if command.rounds is not None and not 1 <= command.rounds <= MAX_ROUNDS:
        raise RuleViolation("malformed", f"rounds is 1 to {MAX_ROUNDS}, or absent for no end")
    if command.pairing not in get_args(PairingChoice):
        choices = ", ".join(get_args(PairingChoice))
        raise RuleViolation("malformed", f"pairing {command.pairing!r} is not one of {choices}")
    pairing: Pairing = (
        choose_pairing(len(command.players), rules.players, command.rounds)
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
        rounds=command.rounds,
        pairing=pairing,
        seed=seed,
        platform=command.platform,
        visibility=command.visibility,
    )


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
    state: League, number: int, results: Mapping[str, TableResult]
) -> list[AnyLeagueEvent]:
    if state.over:
        raise RuleViolation("wrong_phase", f"all {state.planned} rounds are scheduled")
    if number != state.next_round:
        raise RuleViolation("wrong_phase", f"round {state.next_round} is next, not {number}")
    events: list[AnyLeagueEvent] = []
    if state.rounds:
        completed = _completed(state.rounds[-1], results)
        events.append(completed)
        state = evolve(state, completed)
    swiss = state.pairing == "swiss"
    ranked = [standing.player for standing in ranking(state)] if swiss else None
    seating = seat_round(
        state.pairing,
        state.order,
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
    if isinstance(event, RoundCompleted):
        rounds = list(state.rounds)
        rounds[event.round - 1] = replace(rounds[event.round - 1], results=event.results)
        return replace(state, rounds=tuple(rounds), version=state.version + 1)
    played = Round(event.round, event.tables, event.byes)
    return replace(state, rounds=(*state.rounds, played), version=state.version + 1)


def _created(event: LeagueCreated) -> League:
    return League(
        league_id=event.league_id,
        name=event.name,
        rules=event.rules,
        players=event.players,
        order=seeded_order(event.players, event.seed),
        planned=event.rounds,
        pairing=event.pairing,
        seed=event.seed,
        version=1,
        platform=event.platform,
        visibility=event.visibility,
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
    """Every player's wins, points and games in the recorded rounds, best first: most wins,
    then most points, then the league's order."""
    tally = {player: Standing(player) for player in state.order}
    for played in state.rounds:
        for table, result in zip(played.tables, played.results, strict=False):
            for seat, player in enumerate(table.players):
                now = tally[player]
                tally[player] = Standing(
                    player,
                    now.wins + result.won[seat],
                    now.points + result.points[seat],
                    now.games + 1,
                )
    place = {player: index for index, player in enumerate(state.order)}
    return sorted(tally.values(), key=lambda s: (-s.wins, -s.points, place[s.player]))


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
    unit_of = table_for(game.rules).unit_of
    return TableResult(
        game.game_id,
        tuple(game.scores[unit] for unit in unit_of),
        tuple(unit in game.winners for unit in unit_of),
    )
