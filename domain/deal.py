"""A hand's deal: from a source of cards to :class:`~domain.events.HandDealt`, and the hand it
starts.

The cards come from a :data:`~domain.dealing.DealSource`: a secret seed (the live engine's
provably fair shuffle, :mod:`domain.dealing`), a stacked deck, or the hands themselves (a
scenario, a recorded deal). Given decks and hands are checked against the pack here.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from domain.cards import Card, set_of
from domain.commands import DealHand
from domain.dealing import (
    DealSource,
    DealtHands,
    SeededDeal,
    StackedDeck,
    commitment,
    cut_for_dealer,
    deal_out,
    shuffle,
)
from domain.errors import RuleViolation
from domain.events import AnyEvent, HandDealt
from domain.state import Game, Hand, holdings_of
from domain.table import Table, table_for

# --------------------------------------------------------------------------- decide


def decide_deal(state: Game, command: DealHand) -> list[AnyEvent]:
    if state.status != "playing" or state.hand is not None:
        raise RuleViolation("wrong_phase", "a hand is not due to be dealt")
    return [deal_hand(state, command.source)]


def deal_hand(state: Game, source: DealSource) -> HandDealt:
    """Deal the next hand from ``source``."""
    rules = state.rules
    table = table_for(rules)
    number = state.hands_played + 1
    dealer = (state.hands_played + (state.first_dealer or 0)) % rules.players
    seed_hex: str | None = None
    promise: str | None = None
    deck: tuple[Card, ...] | None = None
    if isinstance(source, SeededDeal):
        deck = shuffle(source.seed, _entropies(state), number, table.pack)
        seed_hex, promise = source.seed.hex(), commitment(source.seed)
        if state.first_dealer is None:
            dealer = (cut_for_dealer(deck, rules.players) + state.hands_played) % rules.players
    elif isinstance(source, StackedDeck):
        deck = check_deck(table, source.deck)
    if isinstance(source, DealtHands):
        hands = check_hands(table, source.hands)
    elif rules.deal == "draw":
        hands = tuple(() for _ in range(rules.players))
    else:
        assert deck is not None
        hands = deal_out(deck, rules.players, dealer, table.hand_size)
    return HandDealt(number, dealer, promise, hands, deck, seed_hex)


def _entropies(state: Game) -> list[bytes]:
    return [bytes.fromhex(state.entropy)] + [
        bytes.fromhex(player.entropy) if player else b"" for player in state.players
    ]


def check_deck(table: Table, deck: Sequence[Card]) -> tuple[Card, ...]:
    """A deck must hold every card of the pack exactly once."""
    if sorted(card.ordinal for card in deck) != [card.ordinal for card in table.pack]:
        raise RuleViolation("malformed", "a deck must hold every card of the pack exactly once")
    return tuple(deck)


def check_hands(table: Table, hands: Sequence[Sequence[Card]]) -> tuple[tuple[Card, ...], ...]:
    """Hands must be one per seat, of the hand size, every card of the pack at most once."""
    if len(hands) != table.players:
        raise RuleViolation("malformed", f"a deal needs {table.players} hands")
    seen = 0
    for seat, hand in enumerate(hands):
        if len(hand) != table.hand_size:
            raise RuleViolation(
                "malformed", f"hand {seat} holds {len(hand)} cards, not {table.hand_size}"
            )
        for card in hand:
            if not card.bit & table.pack_mask:
                raise RuleViolation("malformed", f"{card} is not in this pack")
            if seen & card.bit:
                raise RuleViolation("malformed", f"{card} is dealt twice")
            seen |= card.bit
    return tuple(tuple(hand) for hand in hands)


# --------------------------------------------------------------------------- evolve


def hand_dealt(state: Game, event: HandDealt) -> Game:
    """A new hand: the two-player draw, or the bidding from the left of the dealer."""
    rules = state.rules
    players = rules.players
    first_dealer = state.first_dealer
    if first_dealer is None:
        first_dealer = (event.dealer - state.hands_played) % players
    draw = rules.deal == "draw" and not any(event.hands)
    hand = Hand(
        number=event.hand,
        dealer=event.dealer,
        phase="draw" if draw else "bid",
        turn=(event.dealer + 1) % players,
        holdings=holdings_of([set_of(cards) for cards in event.hands]),
        looked=0,
        bids=(None,) * players,
        won=(0,) * players,
        pile=(event.deck or ()) if draw else (),
        commitment=event.commitment,
        seed=event.seed,
    )
    return replace(state, hand=hand, first_dealer=first_dealer, status="playing")
