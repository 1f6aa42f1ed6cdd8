"""Setting up a table: creating the game and taking its seats.

A game is created with its rule set resolved and checked (an impossible table is refused here,
never later) and waits until every seat is taken; the last seat taken starts it.
"""

from __future__ import annotations

import re
from typing import get_args

import msgspec
from msgspec.structs import replace

from domain.commands import CreateGame, ReissueSeatToken, TakeSeat
from domain.errors import InvalidRules, RuleViolation
from domain.events import (
    AnyEvent,
    DuplicateBoards,
    GameCreated,
    SeatTaken,
    SeatTokenReissued,
    TieRule,
)
from domain.knockout import MAX_EXTRA_DEALS, TIE_BREAKS
from domain.platforms import Seating, Visibility
from domain.rules import resolve_rules
from domain.state import Game, Player, at_seat
from domain.table import Seat
from domain.timing import check_clock, timing_for

MAX_NAME = 64
MAX_ENTROPY_HEX = 256
MAX_GAME_ID = 64

GAME_ID_PATTERN = rf"^[A-Za-z0-9_-]{{1,{MAX_GAME_ID}}}$"
"""A game's id: the one rule of the domain, the wire and the HTTP paths."""
GAME_ID = re.compile(GAME_ID_PATTERN)
GAME_ID_RULE = f"a game id is 1 to {MAX_GAME_ID} of A-Z a-z 0-9 _ -"

PLAYER_NAME_PATTERN = (
    "^[^\\x00-\\x1f\\x7f-\\xa0\\xad\\u061c\\u1680\\u180e\\u2000-\\u200f"
    "\\u2028-\\u202f\\u205f-\\u206f\\u3000\\ufeff\\ufff9-\\ufffb]"
    f"{{1,{MAX_NAME}}}$"
)
"""A player's name: 1 to 64 characters, none of them a control character, a line or paragraph
separator, or an invisible space or format mark (the plain space is fine). Written as a regular
expression that Python and JSON Schema (ECMA-262) read alike, so the API's schema states it.
(A lone surrogate is no character at all: the gateway refuses any body holding one.)"""
PLAYER_NAME = re.compile(PLAYER_NAME_PATTERN)
PLAYER_NAME_RULE = f"a player's name is 1 to {MAX_NAME} printable characters"

ENTROPY_PATTERN = f"^(?:[0-9A-Fa-f]{{2}}){{0,{MAX_ENTROPY_HEX // 2}}}$"
"""Entropy a game or a seat mixes into the deal: whole bytes of hex, at most 256 digits."""
ENTROPY = re.compile(ENTROPY_PATTERN)


def is_player_name(name: object) -> bool:
    """Whether ``name`` is a name a player may sit under (:data:`PLAYER_NAME_PATTERN`)."""
    return isinstance(name, str) and PLAYER_NAME.fullmatch(name) is not None


def seat_of(state: Game, seat: int) -> Seat:
    """``seat``, when it is a seat at this table; ``malformed`` otherwise."""
    if not 0 <= seat < state.rules.players:
        raise RuleViolation("malformed", f"seat {seat} is not a seat at this table")
    return seat


def check_entropy(entropy: str) -> None:
    """Entropy is whole bytes of hex, and short (:data:`ENTROPY_PATTERN`)."""
    if len(entropy) > MAX_ENTROPY_HEX:
        raise RuleViolation("malformed", f"entropy is at most {MAX_ENTROPY_HEX} hex digits")
    if ENTROPY.fullmatch(entropy) is None:
        raise RuleViolation("malformed", f"entropy {entropy!r} is not whole bytes of hex")


# --------------------------------------------------------------------------- decide


def create_game(command: CreateGame) -> GameCreated:
    rules = resolve_rules(command.rules)
    units = len(rules.table.units)
    if command.dealer is not None and not 0 <= command.dealer < rules.players:
        # a well-formed set-up the table cannot have, like a rule set it cannot play
        raise InvalidRules(f"dealer {command.dealer} is not a seat of {rules.players}")
    for name in ("scores", "bags"):
        given = getattr(command, name)
        if given is not None and len(given) != units:
            raise RuleViolation("malformed", f"{name} needs one value per unit ({units})")
    if command.bags is not None and any(count < 0 for count in command.bags):
        raise RuleViolation("malformed", "bags cannot be negative")
    if GAME_ID.fullmatch(command.game_id) is None:
        raise RuleViolation("malformed", GAME_ID_RULE)
    if command.league is not None and not 1 <= len(command.league) <= MAX_NAME:
        raise RuleViolation("malformed", f"a league name is 1 to {MAX_NAME} characters")
    check_entropy(command.entropy)
    _check_access(command)
    if command.clock is not None:
        check_clock(command.clock)
    if command.duplicate is not None:
        _check_duplicate(command, rules.players)
    if command.ties is not None:
        _check_ties(command.ties, units)
    return GameCreated(
        game_id=command.game_id,
        rules=rules,
        dealer=command.dealer,
        entropy=command.entropy,
        scores=command.scores,
        bags=command.bags,
        league=command.league,
        platform=command.platform,
        visibility=command.visibility,
        seating=command.seating,
        clock=command.clock,
        duplicate=command.duplicate if command.duplicate is not None else msgspec.UNSET,
        ties=command.ties if command.ties is not None else msgspec.UNSET,
    )


