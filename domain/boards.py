"""The boards of a duplicate event: dealt from seeds committed before the event, revealed after.

Board ``k`` (from 1) of an event is dealt from its own secret seed, exactly as the engine deals
a hand from a hand's seed (:mod:`domain.shuffle`): ``shuffle(seed, entropies, k, pack)``, the
entropies being the event's (the same at every table, or the tables would hold different
cards), and ``deal_out`` from the board's dealer, seat ``(k - 1) % players`` (the dealer turns
board by board, as bridge boards do).

When the event is created it publishes the Merkle root (RFC 6962 hashing: a leaf is
``SHA-256(0x00 || c)``, a node ``SHA-256(0x01 || left || right)``) over the boards'
commitments ``c_k = sha256(seed_k)``, the very commitment a table's ``HandDealt`` carries. So
no board can be changed or dealt late without the root showing it, and no one learns a board
before it is played: its seed is revealed only when every table has finished it. The audit
then checks, for every table, that its ``HandDealt.commitment`` is leaf ``k`` of the root
(:func:`board_proof`, :func:`check_commitment`), that the revealed seed opens it
(:func:`check_seed`), and that the table's hands are the board's (:func:`check_table_deal`).

The tree is a copy of the few functions of :mod:`services.transparency.merkle` a static list
needs (the domain imports nothing outside it); ``tests/unit/test_boards.py`` pins the two to
the same roots and proofs.

    >>> boards = commit([b"one", b"two", b"three"])
    >>> check_seed(b"two", 2, board_proof(boards.commitments, 2), boards.root, 3)
    >>> check_seed(b"two", 1, board_proof(boards.commitments, 1), boards.root, 3)
    Traceback (most recent call last):
    ...
    domain.boards.BoardMismatch: board 1: the seed does not open the board's commitment
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence

import msgspec

from domain.cards import Card
from domain.events import HandDealt
from domain.rules import Rules
from domain.shuffle import SeededDeal, commitment, deal_out, shuffle

MAX_BOARDS = 10_000


class BoardMismatch(ValueError):
    """A board that does not check out: the message names the board and the failed step."""


class BoardCommitments(msgspec.Struct, frozen=True):
    """What an event publishes when it is created: the root, and each board's commitment."""

    root: str
    """Hex Merkle root over the commitments, board 1 first."""
    commitments: tuple[str, ...]
    """Hex ``sha256(seed)`` of each board, board 1 first."""


def commit(seeds: Sequence[bytes]) -> BoardCommitments:
    """The commitments and their root for an event's seeds (board ``k`` is ``seeds[k - 1]``)."""
    if not 1 <= len(seeds) <= MAX_BOARDS:
        raise ValueError(f"an event has 1 to {MAX_BOARDS} boards, not {len(seeds)}")
    promised = tuple(commitment(seed) for seed in seeds)
    return BoardCommitments(_root(_leaves(promised)).hex(), promised)


def board_proof(commitments: Sequence[str], board: int) -> tuple[str, ...]:
    """The audit path (RFC 9162 §2.1.3.1) of board ``board``'s commitment, in hex."""
    if not 1 <= board <= len(commitments):
        raise ValueError(f"no board {board} among {len(commitments)}")
    return tuple(node.hex() for node in _path(_leaves(commitments), board - 1))


def check_commitment(
    promised: str, board: int, proof: Sequence[str], root: str, boards: int
) -> None:
    """Raise :class:`BoardMismatch` unless ``promised`` is board ``board``'s leaf under
    ``root`` in an event of ``boards`` boards (RFC 9162 §2.1.3.2)."""
    try:
        leaf = _leaf(bytes.fromhex(promised))
        path = [bytes.fromhex(node) for node in proof]
        expected = bytes.fromhex(root)
    except ValueError:
        raise BoardMismatch(f"board {board}: a commitment, proof or root is not hex") from None
    if not 1 <= board <= boards:
        raise BoardMismatch(f"board {board} is not a board of an event of {boards}")
    if not hmac.compare_digest(_climb(leaf, board - 1, boards, path), expected):
        raise BoardMismatch(f"board {board}: the commitment is not the event's board {board}")


