"""An append-only Merkle tree as Certificate Transparency defines it (RFC 9162 §2.1, the
hashing of RFC 6962): the tree head of any size, inclusion proofs and consistency proofs, and
their verification.

The hashes: a leaf is ``SHA-256(0x00 || entry)``, an interior node ``SHA-256(0x01 || left ||
right)``, and the tree of ``n > 1`` leaves splits at the largest power of two below ``n``. The
tree keeps every leaf hash and the hash of every complete subtree (``2^level`` leaves starting
at a multiple of ``2^level``), so the head of any size and any proof take ``O(log² n)`` hashes,
never a pass over the log.

Verification follows the RFC's algorithms (§2.1.3.2 and §2.1.4.2) step by step, so a client
written from the RFC, or the Go checksum database's ``tlog`` package, checks our proofs
(``tests/integration/test_transparency_peer.py`` does so with the latter).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The head of the empty tree."""


class ProofError(ValueError):
    """A proof that does not prove what it was offered for: the message says which step."""


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(size: int) -> int:
    """The largest power of two below ``size`` (``size > 1``): where the tree splits."""
    return 1 << ((size - 1).bit_length() - 1)


class MerkleTree:
    """The hashes of an append-only log: the leaves' and every complete subtree's, by level."""

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        self._levels: list[list[bytes]] = [[]]
        for hashed in leaf_hashes:
            self.append_hash(hashed)

    @property
    def size(self) -> int:
        return len(self._levels[0])

    def append(self, entry: bytes) -> int:
        """Add ``entry`` as the next leaf; its index."""
        return self.append_hash(leaf_hash(entry))

    def append_hash(self, hashed: bytes) -> int:
        """Add a leaf by its hash (as a log read back from storage does); its index."""
        if len(hashed) != HASH_SIZE:
            raise ValueError(f"a leaf hash is {HASH_SIZE} bytes, not {len(hashed)}")
        index = self.size
        self._levels[0].append(hashed)
        level, position = 0, index
        while position % 2 == 1:  # a right child completes its parent's subtree
            parent = node_hash(self._levels[level][position - 1], self._levels[level][position])
            level, position = level + 1, position // 2
            if len(self._levels) == level:
                self._levels.append([])
            self._levels[level].append(parent)
        return index

    def node(self, level: int, position: int) -> bytes:
        """The head of the complete subtree of ``2^level`` leaves from ``position * 2^level``
        (level 0: the leaf hashes)."""
        return self._levels[level][position]

    def leaf(self, index: int) -> bytes:
        """The hash of leaf ``index``."""
        self._check(0 <= index < self.size, f"no leaf {index} in a tree of {self.size}")
        return self.node(0, index)

    def root(self, size: int | None = None) -> bytes:
        """The tree head of the first ``size`` leaves (all of them by default)."""
        size = self.size if size is None else size
        self._check(0 <= size <= self.size, f"no tree of {size} in a log of {self.size}")
        return EMPTY_ROOT if size == 0 else self._subtree(0, size)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """The audit path of leaf ``index`` in the tree of ``size`` (RFC 9162 §2.1.3.1)."""
        size = self.size if size is None else size
        self._check(0 <= index < size <= self.size, f"no leaf {index} in a tree of {size}")
        return self._path(index, 0, size)

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        """The proof that the tree of ``new_size`` extends the tree of ``old_size`` (RFC 9162
        §2.1.4.1); empty for an empty or equal old tree."""
        new_size = self.size if new_size is None else new_size
        self._check(
            0 <= old_size <= new_size <= self.size,
            f"no proof from {old_size} to {new_size} in a log of {self.size}",
        )
        if old_size in (0, new_size):
            return []
        return self._subproof(old_size, 0, new_size, whole=True)

    def _subtree(self, start: int, end: int) -> bytes:
        """The head of leaves ``[start, end)``: ``start`` is a multiple of the smallest power
        of two not below ``end - start`` (as every subtree of the RFC's split is)."""
        count = end - start
        if count & (count - 1) == 0:  # complete: stored
            level = count.bit_length() - 1
            return self.node(level, start >> level)
        k = _split(count)
        return node_hash(self._subtree(start, start + k), self._subtree(start + k, end))

    def _path(self, index: int, start: int, end: int) -> list[bytes]:
        if end - start == 1:
            return []
        k = _split(end - start)
        if index < start + k:
            return [*self._path(index, start, start + k), self._subtree(start + k, end)]
        return [*self._path(index, start + k, end), self._subtree(start, start + k)]

    def _subproof(self, old_end: int, start: int, end: int, *, whole: bool) -> list[bytes]:
        if old_end == end:
            return [] if whole else [self._subtree(start, end)]
        k = _split(end - start)
        if old_end <= start + k:
            return [
                *self._subproof(old_end, start, start + k, whole=whole),
                self._subtree(start + k, end),
            ]
        return [
            *self._subproof(old_end, start + k, end, whole=False),
            self._subtree(start, start + k),
        ]

    @staticmethod
    def _check(holds: bool, message: str) -> None:
        if not holds:
            raise IndexError(message)


Node = tuple[int, int]
"""A complete subtree by its level and position: ``(level, position)`` holds the leaves
``position * 2^level`` to ``(position + 1) * 2^level - 1``."""


class MissingNode(LookupError):
    """A :class:`PartialTree` was asked for a node it was not given."""


