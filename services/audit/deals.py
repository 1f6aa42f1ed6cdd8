"""Checking one deal against the seed revealed when its hand was scored.

The deal published ``commitment = sha256(seed)`` before anyone bid; the score revealed the seed.
Anyone can then check the promise: the seed hashes to the commitment, and the seed with the
game's and the seats' entropy derives the deck that was dealt (``domain/shuffle.py``). A wrong
hash is found at the reveal (the revealed seed is the lie); a deck the seed does not derive is
found at the deal (the deal is the lie). Findings name no card.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.events import HandDealt
from domain.rules import Rules
from domain.shuffle import commitment, deal_out, shuffle
from domain.table import table_for
from services.audit.history import Problem

COMMITMENT_RULE = "commitment = sha256(seed), published with the deal"
SHUFFLE_RULE = "deck = shuffle(seed, [game entropy, seat entropies...], hand, pack)"
DEAL_OUT_RULE = (
    "the deck is dealt one card at a time from the left of the dealer; the dealer takes "
    "dealer_discard more"
)


def seed_bytes(text: str | None) -> bytes | None:
    """A seed as recorded (hex), or None when there is none or it is not hex."""
    if text is None:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


def deal_findings(
    rules: Rules,
    entropies: Sequence[bytes] | None,
    dealt: HandDealt,
    dealt_at: int,
    revealed: str | None,
    revealed_at: int,
    *,
    board: int | None = None,
) -> list[Problem]:
    """What is wrong with one scored hand's deal; empty when the revealed seed keeps the promise.

    ``entropies`` are the game's and then each seat's, as bytes; None when they are unknown
    (a hand record from elsewhere), in which case only the hash can be checked. ``board``: the
    board a duplicate event's table dealt as this hand, shuffled as the board's number with the
    event's entropies (none: :mod:`domain.boards`), not the hand's.
    """
    hand = dealt.hand
    if dealt.commitment is None:
        detail = f"hand {hand}'s deal published no commitment: nobody can check it was fair"
        return [Problem(dealt_at, "deal", detail, COMMITMENT_RULE)]
    if revealed is None:
        detail = f"hand {hand} was scored without revealing the seed of its deal"
        return [Problem(revealed_at, "deal", detail, COMMITMENT_RULE)]
    seed = seed_bytes(revealed)
    if seed is None:
        detail = f"the seed revealed for hand {hand} is not hex"
        return [Problem(revealed_at, "deal", detail, COMMITMENT_RULE)]
    if commitment(seed) != dealt.commitment:
        detail = (
            f"the seed revealed for hand {hand} hashes to {commitment(seed)[:16]}..., not to "
            f"the commitment {dealt.commitment[:16]}... published with the deal at version "
            f"{dealt_at}"
        )
        return [Problem(revealed_at, "deal", detail, COMMITMENT_RULE)]
    if entropies is None:
        return []
    if board is not None:
        return _deck_findings(rules, (), dealt, dealt_at, seed, board)
    return _deck_findings(rules, entropies, dealt, dealt_at, seed, dealt.hand)


def _deck_findings(
    rules: Rules,
    entropies: Sequence[bytes],
    dealt: HandDealt,
    dealt_at: int,
    seed: bytes,
    number: int,
) -> list[Problem]:
    table = table_for(rules)
    derived = shuffle(seed, entropies, number, table.pack)
    if dealt.deck is not None and tuple(dealt.deck) != derived:
        detail = f"the deck of hand {dealt.hand} is not the deck its revealed seed derives"
        return [Problem(dealt_at, "deal", detail, SHUFFLE_RULE)]
    if any(dealt.hands):
        expected = deal_out(
            derived, rules.players, dealt.dealer, table.hand_size, rules.dealer_discard
        )
        given = [*dealt.hands, *[()] * rules.players][: rules.players]
        wrong = [seat for seat in range(rules.players) if tuple(given[seat]) != expected[seat]]
        if wrong:
            seats = ", ".join(str(seat) for seat in wrong)
            detail = (
                f"hand {dealt.hand}: seat(s) {seats} were not dealt the cards the seed's deck gives"
            )
            return [Problem(dealt_at, "deal", detail, DEAL_OUT_RULE)]
    return []
