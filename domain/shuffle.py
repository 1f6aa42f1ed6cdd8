"""Provably fair dealing: a deck order from a secret seed and the players' entropy.

The engine draws a fresh secret ``seed`` for every hand (the domain never draws randomness; the
seed is an input), publishes ``commitment(seed) = sha256(seed)`` with the deal and reveals the
seed when the hand is scored. Anyone holding the record can then recompute the deck:

1. ``mix = sha256(b"spades/deal/v1" || u32(hand) || for each entropy e: u32(len(e)) || e)``,
   where the entropies are the game's and then each seat's, in seat order, as bytes.
2. A byte stream: ``HMAC-SHA256(key=seed, msg=mix || u64(k))`` for ``k = 0, 1, 2, ...``,
   read as big-endian 32-bit words.
3. Fisher-Yates over the pack in canonical order (clubs, diamonds, hearts, spades, each 2 up to
   A, then BJ, LJ; removed cards left out; with two decks, each card twice in a row): for
   ``i`` from ``n-1`` down to ``1``, draw words until one is below ``2**32 - 2**32 % (i+1)``
   (rejection sampling, so no index is favoured) and swap position ``i`` with position
   ``word % (i+1)``.

The resulting deck is read top card first and dealt one card at a time from the left of the
dealer, then the dealer takes its ``dealer_discard`` cards (:func:`deal_out`); in the
two-player draw it is the draw pile.

    >>> from domain.cards import Card
    >>> pack = tuple(Card(r + s) for s in "CDHS" for r in "23456789TJQKA")
    >>> deck = shuffle(b"seed", [b"table"], 1, pack)
    >>> sorted(deck) == sorted(pack) and deck != pack
    True
    >>> commitment(b"seed") == hashlib.sha256(b"seed").hexdigest()
    True
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

import msgspec

from domain.cards import Card, rank_value

_LABEL = b"spades/deal/v1"
_WORD = 1 << 32
_LIMITS = tuple(_WORD - _WORD % bound if bound else 0 for bound in range(256))
"""Per bound, the first word that is rejected (the deck has at most 108 cards)."""


def commitment(seed: bytes) -> str:
    """The public commitment to a hand's seed: ``sha256(seed)`` in hex."""
    return hashlib.sha256(seed).hexdigest()


def table_entropies(game: str, seats: Sequence[str | None]) -> list[str]:
    """What every hand's shuffle mixes in (step 1), in hex: the game's entropy, then each
    seat's in seat order (empty for a seat no one took). The one place that order is made."""
    return [game, *(seat if seat is not None else "" for seat in seats)]


def entropy_bytes(entropies: Sequence[str]) -> list[bytes]:
    """Hex entropies as the shuffle takes them; raises ``ValueError`` when one is not hex."""
    return [bytes.fromhex(entropy) for entropy in entropies]


def entropy_mix(hand: int, entropies: Sequence[bytes]) -> bytes:
    """Step 1: the players' contribution to a hand's shuffle, bound to the hand number."""
    parts = [_LABEL, struct.pack(">I", hand)]
    for entropy in entropies:
        parts.append(struct.pack(">I", len(entropy)))
        parts.append(entropy)
    return hashlib.sha256(b"".join(parts)).digest()


_INNER_PAD = bytes(byte ^ 0x36 for byte in range(256))
_OUTER_PAD = bytes(byte ^ 0x5C for byte in range(256))


_BLOCKS = tuple(struct.pack(">Q", block) for block in range(32))
"""``u64(k)`` of the first stream blocks (a deck of 108 cards takes 14, rejections aside)."""


class _Stream:
    """Step 2's stream for one seed and mix: HMAC-SHA256 (RFC 2104) keyed once, its inner hash
    fed the mix once, and both hash states copied per block, which is what makes a deal's few
    blocks cheap. A block equals ``hmac.digest(seed, mix + u64(k), "sha256")``."""

    def __init__(self, key: bytes, mix: bytes) -> None:
        if len(key) > 64:
            key = hashlib.sha256(key).digest()
        padded = key.ljust(64, b"\0")
        self._inner = hashlib.sha256(padded.translate(_INNER_PAD))
        self._inner.update(mix)
        self._outer = hashlib.sha256(padded.translate(_OUTER_PAD))

    def words(self, first: int, blocks: int) -> tuple[int, ...]:
        """The 32-bit words of stream blocks ``first`` to ``first + blocks - 1``."""
        digests = []
        for block in range(first, first + blocks):
            inner = self._inner.copy()
            inner.update(_BLOCKS[block] if block < len(_BLOCKS) else struct.pack(">Q", block))
            outer = self._outer.copy()
            outer.update(inner.digest())
            digests.append(outer.digest())
        return struct.unpack(f">{8 * blocks}I", b"".join(digests))