class PartialTree(MerkleTree):
    """A tree of ``size`` leaves known only by the complete subtrees' hashes it is given: what
    a proof needs of a log kept in a database, never the whole log (:func:`nodes_for` says
    which)."""

    def __init__(self, size: int, nodes: Mapping[Node, bytes]) -> None:
        super().__init__()
        self._size = size
        self._nodes = nodes

    @property
    def size(self) -> int:
        return self._size

    def append_hash(self, hashed: bytes) -> int:
        raise TypeError("a partial tree is read, not appended to")

    def node(self, level: int, position: int) -> bytes:
        try:
            return self._nodes[level, position]
        except KeyError:
            raise MissingNode(f"no node {(level, position)}") from None


class _Recording(PartialTree):
    def __init__(self, size: int) -> None:
        super().__init__(size, {})
        self.asked: set[Node] = set()

    def node(self, level: int, position: int) -> bytes:
        self.asked.add((level, position))
        return EMPTY_ROOT  # the walk does not depend on the hashes, only on the sizes


def nodes_for(size: int, question: Callable[[MerkleTree], object]) -> set[Node]:
    """The nodes ``question`` (a root or a proof asked of a tree of ``size``) reads: fetch
    those, then ask it of a :class:`PartialTree` holding them. Raises ``IndexError`` as the
    question would."""
    recording = _Recording(size)
    question(recording)
    return recording.asked


def complete_nodes(old_size: int, new_size: int) -> Iterator[Node]:
    """The complete subtrees a tree of ``new_size`` has and one of ``old_size`` has not: what
    appending leaves ``old_size`` to ``new_size - 1`` adds to a stored log (level 0 too)."""
    level = 0
    while new_size >> level:
        yield from ((level, p) for p in range(old_size >> level, new_size >> level))
        level += 1


class Frontier:
    """The right edge of a tree: the heads of the complete subtrees that its size's binary
    digits split it into, largest first. Enough to append leaves and to compute the head,
    without the rest of the log (:func:`frontier_nodes` says which nodes to read)."""

    def __init__(self, size: int, heads: Sequence[bytes]) -> None:
        if len(heads) != size.bit_count():
            raise ValueError(f"a tree of {size} has {size.bit_count()} frontier heads")
        self.size = size
        self._heads = list(heads)
        self._levels = [level for level in reversed(range(size.bit_length())) if size >> level & 1]

    def append_hash(self, hashed: bytes) -> list[tuple[Node, bytes]]:
        """Add a leaf by its hash; the complete subtrees it completes (its own first)."""
        made = [((0, self.size), hashed)]
        level, head = 0, hashed
        while self._levels and self._levels[-1] == level:
            self._levels.pop()
            head = node_hash(self._heads.pop(), head)
            level += 1
            made.append(((level, (self.size + 1 >> level) - 1), head))
        self._levels.append(level)
        self._heads.append(head)
        self.size += 1
        return made

    def root(self) -> bytes:
        if not self._heads:
            return EMPTY_ROOT
        head = self._heads[-1]
        for left in reversed(self._heads[:-1]):
            head = node_hash(left, head)
        return head


def frontier_nodes(size: int) -> list[Node]:
    """The nodes of a tree of ``size`` that its :class:`Frontier` holds, largest first."""
    nodes, start = [], 0
    for level in reversed(range(size.bit_length())):
        if size >> level & 1:
            nodes.append((level, start >> level))
            start += 1 << level
    return nodes


def verify_inclusion(
    hashed: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Raise :class:`ProofError` unless ``proof`` shows the leaf ``hashed`` at ``index`` in
    the tree of ``size`` whose head is ``root`` (RFC 9162 §2.1.3.2)."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} cannot be in a tree of {size}")
    fn, sn, computed = index, size - 1, hashed
    for sibling in proof:
        if sn == 0:
            raise ProofError("the proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            computed = node_hash(sibling, computed)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            computed = node_hash(computed, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the proof is shorter than the tree is deep")
    if not hmac.compare_digest(computed, root):
        raise ProofError(f"leaf {index} does not lead to the tree head of size {size}")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Raise :class:`ProofError` unless ``proof`` shows that the tree of ``new_size`` (head
    ``new_root``) extends the tree of ``old_size`` (head ``old_root``) (RFC 9162 §2.1.4.2)."""
    if not 0 <= old_size <= new_size:
        raise ProofError(f"a tree of {new_size} cannot extend one of {old_size}")
    if old_size == new_size:
        if proof:
            raise ProofError("trees of one size need an empty proof")
        if not hmac.compare_digest(old_root, new_root):
            raise ProofError(f"two different trees of size {old_size}")
        return
    if old_size == 0:
        if proof:
            raise ProofError("every tree extends the empty one: the proof must be empty")
        return
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old head is a node of the new
        path.insert(0, old_root)
    if not path:
        raise ProofError("an empty proof between different sizes")
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    old_computed = new_computed = path[0]
    for sibling in path[1:]:
        if sn == 0:
            raise ProofError("the proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            old_computed = node_hash(sibling, old_computed)
            new_computed = node_hash(sibling, new_computed)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            new_computed = node_hash(new_computed, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the proof is shorter than the tree is deep")
    if not hmac.compare_digest(old_computed, old_root):
        raise ProofError(f"the proof does not lead to the old tree head of size {old_size}")
    if not hmac.compare_digest(new_computed, new_root):
        raise ProofError(f"the proof does not lead to the new tree head of size {new_size}")
