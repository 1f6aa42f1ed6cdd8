"""The table drawn in a terminal: seats, bids, the trick, scores and a seat's hand (rich)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from domain.cards import Card
from services.client import PublicState, SeatView

SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
SUIT_ORDER = "SHDC"
"""Spades first: the trump suit leads the hand as a player sorts it."""
RED_SUITS = {"H", "D"}
RANK_ORDER = "AKQJT98765432"
PHASE_NAMES = {
    "draw": "drawing",
    "discard": "the dealer discards",
    "bid": "bidding",
    "pass": "passing",
    "play": "playing",
}


def card_text(card: Card | str) -> Text:
    """A card as a player reads it: ``Q♥`` (red for hearts and diamonds), ``10♠``, ``BJ``."""
    card = Card.parse(card) if not isinstance(card, Card) else card
    if card.is_joker:
        return Text("Big joker" if card is Card.BIG_JOKER else "Little joker", style="bold")
    rank = "10" if card.rank == "T" else card.rank
    style = "red" if card.suit in RED_SUITS else ""
    return Text(f"{rank}{SUIT_SYMBOLS[card.suit]}", style=style)


def cards_text(cards: Iterable[Card | str]) -> Text:
    return Text(" ").join(card_text(card) for card in cards)


def _rank_key(card: Card) -> int:
    if card.is_joker:
        return -2 if card is Card.BIG_JOKER else -1
    return RANK_ORDER.index(card.rank)


def hand_by_suit(cards: Iterable[Card]) -> Table:
    """A hand sorted the way a player holds it: one line per suit, high cards first; jokers
    head the spades, being trumps."""
    grid = Table.grid(padding=(0, 1))
    held = list(cards)
    for suit in SUIT_ORDER:
        in_suit = sorted(
            (c for c in held if c.suit == suit or (suit == "S" and c.is_joker)), key=_rank_key
        )
        label = Text(SUIT_SYMBOLS[suit], style="red" if suit in RED_SUITS else "")
        grid.add_row(label, cards_text(in_suit) if in_suit else Text("—", style="dim"))
    return grid


def seat_name(state: PublicState, seat: int | None) -> str:
    if seat is None:
        return "nobody"
    player = state.player(seat)
    return f"seat {seat} ({player})" if player else f"seat {seat}"


def _bid_text(bid: Any) -> str:
    """``3``, ``nil``, ``blind nil``, ``blind 6``; nothing before a bid (or without bidding)."""
    if bid is None:
        return ""
    return str(bid).replace("_", " ")


def _headline(state: PublicState) -> Text:
    if state.status == "waiting":
        taken = sum(1 for seat in state.seats if seat.player)
        return Text(f"Game {state.game_id}: waiting for players ({taken}/{len(state.seats)})")
    if state.status == "finished":
        winners = " and ".join(_unit_name(state, unit) for unit in state.winners)
        return Text(f"Game {state.game_id}: over, won by {winners}", style="bold")
    phase = PHASE_NAMES.get(state.phase or "", state.phase or "")
    return Text(
        f"Game {state.game_id} · hand {state.hand_number} · {phase} · "
        f"dealer {seat_name(state, state.dealer)} · turn: {seat_name(state, state.turn)}"
    )


def _unit_name(state: PublicState, unit: int) -> str:
    seats = state.units[unit] if 0 <= unit < len(state.units) else []
    names = [state.player(seat) or f"seat {seat}" for seat in seats]
    return " & ".join(names)


def _seats(state: PublicState, you: int | None) -> Table:
    table = Table(title=None, expand=False)
    for column in ("seat", "player", "bid", "tricks", ""):
        table.add_column(column)
    for info in state.seats:
        marks = []
        if info.seat == state.dealer:
            marks.append("dealer")
        if info.seat == state.turn and state.status == "playing":
            marks.append("to act")
        if info.seat in state.passes_due:
            marks.append("owes a pass")
        if info.seat == you:
            marks.append("you")
        table.add_row(
            str(info.seat),
            info.player or "—",
            _bid_text(state.bids[info.seat]) if info.seat < len(state.bids) else "",
            str(state.tricks[info.seat]) if info.seat < len(state.tricks) else "",
            ", ".join(marks),
        )
    return table


def _scores(state: PublicState) -> Table:
    table = Table(expand=False)
    for column in ("unit", "score", "bags"):
        table.add_column(column)
    for unit in range(len(state.units)):
        table.add_row(_unit_name(state, unit), str(state.scores[unit]), str(state.bags[unit]))
    return table


def _trick(state: PublicState) -> Text:
    if not state.current_trick:
        spades = "spades broken" if state.spades_broken else "spades not broken"
        return Text(f"Trick: (empty) · {spades}")
    played = Text(", ").join(
        Text.assemble(f"{seat_name(state, trick.seat)} ", card_text(trick.card))
        for trick in state.current_trick
    )
    return Text.assemble("Trick: ", played)


def render_table(state: PublicState) -> RenderableType:
    """The table: headline, seats with bids and tricks, the trick, scores; and for a seat's
    view its hand (or a note that it has not looked) and the card it sees in the draw."""
    you = state.seat if isinstance(state, SeatView) else None
    parts: list[RenderableType] = [_headline(state), _seats(state, you), _scores(state)]
    if state.status == "playing":
        parts.append(_trick(state))
        if state.discards:
            parts.append(Text.assemble("Discarded: ", cards_text(state.discards)))
    if isinstance(state, SeatView) and state.status == "playing":
        if state.hand is None:
            parts.append(Text("Your cards are face down: you have not looked at them."))
        else:
            parts.append(Text("Your hand:", style="bold"))
            parts.append(hand_by_suit(state.hand))
        if state.drawn_card is not None:
            parts.append(Text.assemble("You drew: ", card_text(state.drawn_card)))
    return Group(*parts)


def describe_action(action: Mapping[str, Any]) -> str:
    """An entry of ``legal`` in words: ``bid 3``, ``play Q♥``, ``pass 2 cards``."""
    kind = action.get("type")
    if kind == "bid":
        return f"bid {_bid_text(action.get('bid'))}"
    if kind == "play":
        return f"play {card_text(str(action.get('card'))).plain}"
    if kind == "pass":
        count = action.get("count", len(action.get("cards") or []))
        return f"pass {count} cards to your partner"
    if kind == "discard":
        count = action.get("count", len(action.get("cards") or []))
        return f"discard {count} cards face down"
    if kind == "draw":
        return "keep the card" if action.get("keep") else "discard the card"
    if kind == "look":
        return "look at your cards"
    return str(dict(action))


def narrate(event: Mapping[str, Any], state: PublicState) -> str:
    """One event as a line of the game's story: ``seat 2 (cat) bid 4``."""
    kind = event.get("type")
    who = seat_name(state, event["seat"]) if isinstance(event.get("seat"), int) else ""
    card = event.get("card")
    if kind == "game_created":
        return "The game is created."
    if kind == "seat_taken":
        return f"{event.get('player')} sits at seat {event.get('seat')}."
    if kind == "seat_token_reissued":
        return f"{event.get('player')} now sits at seat {event.get('seat')} (a new token)."
    if kind == "hand_dealt":
        return f"Hand {event.get('hand')} is dealt by {seat_name(state, event.get('dealer'))}."
    if kind == "card_drawn":
        if event.get("kept"):
            return f"{who} keeps a card."
        return f"{who} discards {card_text(str(card)).plain}." if card else f"{who} discards."
    if kind == "hand_looked":
        return f"{who} looks at the cards."
    if kind == "bid_placed":
        return f"{who} bids {_bid_text(event.get('bid'))}."
    if kind == "cards_passed":
        return f"{who} passes cards to {seat_name(state, event.get('to'))}."
    if kind == "cards_discarded":
        cards = event.get("cards")
        what = cards_text(cards).plain if cards else f"{state.rules.dealer_discard} cards"
        return f"{who} discards {what} face down."
    if kind == "cards_received":
        return f"{who} receives the passed cards."
    if kind == "card_played":
        return f"{who} plays {card_text(str(card)).plain}."
    if kind == "trick_won":
        return f"{who} wins the trick."
    if kind == "hand_scored":
        return f"Hand {event.get('hand')} is scored: points {event.get('points')}."
    if kind == "game_ended":
        winners = " and ".join(_unit_name(state, unit) for unit in event.get("winners") or [])
        if event.get("forfeited") is not None:
            loser = _unit_name(state, event["forfeited"])
            return f"The game is over: {loser} ran out of time, {winners} won."
        return f"The game is over: {winners} won."
    if kind == "timed_out":
        return f"{who} ran out of time: the service moves for it."
    if kind == "seat_away":
        return f"{who} is away: the service moves for it at once."
    if kind == "seat_returned":
        return f"{who} is back."
    return f"{kind}"