def shuffle(
    seed: bytes, entropies: Sequence[bytes], hand: int, pack: Sequence[Card]
) -> tuple[Card, ...]:
    """The deck, top card first, for this seed, entropy and hand (steps 1 to 3 above)."""
    deck = list(pack)
    stream = _Stream(seed, entropy_mix(hand, entropies))
    blocks = len(deck) // 8 + 1  # a word for every swap, and a few to spare
    words = stream.words(0, blocks)
    limits = _LIMITS
    last = len(deck) - 1
    for i, word in zip(range(last, 0, -1), words, strict=False):  # words to spare
        bound = i + 1
        if word >= limits[bound]:  # rejected (rarely): on word by word from this swap
            _swaps_from(deck, i, last - i, words, stream, blocks)
            break
        j = word % bound
        deck[i], deck[j] = deck[j], deck[i]
    return tuple(deck)


def _swaps_from(
    deck: list[Card], top: int, used: int, words: tuple[int, ...], stream: _Stream, blocks: int
) -> None:
    """Step 3 from the swap of position ``top``, the stream's first ``used`` words spent:
    each word rejected draws the next, taking more blocks whenever the words run out (also
    for a swap's first word, once rejections have spent the words to spare)."""
    limits = _LIMITS
    for i in range(top, 0, -1):
        bound = i + 1
        while True:
            if used == len(words):
                words += stream.words(blocks, 1)
                blocks += 1
            word = words[used]
            used += 1
            if word < limits[bound]:  # a rejected word would favour the low indexes
                break
        j = word % bound
        deck[i], deck[j] = deck[j], deck[i]


def deal_out(
    deck: Sequence[Card], players: int, dealer: int, hand_size: int, dealer_takes: int = 0
) -> tuple[tuple[Card, ...], ...]:
    """Deal ``hand_size`` cards to each seat, one at a time from the left of the dealer; then
    the dealer takes the next ``dealer_takes`` (``dealer_discard``).

    The cards past those stay undealt (``out_of_play``).
    """
    dealt = players * hand_size
    hands: list[tuple[Card, ...]] = [()] * players
    for round_position in range(players):
        hands[(dealer + 1 + round_position) % players] = tuple(deck[round_position:dealt:players])
    if dealer_takes:
        hands[dealer] += tuple(deck[dealt : dealt + dealer_takes])
    return tuple(hands)


def cut_for_dealer(deck: Sequence[Card], players: int) -> int:
    """Cutting for the deal (seed 000): seat ``i`` cuts ``deck[i]``; the highest card deals.

    Jokers are highest, then ace down to two; equal ranks go by suit, spades, hearts, diamonds,
    clubs. With two decks two seats may cut the same card: the first of them deals.
    """

    def height(card: Card) -> tuple[int, int]:
        return (rank_value(card), card.ordinal // 13 if not card.is_joker else 4)

    cuts = [height(deck[seat]) for seat in range(players)]
    return max(range(players), key=lambda seat: cuts[seat])


class SeededDeal(msgspec.Struct, frozen=True, tag="seeded"):
    """Shuffle with a secret seed (the live engine draws a fresh one for every hand)."""

    seed: bytes


class StackedDeck(msgspec.Struct, frozen=True, tag="stacked"):
    """A deck in a known order, top card first (a scenario's ``deck``)."""

    deck: tuple[Card, ...]


class DealtHands(msgspec.Struct, frozen=True, tag="dealt"):
    """The hands themselves, one per seat (a scenario's ``hands``, a recorded deal)."""

    hands: tuple[tuple[Card, ...], ...]


DealSource = SeededDeal | StackedDeck | DealtHands
"""Where the next hand's cards come from."""
