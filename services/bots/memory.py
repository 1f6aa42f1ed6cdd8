"""What a seat remembers of the hand being played: every card played to every trick so far.

A seat view shows only the trick on the table, so a seat that wants to count cards must
remember the earlier tricks itself. :class:`HandMemory` is fed the events the API returns to the
seat (from the event stream, ``GET .../events`` or an action's answer), in the API's JSON shape
or as the domain's event structs, and forgets everything when the next hand is dealt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from domain.cards import Card

Event = Mapping[str, Any] | msgspec.Struct
"""An event as the API sends it (JSON), or as the domain's struct."""


class HandMemory:
    """The tricks of the current hand, card by card, as one seat saw them played."""

    __slots__ = ("discarded", "hand_number", "position", "tricks")

    def __init__(self) -> None:
        self.hand_number = 0
        """The hand these tricks belong to; 0 until a deal has been seen."""
        self.tricks: list[list[tuple[int, Card]]] = [[]]
        """Every trick of the hand in order, the last one still being played: (seat, card)."""
        self.position = -1
        """The stream position of the last event taken in, so a replayed event counts once."""
        self.discarded: list[Card] = []
        """The seat's own discard, as dealer (``dealer_discard``): out of play."""

    def observe(self, event: Event, position: int | None = None) -> None:
        """Take in one event the seat was sent; ``position`` is its stream position when known."""
        if position is not None:
            if position <= self.position:
                return
            self.position = position
        fields = event if isinstance(event, Mapping) else msgspec.to_builtins(event)
        kind = fields.get("type")
        if kind == "hand_dealt":
            self.hand_number = int(fields["hand"])
            self.tricks = [[]]
            self.discarded = []
        elif kind == "cards_discarded" and fields.get("cards"):
            self.discarded = [Card.parse(card) for card in fields["cards"]]
        elif kind == "card_played":
            self.tricks[-1].append((int(fields["seat"]), Card.parse(fields["card"])))
        elif kind == "trick_won":
            self.tricks.append([])

    def played(self) -> list[Card]:
        """Every card seen played this hand, the trick on the table included."""
        return [card for trick in self.tricks for _, card in trick]

    def earlier_tricks(self) -> list[Card]:
        """Every card of the hand's finished tricks."""
        return [card for trick in self.tricks[:-1] for _, card in trick]
