"""What a witness decides (services/witness/witnessing.py): it cosigns a log's checkpoint only
when the log's key signed it and it extends the last one cosigned, and refuses everything else
with the status C2SP tlog-witness gives it."""

from __future__ import annotations

import pytest

from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import MerkleTree
from services.transparency.note import COSIGNATURE, Signer, open_note, signed_note
from services.witness.witnessing import Witnessed, add_checkpoint, request_text

ORIGIN = "spades.example/log/0"
NOW = 1_790_000_000


class Log:
    """A log as its operator runs it: a tree and a key."""

    def __init__(self, key: Signer | None = None) -> None:
        self.key = key or Signer.generate(ORIGIN)
        self.tree = MerkleTree()

    def grow(self, *entries: bytes) -> Log:
        for entry in entries:
            self.tree.append(entry)
        return self

    def note(self, size: int | None = None) -> str:
        size = self.tree.size if size is None else size
        text = Checkpoint(ORIGIN, size, self.tree.root(size)).text()
        return signed_note(text, self.key.sign(text))

    def request(self, old: int, size: int | None = None) -> str:
        size = self.tree.size if size is None else size
        return request_text(old, self.tree.consistency_proof(old, size), self.note(size))


@pytest.fixture
def witness() -> Signer:
    return Signer.generate("witness.example", COSIGNATURE)


def offer(log: Log, request: str, latest: dict[str, Witnessed], witness: Signer) -> int:
    outcome = add_checkpoint(request, {ORIGIN: log.key.verifier}, latest, witness, NOW)
    if outcome.cosigned is not None:
        latest[ORIGIN] = outcome.cosigned
        note = log.note(outcome.cosigned.size) + outcome.body
        opened = open_note(note, [log.key.verifier, witness.verifier])
        assert opened.cosigned_at == {"witness.example": NOW}
    return outcome.status


def test_a_growing_log_is_cosigned_at_each_size(witness: Signer) -> None:
    log = Log()
    latest: dict[str, Witnessed] = {}
    assert offer(log.grow(b"a"), log.request(0), latest, witness) == 200
    assert offer(log.grow(b"b", b"c"), log.request(1), latest, witness) == 200
    assert offer(log.grow(*(b"%d" % i for i in range(20))), log.request(3), latest, witness) == 200
    assert latest[ORIGIN].size == 23
    assert offer(log, log.request(23), latest, witness) == 200  # the same tree again


def test_a_fork_or_a_rewrite_is_refused_as_inconsistent(witness: Signer) -> None:
    honest = Log().grow(b"a", b"b", b"c")
    latest: dict[str, Witnessed] = {}
    assert offer(honest, honest.request(0), latest, witness) == 200
    forked = Log(honest.key).grow(b"a", b"B", b"c", b"d")  # hand 2 rewritten, then extended
    assert offer(forked, forked.request(3), latest, witness) == 422
    same_size = Log(honest.key).grow(b"a", b"b", b"C")  # another tree of the cosigned size
    assert offer(same_size, same_size.request(3), latest, witness) == 422
    assert latest[ORIGIN].root == honest.tree.root()


def test_stale_sizes_rollbacks_and_strangers_get_their_codes(witness: Signer) -> None:
    log = Log().grow(b"a", b"b", b"c", b"d")
    latest: dict[str, Witnessed] = {}
    assert offer(log, log.request(0), latest, witness) == 200
    log.grow(b"e")
    known = {ORIGIN: log.key.verifier}
    stale = add_checkpoint(log.request(2), known, latest, witness, NOW)
    assert (stale.status, stale.body) == (409, "4\n")  # ask again from 4
    assert offer(log, log.request(0, 2), latest, witness) == 409  # a smaller tree: rollback
    assert offer(log, request_text(4, [], log.note(2)), latest, witness) == 400  # old > size
    impostor = Log().grow(b"a", b"b", b"c", b"d", b"e")  # the log's name, another key
    assert add_checkpoint(impostor.request(4), known, latest, witness, NOW).status == 403
    text = Checkpoint(ORIGIN, 5, log.tree.root()).text()
    unsigned = request_text(4, log.tree.consistency_proof(4), text + "\n")
    assert add_checkpoint(unsigned, known, latest, witness, NOW).status == 403
    assert add_checkpoint(log.request(4), {}, latest, witness, NOW).status == 404
    for malformed in ["", "old x\n\n" + log.note(), "old 4\nnot base64\n\n" + log.note()]:
        assert add_checkpoint(malformed, known, latest, witness, NOW).status == 400
    assert latest[ORIGIN].size == 4
