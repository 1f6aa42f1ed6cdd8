"""The audit log's checks in the browser (services/gateway/pages/assets/js/transparency.js), in
Chromium, on what our Python log produces: every inclusion and consistency proof of a small
log verified, every changed one refused, a signed and cosigned checkpoint opened with
WebCrypto's Ed25519, and a forged one refused with the reason."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import MerkleTree
from services.transparency.note import COSIGNATURE, Signer, signed_note
from tests.browser.conftest import Browse

pytestmark = pytest.mark.browser

CHECK_PROOFS = """async ({inclusion, consistency}) => {
  const t = await import("/assets/js/transparency.js");
  const b = (list) => list.map(t.fromBase64);
  const outcomes = [];
  for (const p of inclusion) {
    try {
      const [leaf, root] = [t.fromBase64(p.leaf), t.fromBase64(p.root)];
      await t.verifyInclusion(leaf, p.index, p.size, b(p.proof), root);
      outcomes.push("ok");
    } catch (error) { outcomes.push(error.message); }
  }
  for (const p of consistency) {
    try {
      const [before, root] = [t.fromBase64(p.old_root), t.fromBase64(p.root)];
      await t.verifyConsistency(p.old, p.size, before, root, b(p.proof));
      outcomes.push("ok");
    } catch (error) { outcomes.push(error.message); }
  }
  return outcomes;
}"""

OPEN_NOTE = """async ({note, keys}) => {
  const t = await import("/assets/js/transparency.js");
  try {
    const verifiers = await Promise.all(keys.map(t.verifierKey));
    const opened = await t.openNote(note, verifiers);
    const checkpoint = t.parseCheckpoint(opened.text);
    return {signedBy: opened.signedBy, cosignedAt: opened.cosignedAt,
            size: Number(checkpoint.size), origin: checkpoint.origin};
  } catch (error) { return {error: error.message}; }
}"""


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def proofs(tree: MerkleTree) -> dict[str, list[dict[str, Any]]]:
    inclusion = [
        {
            "leaf": b64(tree.leaf(index)),
            "index": index,
            "size": size,
            "proof": [b64(h) for h in tree.inclusion_proof(index, size)],
            "root": b64(tree.root(size)),
        }
        for size in range(1, tree.size + 1)
        for index in range(size)
    ]
    consistency = [
        {
            "old": old,
            "size": size,
            "old_root": b64(tree.root(old)),
            "root": b64(tree.root(size)),
            "proof": [b64(h) for h in tree.consistency_proof(old, size)],
        }
        for size in range(1, tree.size + 1)
        for old in range(0, size + 1)
    ]
    return {"inclusion": inclusion, "consistency": consistency}


def grown(count: int, rewritten: int | None = None) -> MerkleTree:
    tree = MerkleTree()
    for i in range(count):
        tree.append(b"rewritten" if i == rewritten else b"hand %d" % i)
    return tree


def test_the_page_verifies_every_proof_of_a_small_log(browse: Browse) -> None:
    page = browse.page("/")
    vectors = proofs(grown(13))
    outcomes = page.evaluate(CHECK_PROOFS, vectors)
    assert outcomes == ["ok"] * (len(vectors["inclusion"]) + len(vectors["consistency"]))


def test_the_page_refuses_proofs_of_another_history(browse: Browse) -> None:
    """Hand 4 rewritten: every head from size 5 on differs, so an honest proof must fail
    against the rewritten heads, and every smaller tree is untouched."""
    page = browse.page("/")
    honest, forked = grown(11), grown(11, rewritten=4)
    vectors = proofs(honest)
    for case in vectors["inclusion"]:
        case["root"] = b64(forked.root(case["size"]))
    for case in vectors["consistency"]:
        case["old_root"] = b64(forked.root(case["old"]))
    outcomes = page.evaluate(CHECK_PROOFS, vectors)
    cases = [
        *((case["size"] > 4, case) for case in vectors["inclusion"]),
        *((case["old"] > 4, case) for case in vectors["consistency"]),
    ]
    for (rewritten, case), outcome in zip(cases, outcomes, strict=True):
        assert (outcome != "ok") == rewritten, (case, outcome)
        if rewritten:
            assert "does not lead" in outcome or "two different trees" in outcome


def test_the_page_opens_a_cosigned_checkpoint_and_refuses_a_forged_one(browse: Browse) -> None:
    page = browse.page("/")
    log = Signer.generate("spades.example/log/0")
    witness = Signer.generate("witness.example", COSIGNATURE)
    tree = grown(5)
    text = Checkpoint(log.name, tree.size, tree.root()).text()
    note = signed_note(text, log.sign(text), witness.cosign(text, 1_790_000_000))
    keys = [log.verifier.text(), witness.verifier.text()]
    opened = page.evaluate(OPEN_NOTE, {"note": note, "keys": keys})
    assert opened == {
        "signedBy": ["spades.example/log/0"],
        "cosignedAt": {"witness.example": 1_790_000_000},
        "size": 5,
        "origin": "spades.example/log/0",
    }
    forged = note.replace(text, Checkpoint(log.name, 5, grown(5, rewritten=2).root()).text())
    refused = page.evaluate(OPEN_NOTE, {"note": forged, "keys": keys})
    assert refused == {"error": "the signature of spades.example/log/0 does not verify"}
    stranger = page.evaluate(
        OPEN_NOTE, {"note": note, "keys": [Signer.generate("x").verifier.text()]}
    )
    assert stranger == {"error": "no signature of a known key on the note"}
