"""A log kept in a database: appended through its frontier, proved from the nodes a proof
reads. Both must give exactly what the whole tree in memory gives."""

from __future__ import annotations

import functools
import hashlib

import pytest

from services.transparency.merkle import (
    Frontier,
    MerkleTree,
    MissingNode,
    PartialTree,
    complete_nodes,
    frontier_nodes,
    leaf_hash,
    nodes_for,
)


def _leaves(count: int) -> list[bytes]:
    return [leaf_hash(hashlib.sha256(str(n).encode()).digest()) for n in range(count)]


def test_a_frontier_appends_the_nodes_and_head_of_the_whole_tree() -> None:
    hashes = _leaves(70)
    whole = MerkleTree()
    for start in (0, 1, 5, 8, 33):
        whole = MerkleTree(hashes[:start])
        frontier = Frontier(start, [whole.node(*n) for n in frontier_nodes(start)])
        made: dict[tuple[int, int], bytes] = {}
        for hashed in hashes[start:]:
            for node, head in frontier.append_hash(hashed):
                made[node] = head
            whole.append_hash(hashed)
            assert frontier.root() == whole.root()
        assert set(made) == set(complete_nodes(start, len(hashes)))
        assert all(whole.node(*node) == head for node, head in made.items())


def test_a_partial_tree_proves_what_the_whole_tree_proves() -> None:
    whole = MerkleTree(_leaves(45))
    stored = {node: whole.node(*node) for node in complete_nodes(0, 45)}
    for size in (1, 2, 7, 16, 45):
        for index in range(0, size, 3):
            needed = nodes_for(
                size, functools.partial(MerkleTree.inclusion_proof, index=index, size=size)
            )
            partial = PartialTree(size, {n: stored[n] for n in needed})
            assert partial.inclusion_proof(index, size) == whole.inclusion_proof(index, size)
        for old in range(0, size + 1, 4):
            needed = nodes_for(
                size, functools.partial(MerkleTree.consistency_proof, old_size=old, new_size=size)
            )
            needed |= nodes_for(size, functools.partial(MerkleTree.root, size=old))
            partial = PartialTree(size, {n: stored[n] for n in needed})
            assert partial.consistency_proof(old, size) == whole.consistency_proof(old, size)
            assert partial.root(old) == whole.root(old)


def test_a_partial_tree_refuses_what_it_was_not_given_and_sizes_beyond_it() -> None:
    whole = MerkleTree(_leaves(9))
    with pytest.raises(MissingNode):
        PartialTree(9, {}).root()
    with pytest.raises(IndexError):
        nodes_for(9, lambda tree: tree.inclusion_proof(9, 9))
    with pytest.raises(IndexError):
        nodes_for(9, lambda tree: tree.consistency_proof(3, 10))
    assert whole.size == 9
