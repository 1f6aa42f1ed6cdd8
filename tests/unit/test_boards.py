"""Boards committed before a duplicate event (domain/boards.py): the Merkle root of the seeds'
commitments, each board's proof, the check of a revealed seed, and the deal every table must
hold, pinned to the audit log's tree and to the engine's own deal."""

from __future__ import annotations

import doctest
import hashlib

import pytest
from msgspec.structs import replace

import domain.boards
from domain.boards import (
    BoardMismatch,
    board_deal,
    board_proof,
    check_commitment,
    check_seed,
    check_table_deal,
    commit,
)
from domain.commands import CreateGame, TakeSeat
from domain.deal_phase import deal_hand, entropies_of
from domain.game import decide, fold
from domain.rules import resolve_rules
from domain.shuffle import SeededDeal, entropy_bytes
from domain.state import Game
from services.transparency.merkle import MerkleTree, verify_inclusion


def seeds(count: int) -> list[bytes]:
    return [hashlib.sha256(f"board {k}".encode()).digest() for k in range(1, count + 1)]


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 13, 36])
def test_the_root_and_proofs_are_the_audit_logs_rfc_6962_tree(count: int) -> None:
    boards = commit(seeds(count))
    tree = MerkleTree()
    for promised in boards.commitments:
        tree.append(bytes.fromhex(promised))
    assert boards.root == tree.root().hex()
    for board in range(1, count + 1):
        proof = board_proof(boards.commitments, board)
        assert list(proof) == [node.hex() for node in tree.inclusion_proof(board - 1)]
        verify_inclusion(
            tree.leaf(board - 1),
            board - 1,
            count,
            [bytes.fromhex(node) for node in proof],
            bytes.fromhex(boards.root),
        )


def test_each_revealed_seed_opens_its_board_and_no_other() -> None:
    drawn = seeds(7)
    boards = commit(drawn)
    for board, seed in enumerate(drawn, start=1):
        proof = board_proof(boards.commitments, board)
        check_seed(seed, board, proof, boards.root, 7)
        other = board % 7 + 1
        with pytest.raises(BoardMismatch, match=f"board {other}"):
            check_seed(seed, other, board_proof(boards.commitments, other), boards.root, 7)
    with pytest.raises(BoardMismatch):
        check_seed(b"not a seed", 1, board_proof(boards.commitments, 1), boards.root, 7)


def test_a_tampered_proof_root_or_size_is_found_out() -> None:
    boards = commit(seeds(5))
    proof = list(board_proof(boards.commitments, 3))
    good = boards.commitments[2]
    check_commitment(good, 3, proof, boards.root, 5)
    flipped = [proof[0][:-1] + ("0" if proof[0][-1] != "0" else "1"), *proof[1:]]
    bad_root = hashlib.sha256(b"x").hexdigest()
    for promised, board, path, root, size in [
        (good, 3, flipped, boards.root, 5),
        (good, 3, proof, bad_root, 5),
        (good, 3, proof[:-1], boards.root, 5),
        (good, 3, [*proof, proof[0]], boards.root, 5),
        (good, 3, proof, boards.root, 2),
        (good, 6, proof, boards.root, 5),
        ("zz", 3, proof, boards.root, 5),
    ]:
        with pytest.raises(BoardMismatch):
            check_commitment(promised, board, path, root, size)


def test_an_event_has_at_least_one_board() -> None:
    with pytest.raises(ValueError, match="1 to"):
        commit([])
    with pytest.raises(ValueError, match="no board 3"):
        board_proof(commit(seeds(2)).commitments, 3)


def seated(preset: str) -> Game:
    state = fold(decide(None, CreateGame("g", {"preset": preset}, dealer=0, entropy="e1e2")))
    assert state is not None
    for seat in range(state.rules.players):
        state = fold(decide(state, TakeSeat(f"p{seat}", seat)), state)
        assert state is not None
    return state


@pytest.mark.parametrize(
    "preset", ["partnership", "solo", "cutthroat", "two-player", "six-player", "jokers-54"]
)
def test_a_board_is_dealt_exactly_as_the_engine_deals_a_hand_from_its_seed(preset: str) -> None:
    state = seated(preset)
    entropies = entropy_bytes(entropies_of(state))
    for board, seed in enumerate(seeds(4), start=1):
        engine = deal_hand(replace(state, hands_played=board - 1), SeededDeal(seed))
        assert board_deal(state.rules, seed, board, entropies) == engine
        check_table_deal(state.rules, seed, board, engine, entropies)


def test_a_table_holding_another_deal_fails_the_audit() -> None:
    rules = resolve_rules({"preset": "partnership"})
    one, two = seeds(2)
    dealt = board_deal(rules, one, 1)
    check_table_deal(rules, one, 1, dealt)
    with pytest.raises(BoardMismatch, match="another seed"):
        check_table_deal(rules, two, 1, dealt)
    with pytest.raises(BoardMismatch, match="dealer"):
        check_table_deal(rules, one, 1, replace(dealt, dealer=1))
    swapped = (dealt.hands[1], dealt.hands[0], *dealt.hands[2:])
    with pytest.raises(BoardMismatch, match="hands"):
        check_table_deal(rules, one, 1, replace(dealt, hands=swapped))
    with pytest.raises(BoardMismatch, match="hands"):
        check_table_deal(rules, one, 1, board_deal(rules, one, 1, [b"other entropy"]))


def test_the_draw_pile_of_a_two_player_board_is_checked() -> None:
    rules = resolve_rules({"preset": "two-player"})
    seed = seeds(1)[0]
    dealt = board_deal(rules, seed, 1)
    assert dealt.deck is not None
    with pytest.raises(BoardMismatch, match="draw pile"):
        check_table_deal(rules, seed, 1, replace(dealt, deck=tuple(reversed(dealt.deck))))


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(domain.boards).failed == 0