MAX_BOARD = 1_000_000
"""The highest board number a duplicate table may start from."""


def _check_duplicate(command: CreateGame, players: int) -> None:
    """A duplicate event's table: its boards, and the dealer of its first board (a board's
    dealer turns a seat a board, :func:`domain.boards.board_dealer`)."""
    duplicate = command.duplicate
    assert duplicate is not None
    if not 1 <= len(duplicate.event) <= MAX_NAME:
        raise RuleViolation("malformed", f"a duplicate event's name is 1 to {MAX_NAME} characters")
    if not 1 <= duplicate.first <= MAX_BOARD or not 1 <= duplicate.count <= MAX_BOARD:
        raise RuleViolation("malformed", f"a table's boards are numbered 1 to {MAX_BOARD}")
    if command.dealer != (duplicate.first - 1) % players:
        raise RuleViolation(
            "malformed",
            f"board {duplicate.first} is dealt by seat {(duplicate.first - 1) % players}",
        )


def _check_ties(ties: TieRule, units: int) -> None:
    """A knockout match's tie rule: a rule of :data:`~domain.knockout.TIE_BREAKS`, its extra
    deals within bounds, its better seed a unit of the table."""
    if ties.tie_break not in TIE_BREAKS:
        raise RuleViolation("malformed", f"tie break {ties.tie_break!r} is not one of {TIE_BREAKS}")
    if not 0 <= ties.extra_deals <= MAX_EXTRA_DEALS:
        raise RuleViolation("malformed", f"extra deals are 0 to {MAX_EXTRA_DEALS}")
    if not 0 <= ties.better < units:
        raise RuleViolation("malformed", f"unit {ties.better} is not a unit of this table")


def _check_access(command: CreateGame) -> None:
    """Who the game belongs to, who may read it and who may sit (:mod:`domain.platforms`)."""
    if command.platform is not None and not 1 <= len(command.platform) <= MAX_NAME:
        raise RuleViolation("malformed", f"a platform's name is 1 to {MAX_NAME} characters")
    if command.visibility not in get_args(Visibility):
        raise RuleViolation("malformed", f"visibility {command.visibility!r} is not public/private")
    if command.seating not in get_args(Seating):
        raise RuleViolation("malformed", f"seating {command.seating!r} is not platform/open")


def take_seat(state: Game, command: TakeSeat) -> list[AnyEvent]:
    if not is_player_name(command.player):
        raise RuleViolation("malformed", PLAYER_NAME_RULE)
    check_entropy(command.entropy)
    free = [seat for seat, player in enumerate(state.players) if player is None]
    if command.seat is None:
        if not free:
            raise RuleViolation("seat_taken", "every seat is taken")
        seat = free[0]
    else:
        if not 0 <= command.seat < state.rules.players:
            # a seat the table does not have is not to be had, like a taken one
            raise RuleViolation("seat_taken", f"the table has no seat {command.seat}")
        seat = command.seat
        if seat not in free:
            raise RuleViolation("seat_taken", f"seat {seat} is taken")
    return [SeatTaken(seat, command.player, command.entropy)]


def reissue_seat_token(state: Game, command: ReissueSeatToken) -> list[AnyEvent]:
    """A new token issue for a taken seat, and who sits there from now on."""
    seat = seat_of(state, command.seat)
    player = state.players[seat]
    if player is None:
        raise RuleViolation("wrong_phase", f"seat {seat} is free: take it instead")
    name = player.name if command.player is None else command.player
    if not is_player_name(name):
        raise RuleViolation("malformed", PLAYER_NAME_RULE)
    return [SeatTokenReissued(seat, player.issue + 1, name)]


# --------------------------------------------------------------------------- evolve


def game_created(event: GameCreated) -> Game:
    """The first state of a game (version 1)."""
    rules = event.rules
    units = len(rules.table.units)
    return Game(
        game_id=event.game_id,
        rules=rules,
        status="waiting",
        players=(None,) * rules.players,
        first_dealer=event.dealer,
        entropy=event.entropy,
        scores=event.scores or (0,) * units,
        bags=event.bags or (0,) * units,
        version=1,
        platform=event.platform,
        visibility=event.visibility,
        seating=event.seating,
        timing=timing_for(event.clock, rules.players),
        league=event.league,
        duplicate=event.duplicate if isinstance(event.duplicate, DuplicateBoards) else None,
        ties=event.ties if isinstance(event.ties, TieRule) else None,
    )


def seat_taken(state: Game, event: SeatTaken) -> Game:
    players = at_seat(state.players, event.seat, Player(event.player, event.entropy))
    return replace(state, players=players, status="playing" if all(players) else "waiting")


def seat_token_reissued(state: Game, event: SeatTokenReissued) -> Game:
    held = state.players[event.seat]
    if held is None:
        raise ValueError(f"seat {event.seat} is free: no token of it can be re-issued")
    player = replace(held, name=event.player, issue=event.issue)
    return replace(state, players=at_seat(state.players, event.seat, player))
