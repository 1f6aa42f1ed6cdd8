"""What a seat knows when it must act: its seat view read once, plus what it remembers.

Cards are handled as the engine handles them, as card indexes and bit sets of them
(:mod:`domain.cards`), ranked by the table of the view's own rules (:func:`domain.table.table_for`):
which cards are trumps (jokers, the 2♦ under ``jokers_deuces``) and how each ranks in its suit.
With two decks a set says which cards a seat holds, not how many copies; what is unseen is
counted copy by copy, and a copy of a card counts among the cards that can beat it (of two
identical cards the later played wins).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, Literal

import msgspec

from domain.bids import Bid, is_nil, tricks_bid
from domain.cards import CARDS, Card
from domain.rules import Rules, resolve_rules
from domain.table import TRUMP, Table, table_for
from services.bots.memory import HandMemory

Goal = Literal["win", "duck"]


def mask_of(cards: Any) -> int:
    """The bit set of some cards written as text."""
    mask = 0
    for text in cards:
        mask |= Card.parse(text).bit
    return mask


class Situation(msgspec.Struct, frozen=True, kw_only=True):
    """One seat's knowledge of the table at one moment. Build it with :func:`read_situation`."""

    rules: Rules
    table: Table
    seat: int
    phase: str | None
    turn: int | None
    hand_number: int
    dealer: int | None
    hand: int
    """The seat's cards (a bit set); 0 before it has looked."""
    looked: bool
    bids: tuple[Bid | None, ...]
    tricks: tuple[int, ...]
    """Tricks won so far this hand, per seat."""
    trick: tuple[tuple[int, int], ...]
    """The trick on the table: (seat, card index) in play order."""
    scores: tuple[int, ...]
    bags: tuple[int, ...]
    legal: tuple[dict[str, Any], ...]
    drawn: int | None
    """The card on top of the draw pile, when this seat is drawing."""
    gone: int
    """Cards every copy of which was seen to leave play: earlier tricks this hand, the draw's
    face-up discards, the seat's own discard as dealer."""
    unseen: int
    """Cards a copy of which this seat cannot place: in other hands, or out of play unseen."""
    voids: tuple[int, ...]
    """Per seat, the bit set of suits it has shown out of this hand."""

    # ------------------------------------------------------------------ seats and units

    @property
    def players(self) -> int:
        return self.table.players

    @property
    def partner(self) -> int | None:
        return self.table.partner_of(self.seat)

    @property
    def unit(self) -> int:
        return self.table.unit_of[self.seat]

    def opponents(self) -> list[int]:
        """The seats of every other unit."""
        mine = self.unit
        return [s for s in range(self.players) if self.table.unit_of[s] != mine]

    def later(self) -> list[int]:
        """The seats still to play to the trick after this one."""
        count = self.players - len(self.trick) - 1
        return [(self.seat + k) % self.players for k in range(1, count + 1)]

    # ------------------------------------------------------------------ contracts

    def live_nil(self, seat: int) -> bool:
        """Whether ``seat`` bid nil (or blind nil) and has not yet taken a trick."""
        return is_nil(self.bids[seat]) and self.tricks[seat] == 0

    def need(self, unit: int) -> int:
        """Tricks the unit still needs for its contract (0 or less: made, or nothing to make)."""
        seats = self.table.units[unit]
        contract = sum(tricks_bid(self.bids[s]) for s in seats)
        counts_nil = self.rules.partnerships and self.rules.failed_nil_tricks == "partner"
        taken = sum(self.tricks[s] for s in seats if counts_nil or not is_nil(self.bids[s]))
        return contract - taken

    @property
    def remaining(self) -> int:
        """Tricks not yet won, the one on the table included."""
        return self.table.hand_size - sum(self.tricks)

    def bag_cost(self) -> float:
        """What one overtrick costs this seat's side in the long run (negative: a gain)."""
        rules = self.rules
        failed_nil = is_nil(self.bids[self.seat]) and not self.live_nil(self.seat)
        if failed_nil and (not rules.partnerships or rules.failed_nil_tricks == "none"):
            return 0.0  # a failed nil's tricks score nothing at all
        penalty = rules.bag_penalty / rules.bag_limit if rules.bag_limit else 0.0
        return penalty - rules.overtrick_points

    def goal(self) -> Goal:
        """Take tricks, or let them go: duck once the contract is made and bags cost points,
        unless another side is close enough to failing that one more trick may set it."""
        if self.need(self.unit) > 0 or self.bag_cost() <= 0:
            return "win"
        for unit in range(len(self.table.units)):
            needed = self.need(unit)
            if unit != self.unit and 0 < needed <= self.remaining <= needed + 1:
                return "win"
        return "duck"

    # ------------------------------------------------------------------ cards

    def strength(self, card: int) -> int:
        """One order over every card: trumps above the rest, then by rank."""
        return self.table.power[card] + (1000 if self.table.suit_of[card] == TRUMP else 0)

    def suit(self, card: int) -> int:
        return self.table.suit_of[card]

    def in_suit(self, mask: int, suit: int) -> int:
        return mask & self.table.suit_mask[suit]

    @property
    def on_table(self) -> int:
        mask = 0
        for _, card in self.trick:
            mask |= 1 << card
        return mask

    def higher(self, card: int, mask: int) -> int:
        """The cards of ``mask`` in ``card``'s suit that rank above it."""
        return mask & ranked_above(self.table)[card]

    def possible(self, seat: int) -> int:
        """The cards ``seat`` may hold, as far as this seat can tell."""
        if seat == self.seat:
            return self.hand
        mask = self.unseen
        for suit in range(4):
            if self.voids[seat] >> suit & 1:
                mask &= ~self.table.suit_mask[suit]
        return mask

    def may_be_void(self, seat: int, suit: int) -> bool:
        """Whether ``seat`` may have no card of ``suit``: it showed out, or too few are left for
        every seat still holding cards to have one."""
        if self.voids[seat] >> suit & 1:
            return True
        left = self.in_suit(self.possible(seat), suit).bit_count()
        if self.players == 2:
            return left == 0  # the draw's discards are face up: the other hand is known
        return left < 2

    def winning(self) -> tuple[int, int]:
        """The seat and card now winning the trick on the table (which must not be empty)."""
        seat, card = self.trick[0]
        for other_seat, other in self.trick[1:]:
            if self.table.beats(other, card):
                seat, card = other_seat, other
        return seat, card

    def holds(self, card: int, seats: list[int], led: int | None = None) -> bool:
        """Whether ``card``, winning a trick led in ``led``, stays winning whatever ``seats``
        play after it, as far as this seat can tell."""
        suit = self.suit(card)
        led = suit if led is None else led
        trumps_above = self.higher(card, self.table.suit_mask[TRUMP]) if suit == TRUMP else 0
        for seat in seats:
            possible = self.possible(seat)
            void = self.may_be_void(seat, led)
            if suit == led and self.higher(card, possible):
                return False
            if suit != TRUMP and void and self.in_suit(possible, TRUMP):
                return False
            if suit == TRUMP and suit != led and void and possible & trumps_above:
                return False
        return True


