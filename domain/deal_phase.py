"""A hand's deal: from a source of cards to :class:`~domain.events.HandDealt`, and the hand it
starts.

The cards come from a :data:`~domain.shuffle.DealSource`: a secret seed (the live engine's
provably fair shuffle, :mod:`domain.shuffle`), a stacked deck, or the hands themselves (a
scenario, a recorded deal). Given decks and hands are checked against the pack here.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from domain.boards import BoardSeeds, board_deal
from domain.cards import Card
from domain.commands import DealHand
from domain.errors import RuleViolation
from domain.events import AnyEvent, HandDealt
from domain.rules import Rules
from domain.shuffle import (
    DealSource,
    DealtHands,
    SeededDeal,
    StackedDeck,
    commitment,
    cut_for_dealer,
    deal_out,
    entropy_bytes,
    shuffle,
    table_entropies,
)
from domain.state import Game, Hand, Phase, pack_hands
from domain.table import Seat, Table
from domain.tricks import start_play

# --------------------------------------------------------------------------- decide


def decide_deal(state: Game, command: DealHand) -> list[AnyEvent]:
    if state.status != "playing" or state.hand is not None:
        raise RuleViolation("wrong_phase", "a hand is not due to be dealt")
    return [deal_hand(state, command.source)]


def deal_hand(state: Game, source: DealSource) -> HandDealt:
    """Deal the next hand from ``source``."""
    rules = state.rules
    table = rules.table
    number = state.hands_played + 1
    if state.duplicate is not None and isinstance(source, SeededDeal):
        return _board(state, source, number)
    dealer = (state.hands_played + (state.first_dealer or 0)) % rules.players
    seed_hex: str | None = None
    promise: str | None = None
    deck: tuple[Card, ...] | None = None
    if isinstance(source, SeededDeal):
        deck = shuffle(source.seed, entropy_bytes(entropies_of(state)), number, table.pack)
        seed_hex, promise = source.seed.hex(), commitment(source.seed)
        if state.first_dealer is None:
            dealer = (cut_for_dealer(deck, rules.players) + state.hands_played) % rules.players
    elif isinstance(source, StackedDeck):
        deck = check_deck(table, source.deck)
    if isinstance(source, DealtHands):
        hands = source.hands
    elif rules.deal == "draw":
        hands = tuple(() for _ in range(rules.players))
    else:
        assert deck is not None
        hands = deal_out(deck, rules.players, dealer, table.hand_size, rules.dealer_discard)
    if isinstance(source, DealtHands):
        hands = check_hands(table, source.hands, dealer)
    return HandDealt(number, dealer, promise, hands, deck, seed_hex)


def _board(state: Game, source: SeededDeal, number: int) -> HandDealt:
    """Hand ``number`` of a duplicate table: its board, dealt from the board's seed as at every
    other table (the event's entropies, none: the seeds were committed to before the event)."""
    assert state.duplicate is not None
    board = state.duplicate.first + number - 1
    seed = source.of(board) if isinstance(source, BoardSeeds) else source.seed
    return replace(board_deal(state.rules, seed, board), hand=number)


def entropies_of(state: Game) -> list[str]:
    """The entropies a hand of this game is shuffled with, in hex (see
    :func:`domain.shuffle.table_entropies`)."""
    seats = [player.entropy if player is not None else None for player in state.players]
    return table_entropies(state.entropy, seats)


def check_deck(table: Table, deck: Sequence[Card]) -> tuple[Card, ...]:
    """A deck must hold every card of the pack as often as the pack does."""
    if sorted(card.ordinal for card in deck) != [card.ordinal for card in table.pack]:
        raise RuleViolation(
            "malformed", "a deck must hold every card of the pack, as often as the pack does"
        )
    return tuple(deck)


def check_hands(
    table: Table, hands: Sequence[Sequence[Card]], dealer: Seat
) -> tuple[tuple[Card, ...], ...]:
    """Hands must be one per seat, of the hand size (the dealer's with its ``dealer_discard``
    cards besides), every card of the pack at most as often as the pack holds it."""
    if len(hands) != table.players:
        raise RuleViolation("malformed", f"a deal needs {table.players} hands")
    copies = table.copies
    dealt = [0] * len(copies)
    for seat, hand in enumerate(hands):
        size = table.hand_size + (table.rules.dealer_discard if seat == dealer else 0)
        if len(hand) != size:
            raise RuleViolation("malformed", f"hand {seat} holds {len(hand)} cards, not {size}")
        for card in hand:
            if not copies[card.ordinal]:
                raise RuleViolation("malformed", f"{card} is not in this pack")
            dealt[card.ordinal] += 1
            if dealt[card.ordinal] > copies[card.ordinal]:
                raise RuleViolation(
                    "malformed", f"{card} is dealt more often than the pack holds it"
                )
    return tuple(tuple(hand) for hand in hands)


# --------------------------------------------------------------------------- evolve


def hand_dealt(state: Game, event: HandDealt) -> Game:
    """A new hand. It opens with the two-player draw, the dealer's discard, or the bidding left
    of the dealer; the game's first hand under ``first_hand: no_bid`` goes straight to the
    opening lead once the draw or the discard is over."""
    rules = state.rules
    players = rules.players
    first_dealer = state.first_dealer
    if first_dealer is None:
        first_dealer = (event.dealer - state.hands_played) % players
    draw = rules.deal == "draw" and not any(event.hands)
    holdings, twice = pack_hands(event.hands)
    # A draw deal whose hands are given is the draw's result: every seat has seen its cards.
    looked = (1 << players) - 1 if rules.deal == "draw" and not draw else 0
    phase: Phase = "bid"
    turn = (event.dealer + 1) % players
    if draw:
        phase = "draw"
    elif rules.dealer_discard:
        phase, turn = "discard", event.dealer
    hand = Hand(
        number=event.hand,
        dealer=event.dealer,
        phase=phase,
        turn=turn,
        holdings=holdings,
        twice=twice,
        looked=looked,
        bids=(None,) * players,
        won=(0,) * players,
        pile=(event.deck or ()) if draw else (),
        commitment=event.commitment,
        seed=event.seed,
    )
    if phase == "bid" and not is_bidding_hand(rules, event.hand):
        hand = start_play(rules, hand)  # no bidding, no draw, no discard: the lead at once
    return replace(state, hand=hand, first_dealer=first_dealer, status="playing")


def after_pickup(rules: Rules, hand: Hand) -> Hand:
    """Once every seat holds its hand: the dealer's discard if one is due, else the bidding
    (:func:`open_bidding`)."""
    if rules.dealer_discard:
        return replace(hand, phase="discard", turn=hand.dealer)
    return open_bidding(rules, hand)


def open_bidding(rules: Rules, hand: Hand) -> Hand:
    """The bidding left of the dealer, or the opening lead in a hand without bidding."""
    if is_bidding_hand(rules, hand.number):
        return replace(hand, phase="bid", turn=(hand.dealer + 1) % rules.players)
    return start_play(rules, hand)


def is_bidding_hand(rules: Rules, number: int) -> bool:
    """Whether hand ``number`` of the game is bid (``first_hand: no_bid`` skips the first)."""
    return number > 1 or rules.first_hand == "bid"
