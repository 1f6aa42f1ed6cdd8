"""The audit log's Merkle tree (services/transparency/merkle.py): the tree heads of RFC 6962's
test vectors, the RFC's definitions written out naively as the reference, and every proof of
every small tree verified, and refused once anything in it is changed. (A proof does not bind
the tree's size by itself: the size is bound with the head in the signed checkpoint.)"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.transparency.merkle import (
    EMPTY_ROOT,
    MerkleTree,
    ProofError,
    leaf_hash,
    node_hash,
    verify_consistency,
    verify_inclusion,
)

# The eight entries of the Certificate Transparency reference tests, and the heads of the
# trees of their first 1 to 8 (as published with RFC 6962's reference implementation).
ENTRIES = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    b"\x50\x51\x52\x53\x54\x55\x56\x57",
    bytes(range(0x60, 0x70)),
]
HEADS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


def reference_head(entries: list[bytes]) -> bytes:
    """MTH(D[n]) as RFC 9162 §2.1.1 states it."""
    if not entries:
        return hashlib.sha256(b"").digest()
    if len(entries) == 1:
        return leaf_hash(entries[0])
    k = 1
    while k * 2 < len(entries):
        k *= 2
    return node_hash(reference_head(entries[:k]), reference_head(entries[k:]))


def tree_of(count: int) -> tuple[MerkleTree, list[bytes]]:
    entries = [b"entry %d" % i for i in range(count)]
    tree = MerkleTree()
    for entry in entries:
        tree.append(entry)
    return tree, entries


def test_the_heads_of_the_rfc_test_vectors() -> None:
    tree = MerkleTree()
    assert tree.root() == EMPTY_ROOT
    for size, entry in enumerate(ENTRIES, start=1):
        assert tree.append(entry) == size - 1
        assert tree.root().hex() == HEADS[size - 1]
    assert [tree.root(size).hex() for size in range(1, 9)] == HEADS


@given(st.lists(st.binary(max_size=8), max_size=70))
def test_every_head_is_the_rfcs_definition(entries: list[bytes]) -> None:
    tree = MerkleTree()
    for entry in entries:
        tree.append(entry)
    for size in range(len(entries) + 1):
        assert tree.root(size) == reference_head(entries[:size])
    rebuilt = MerkleTree(tree.leaf(i) for i in range(tree.size))
    assert rebuilt.root() == tree.root()


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 13, 33])
def test_every_inclusion_proof_of_every_tree_verifies(count: int) -> None:
    tree, entries = tree_of(count)
    for size in range(1, count + 1):
        root = tree.root(size)
        for index in range(size):
            proof = tree.inclusion_proof(index, size)
            verify_inclusion(leaf_hash(entries[index]), index, size, proof, root)


@pytest.mark.parametrize("count", [2, 3, 7, 8, 9, 21])
def test_an_inclusion_proof_changed_in_any_way_is_refused(count: int) -> None:
    tree, entries = tree_of(count)
    root = tree.root()
    for index in range(count):
        proof = tree.inclusion_proof(index)
        hashed = leaf_hash(entries[index])
        wrong = [
            (leaf_hash(b"another"), index, count, proof, root),
            (hashed, (index + 1) % count, count, proof, root),
            (hashed, index, count, proof[:-1], root),
            (hashed, index, count, [*proof, root], root),
            (hashed, index, count, proof, leaf_hash(b"another head")),
        ]
        wrong += [
            (hashed, index, count, [*proof[:i], leaf_hash(b"x"), *proof[i + 1 :]], root)
            for i in range(len(proof))
        ]
        for case in wrong:
            with pytest.raises(ProofError):
                verify_inclusion(*case)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 6, 8, 11, 17, 32])
def test_every_consistency_proof_verifies(count: int) -> None:
    tree, _ = tree_of(count)
    for new in range(count + 1):
        for old in range(new + 1):
            proof = tree.consistency_proof(old, new)
            verify_consistency(old, new, tree.root(old), tree.root(new), proof)


@pytest.mark.parametrize("count", [3, 5, 8, 12, 19])
def test_a_consistency_proof_against_another_history_is_refused(count: int) -> None:
    tree, entries = tree_of(count)
    for old in range(1, count):
        forked = MerkleTree()
        for i, entry in enumerate(entries[:old]):
            forked.append(b"rewritten" if i == old // 2 else entry)
        proof = tree.consistency_proof(old, count)
        with pytest.raises(ProofError):
            verify_consistency(old, count, forked.root(), tree.root(), proof)
        with pytest.raises(ProofError):
            verify_consistency(old, count, tree.root(old), forked.root(), proof)
        if proof:
            with pytest.raises(ProofError):
                verify_consistency(old, count, tree.root(old), tree.root(), proof[:-1])
    with pytest.raises(ProofError):
        verify_consistency(count, count, tree.root(), leaf_hash(b"fork"), [])


def test_out_of_range_requests_are_refused() -> None:
    tree, _ = tree_of(4)
    with pytest.raises(IndexError):
        tree.inclusion_proof(4)
    with pytest.raises(IndexError):
        tree.consistency_proof(3, 5)
    with pytest.raises(IndexError):
        tree.root(5)
    with pytest.raises(ValueError, match="32 bytes"):
        tree.append_hash(b"short")