@cache
def ranked_above(table: Table) -> tuple[int, ...]:
    """Per card index, the bit set of the cards of its suit (as this table counts suits) that
    can beat it: those that rank above it, and with two decks its own other copy."""
    above = [0] * len(CARDS)
    for card in set(table.pack):
        for other in set(table.pack):
            same = table.suit_of[other.ordinal] == table.suit_of[card.ordinal]
            if same and table.power[other.ordinal] > table.power[card.ordinal]:
                above[card.ordinal] |= other.bit
        if table.copies[card.ordinal] > 1:
            above[card.ordinal] |= card.bit
    return tuple(above)


def read_situation(
    view: Mapping[str, Any], memory: HandMemory | None = None, rules: Rules | None = None
) -> Situation:
    """Read a seat view (the API's JSON) and what ``memory`` holds of the same hand.

    ``rules`` may be given when already resolved from this view's ``rules``, to skip doing it
    again on every turn.
    """
    rules = rules or resolve_rules(view["rules"])
    table = table_for(rules)
    trick = tuple((int(t["seat"]), Card.parse(t["card"]).ordinal) for t in view["current_trick"])
    seen = _ordinals(view.get("discards") or ())
    voids = [0] * table.players
    if memory is not None and memory.hand_number == view["hand_number"]:
        seen += _ordinals(memory.earlier_tricks()) + _ordinals(memory.discarded)
        for played in memory.tricks:
            _note_voids(table, played, voids)
    hand = view.get("hand")
    held = _ordinals(hand or ())
    drawn = view.get("drawn_card")
    gone, unseen = _counted(table, held, seen, [card for _, card in trick])
    return Situation(
        rules=rules,
        table=table,
        seat=int(view["seat"]),
        phase=view.get("phase"),
        turn=view.get("turn"),
        hand_number=int(view["hand_number"]),
        dealer=view.get("dealer"),
        hand=sum(1 << card for card in set(held)),
        looked=hand is not None,
        bids=tuple(view["bids"]),
        tricks=tuple(view["tricks"]),
        trick=trick,
        scores=tuple(view["scores"]),
        bags=tuple(view["bags"]),
        legal=tuple(view["legal"]),
        drawn=Card.parse(drawn).ordinal if drawn else None,
        gone=gone,
        unseen=unseen,
        voids=tuple(voids),
    )


def _ordinals(cards: Iterable[Any]) -> list[int]:
    return [card.ordinal if isinstance(card, Card) else Card.parse(card).ordinal for card in cards]


def _counted(
    table: Table, held: list[int], seen: list[int], on_table: list[int]
) -> tuple[int, int]:
    """(The cards every copy of which was seen leave play, the cards a copy of which is
    unseen), counting copies: with two decks a seat may hold one copy while the other is out."""
    copies = table.copies
    seen_count, held_count, table_count = Counter(seen), Counter(held), Counter(on_table)
    gone = unseen = 0
    for card in range(len(copies)):
        if not copies[card]:
            continue
        if seen_count[card] >= copies[card] and not table_count[card]:
            gone |= 1 << card
        if copies[card] > held_count[card] + seen_count[card] + table_count[card]:
            unseen |= 1 << card
    return gone, unseen


def _note_voids(table: Table, trick: list[tuple[int, Card]], voids: list[int]) -> None:
    """A seat that did not follow the suit led has none of it (bots never renege on purpose,
    and a renege is the reneger's loss anyway)."""
    if not trick:
        return
    led = table.suit_of[trick[0][1].ordinal]
    for seat, card in trick[1:]:
        if table.suit_of[card.ordinal] != led:
            voids[seat] |= 1 << led


def card_text(card: int) -> str:
    return CARDS[card].value