def check_seed(seed: bytes, board: int, proof: Sequence[str], root: str, boards: int) -> None:
    """A revealed seed: its commitment must be board ``board``'s under the published root."""
    promised = commitment(seed)
    try:
        check_commitment(promised, board, proof, root, boards)
    except BoardMismatch:
        raise BoardMismatch(
            f"board {board}: the seed does not open the board's commitment"
        ) from None


def board_dealer(rules: Rules, board: int) -> int:
    """The dealer of board ``board``: it turns a seat a board, from seat 0 on board 1."""
    return (board - 1) % rules.players


class BoardSeeds(SeededDeal, frozen=True):
    """How a duplicate table is dealt: ``of(board)`` is the seed of board ``board`` (the
    engine derives it, :mod:`services.engine.boards`), asked for when the board is dealt.
    ``seed`` is not read. A table given a plain :class:`SeededDeal` takes its seed as the
    board's."""

    of: Callable[[int], bytes]


def board_deal(rules: Rules, seed: bytes, board: int, entropies: Sequence[bytes] = ()) -> HandDealt:
    """Board ``board`` as every table is dealt it: the engine's shuffle of the board's seed,
    with the event's ``entropies``, numbered as hand ``board`` (two-player: the draw pile)."""
    table = rules.table
    dealer = board_dealer(rules, board)
    deck = shuffle(seed, entropies, board, table.pack)
    if rules.deal == "draw":
        hands: tuple[tuple[Card, ...], ...] = tuple(() for _ in range(rules.players))
    else:
        hands = deal_out(deck, rules.players, dealer, table.hand_size, rules.dealer_discard)
    return HandDealt(board, dealer, commitment(seed), hands, deck, seed.hex())


def check_table_deal(
    rules: Rules, seed: bytes, board: int, dealt: HandDealt, entropies: Sequence[bytes] = ()
) -> None:
    """Raise :class:`BoardMismatch` unless a table's deal is board ``board`` dealt from
    ``seed``: the same commitment, dealer, hands and (for the draw) pile."""
    expected = board_deal(rules, seed, board, entropies)
    if dealt.commitment != expected.commitment:
        raise BoardMismatch(f"board {board}: the table's deal commits to another seed")
    if dealt.dealer != expected.dealer:
        raise BoardMismatch(
            f"board {board}: the table's dealer is seat {dealt.dealer}, not {expected.dealer}"
        )
    if dealt.hands != expected.hands:
        raise BoardMismatch(f"board {board}: the table's hands are not the board's")
    if rules.deal == "draw" and dealt.deck != expected.deck:
        raise BoardMismatch(f"board {board}: the table's draw pile is not the board's")


# --------------------------------------------------------------------------- the tree


def _leaf(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _leaves(commitments: Sequence[str]) -> list[bytes]:
    return [_leaf(bytes.fromhex(promised)) for promised in commitments]


def _split(size: int) -> int:
    """The largest power of two below ``size`` (``size > 1``)."""
    return 1 << ((size - 1).bit_length() - 1)


def _root(leaves: Sequence[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return _node(_root(leaves[:k]), _root(leaves[k:]))


def _path(leaves: Sequence[bytes], index: int) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*_path(leaves[:k], index), _root(leaves[k:])]
    return [*_path(leaves[k:], index - k), _root(leaves[:k])]


def _climb(hashed: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """The root that ``proof`` leads to from leaf ``index`` of ``size`` (RFC 9162 §2.1.3.2);
    a wrong length leads nowhere (an empty result, which matches no root)."""
    fn, sn, computed = index, size - 1, hashed
    for sibling in proof:
        if sn == 0:
            return b""
        if fn & 1 or fn == sn:
            computed = _node(sibling, computed)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            computed = _node(computed, sibling)
        fn, sn = fn >> 1, sn >> 1
    return computed if sn == 0 else b""
