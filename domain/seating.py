"""Setting up a table: creating the game and taking its seats.

A game is created with its rule set resolved and checked (an impossible table is refused here,
never later) and waits until every seat is taken; the last seat taken starts it.
"""

from __future__ import annotations

from typing import get_args

from msgspec.structs import replace

from domain.commands import CreateGame, ReissueSeatToken, TakeSeat
from domain.errors import RuleViolation
from domain.events import AnyEvent, GameCreated, SeatTaken, SeatTokenReissued
from domain.platforms import Seating, Visibility
from domain.rules import resolve_rules
from domain.state import Game, Player, at_seat
from domain.table import Seat, table_for

MAX_NAME = 64
MAX_ENTROPY_HEX = 256
MAX_GAME_ID = 128


def seat_of(state: Game, seat: int) -> Seat:
    """``seat``, when it is a seat at this table; ``malformed`` otherwise."""
    if not 0 <= seat < state.rules.players:
        raise RuleViolation("malformed", f"seat {seat} is not a seat at this table")
    return seat


def check_entropy(entropy: str) -> None:
    """Entropy is hex, and short."""
    if len(entropy) > MAX_ENTROPY_HEX:
        raise RuleViolation("malformed", f"entropy is at most {MAX_ENTROPY_HEX} hex digits")
    try:
        bytes.fromhex(entropy)
    except ValueError:
        raise RuleViolation("malformed", f"entropy {entropy!r} is not hex") from None


# --------------------------------------------------------------------------- decide


def create_game(command: CreateGame) -> GameCreated:
    rules = resolve_rules(command.rules)
    units = len(table_for(rules).units)
    if command.dealer is not None and not 0 <= command.dealer < rules.players:
        raise RuleViolation("malformed", f"dealer {command.dealer} is not a seat")
    for name in ("scores", "bags"):
        given = getattr(command, name)
        if given is not None and len(given) != units:
            raise RuleViolation("malformed", f"{name} needs one value per unit ({units})")
    if command.bags is not None and any(count < 0 for count in command.bags):
        raise RuleViolation("malformed", "bags cannot be negative")
    if not command.game_id or len(command.game_id) > MAX_GAME_ID:
        raise RuleViolation("malformed", f"a game id is 1 to {MAX_GAME_ID} characters")
    if command.league is not None and not 1 <= len(command.league) <= MAX_NAME:
        raise RuleViolation("malformed", f"a league name is 1 to {MAX_NAME} characters")
    check_entropy(command.entropy)
    _check_access(command)
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
    )


def _check_access(command: CreateGame) -> None:
    """Who the game belongs to, who may read it and who may sit (:mod:`domain.platforms`)."""
    if command.platform is not None and not 1 <= len(command.platform) <= MAX_NAME:
        raise RuleViolation("malformed", f"a platform's name is 1 to {MAX_NAME} characters")
    if command.visibility not in get_args(Visibility):
        raise RuleViolation("malformed", f"visibility {command.visibility!r} is not public/private")
    if command.seating not in get_args(Seating):
        raise RuleViolation("malformed", f"seating {command.seating!r} is not platform/open")


def take_seat(state: Game, command: TakeSeat) -> list[AnyEvent]:
    if not command.player or len(command.player) > MAX_NAME or not command.player.isprintable():
        raise RuleViolation("malformed", f"a player's name is 1 to {MAX_NAME} printable characters")
    check_entropy(command.entropy)
    free = [seat for seat, player in enumerate(state.players) if player is None]
    if command.seat is None:
        if not free:
            raise RuleViolation("seat_taken", "every seat is taken")
        seat = free[0]
    else:
        seat = seat_of(state, command.seat)
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
    if not name or len(name) > MAX_NAME or not name.isprintable():
        raise RuleViolation("malformed", f"a player's name is 1 to {MAX_NAME} printable characters")
    return [SeatTokenReissued(seat, player.issue + 1, name)]


# --------------------------------------------------------------------------- evolve


def game_created(event: GameCreated) -> Game:
    """The first state of a game (version 1)."""
    rules = event.rules
    units = len(table_for(rules).units)
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
