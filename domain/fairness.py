"""Checking a deal against its commitment: what anyone holding the record can do.

A hand's deal publishes ``commitment = sha256(seed)``; its score reveals ``seed``. The seed must
hash to the commitment, and the deck derived from it (with the game's and the seats' entropy,
:func:`domain.shuffle.shuffle`) must be the deck that was dealt.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.cards import Card
from domain.rules import Rules
from domain.shuffle import commitment, entropy_bytes, shuffle


def deal_problems(
    rules: Rules,
    entropies: Sequence[str],
    hand: int,
    promised: str | None,
    revealed: str | None,
    deck: Sequence[Card] | None,
) -> list[str]:
    """What is wrong with one hand's deal; empty when the seed keeps the promise.

    ``entropies`` are the game's and then each seat's entropy (hex), ``promised`` the
    commitment published with the deal, ``revealed`` the seed (hex) published with the score,
    ``deck`` the deck the hand was dealt from.
    """
    if promised is None:
        return ["the deal published no commitment"]
    if revealed is None:
        return ["the seed was not revealed"]
    try:
        seed = bytes.fromhex(revealed)
    except ValueError:
        return [f"the revealed seed {revealed!r} is not hex"]
    problems = []
    if commitment(seed) != promised:
        problems.append("the revealed seed does not hash to the commitment")
    if deck is not None:
        derived = shuffle(seed, entropy_bytes(entropies), hand, rules.table.pack)
        if tuple(deck) != derived:
            problems.append("the deck dealt is not the deck the seed derives")
    return problems
