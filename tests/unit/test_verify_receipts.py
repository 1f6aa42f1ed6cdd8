"""``spades verify``'s checks, one by one, on a log kept in process by the service's own code
(:class:`~tests.unit.operator_log.OperatorLog`): an honest folder holds; each thing a receipt,
a record or a proof can get wrong is caught, named by file, game and hand."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from typer.testing import CliRunner

from contracts.log_entries import HandEnd, entry_bytes, read_entry
from domain.shuffle import commitment
from services.audit.hand_record import exported_records
from services.audit.replay import replay_game
from services.audit.verify import Finding, Verified, read_kept, verify_kept
from services.cli.main import app
from services.projections.audit_log import game_entries
from services.projections.model import Delivered
from services.transparency.note import Signer, Verifier
from tests.unit.operator_log import OperatorLog
from tests.unit.test_audit_games import HonestTable

KEY = Signer.generate("spades.test/log")
GAMES = ("first", "second")
Documents = list[tuple[str, Any]]


class Played:
    """Two finished games of two hands, their log, and each hand's record as kept."""

    def __init__(self) -> None:
        entries: list[bytes] = []
        self.records: dict[tuple[str, int], dict[str, Any]] = {}
        for number, game_id in enumerate(GAMES):
            table = HonestTable({"preset": "partnership", "max_hands": 2}, 40 + number, game_id)
            table.play(refusals=0)
            delivered = [Delivered(s.sequence, s.commit, s.data) for s in table.commits]
            entries += [entry_bytes(entry) for entry in game_entries(delivered)]
            for record in exported_records(replay_game(table.commits)):
                self.records[game_id, record["hand"]] = record
        self.log = OperatorLog(entries, KEY)

    @property
    def key(self) -> Verifier:
        return self.log.signer.verifier

    def kept(self, log: OperatorLog | None = None, size: int | None = None) -> Documents:
        """Every hand's record with its receipt in the tree of ``size`` (the hands it holds),
        a file each."""
        log = log or self.log
        size = len(log.entries) if size is None else size
        return [
            (
                f"{game_id}-{hand}.json",
                {**copy.deepcopy(record), "receipt": log.receipt(game_id, hand, size)},
            )
            for (game_id, hand), record in self.records.items()
            if log.holds(game_id, hand, size)
        ]


@pytest.fixture(scope="module")
def played() -> Played:
    return Played()


def verified(documents: Documents, keys: list[Verifier]) -> Verified:
    return verify_kept(read_kept(documents), keys)


def caught(documents: Documents, played: Played) -> list[Finding]:
    found = verified(documents, [played.key])
    assert not found.ok
    return [finding for finding in found.findings if not finding.warning]


def edited_entry(data: bytes, **changes: Any) -> bytes:
    entry = read_entry(data)
    assert isinstance(entry, HandEnd)
    return entry_bytes(msgspec.structs.replace(entry, **changes))


def test_an_honest_folder_holds(played: Played) -> None:
    found = verified(played.kept(), [played.key])
    assert found.ok
    assert found.findings == []
    assert (found.receipts, found.records, found.proofs) == (4, 4, 0)


def test_bare_receipts_and_a_games_records_are_read_too(played: Played) -> None:
    receipts = [(f"r{n}.json", doc["receipt"]) for n, (_, doc) in enumerate(played.kept())]
    records = [("game.json", {"hands": [doc for _, doc in played.kept()[:2]]})]
    found = verified(receipts + records, [played.key])
    assert found.ok
    assert (found.receipts, found.records) == (6, 2)


def test_a_platforms_hand_scored_webhooks_are_read_for_their_receipts(played: Played) -> None:
    receipt = played.log.receipt("second", 1)
    data: dict[str, Any] = {"game_id": "second", "hand": 1, "receipt": receipt}
    webhook = {"type": "hand.scored", "data": data}
    late = {"type": "hand.scored", "data": {"game_id": "second", "hand": 2, "receipt": None}}
    found = verified([("w1.json", webhook), ("w2.json", late)], [played.key])
    assert found.ok
    assert found.receipts == 1
    assert [(f.check, f.game_id, f.hand) for f in found.findings] == [("unlogged", "second", 2)]
    data["receipt"]["entry"]["bags"] = [9, 9]
    assert [f.check for f in caught([("w1.json", webhook)], played)] == ["entry"]


def test_a_checkpoint_signed_by_another_key_is_caught(played: Played) -> None:
    stranger = Signer.generate(played.log.origin).verifier
    found = verified(played.kept(), [stranger])
    assert not found.ok
    findings = found.findings
    assert {f.check for f in findings} == {"signature"}
    assert {(f.game_id, f.hand) for f in findings} == {(g, h) for g in GAMES for h in (1, 2)}
    assert "does not open with the keys given" in findings[0].detail


def test_a_checkpoint_edited_after_signing_is_caught(played: Played) -> None:
    (name, document), *_ = played.kept()
    receipt = document["receipt"]
    receipt["checkpoint"] = receipt["checkpoint"].replace(
        f"\n{receipt['tree_size']}\n", f"\n{receipt['tree_size'] + 1}\n", 1
    )
    (finding,) = caught([(name, document)], played)
    assert (finding.file, finding.check) == (name, "signature")
    assert "does not verify" in finding.detail


def test_a_receipt_for_another_size_or_origin_is_caught(played: Played) -> None:
    (name, document), *_ = played.kept()
    document["receipt"]["tree_size"] -= 1
    (finding,) = caught([(name, document)], played)
    assert finding.check == "signature"
    assert "the receipt says" in finding.detail


def test_an_unsigned_receipt_is_caught(played: Played) -> None:
    (name, document), *_ = played.kept()
    receipt = document["receipt"]
    receipt["checkpoint"], receipt["signed"] = played.log.head().checkpoint, False
    (finding,) = caught([(name, document)], played)
    assert finding.check == "signature"


def test_an_entry_not_in_the_signed_tree_is_caught(played: Played) -> None:
    """The entry edited, its proof and checkpoint left: it is not the leaf the tree holds."""
    (name, document), *_ = played.kept()
    receipt = document["receipt"]
    data = edited_entry(base64.b64decode(receipt["entry_bytes"]), scores=(999, 0))
    receipt["entry_bytes"] = base64.b64encode(data).decode()
    (finding,) = caught([(name, document)], played)
    assert (finding.check, finding.game_id, finding.hand) == ("inclusion", "first", 1)
    assert "is not leaf 0 of the signed tree" in finding.detail


def test_a_receipt_whose_entry_says_otherwise_than_its_leaf_is_caught(played: Played) -> None:
    (name, document), *_ = played.kept()
    document["receipt"]["entry"]["scores"] = [999, 0]
    findings = caught([(name, document)], played)
    assert [f.check for f in findings] == ["entry"]
    assert "scores [999, 0]" in findings[0].detail


def test_a_receipt_naming_another_hand_than_its_leaf_is_caught(played: Played) -> None:
    (name, document), *_ = played.kept()
    document["receipt"]["hand"] = 2
    findings = caught([(name, document)], played)
    assert findings[0].check == "entry"
    assert "is game first hand 1, not the receipt's" in findings[0].detail


def test_a_deal_commitment_other_than_the_one_before_the_first_bid_is_caught(
    played: Played,
) -> None:
    (name, document), *_ = played.kept()
    document["receipt"]["deal"]["commitment"] = "0" * 64
    (finding,) = caught([(name, document)], played)
    assert (finding.check, finding.hand) == ("deal", 1)
    assert "committed before the first bid" in finding.detail


def test_a_revealed_seed_that_does_not_open_the_commitment_is_caught(played: Played) -> None:
    """The operator logs another seed, and signs the log again: the seed is in the signed
    leaf, but it does not hash to the commitment."""
    log = copy.deepcopy(played.log)
    index = log.index_of("second", 2)
    log.entries[index] = edited_entry(log.entries[index], seed="ab" * 32)
    record = played.records["second", 2]
    record = {**record, "deal": {**record["deal"], "seed": "ab" * 32}}
    findings = caught([("lie.json", {**record, "receipt": log.receipt("second", 2)})], played)
    deal = [f for f in findings if f.check == "deal"]
    assert len(deal) == 1
    assert f"hashes to {commitment(bytes.fromhex('ab' * 32))[:16]}" in deal[0].detail
    assert (deal[0].game_id, deal[0].hand) == ("second", 2)


def test_a_record_that_disagrees_with_its_entry_is_caught(played: Played) -> None:
    (name, document), *_ = played.kept()
    document["points"] = [p + 10 for p in document["points"]]
    findings = caught([(name, document)], played)
    assert ("record", 1) in {(f.check, f.hand) for f in findings}
    record = next(f for f in findings if f.check == "record")
    assert record.detail.startswith("the record's points")


def test_a_record_whose_deck_its_seed_does_not_derive_is_caught(played: Played) -> None:
    """Two cards of the deck swapped (the record and its log entry otherwise agree): the replay
    finds the deal did not come from the committed seed."""
    (name, document), *_ = played.kept()
    deck = document["deal"]["deck"]
    deck[0], deck[1] = deck[1], deck[0]
    findings = caught([(name, document)], played)
    assert {f.check for f in findings} == {"replay"}
    assert any("is not the deck its revealed seed derives" in f.detail for f in findings)


def test_a_fork_of_one_size_is_caught_naming_both_files(played: Played) -> None:
    forked = copy.deepcopy(played.log)
    index = forked.index_of("second", 1)
    forked.entries[index] = edited_entry(forked.entries[index], points=(0, 0))
    mine = played.kept()[:1]
    theirs = [(f"other-{name}", doc) for name, doc in played.kept(forked)[3:]]
    findings = caught(mine + theirs, played)
    (fork,) = [f for f in findings if f.check == "fork"]
    assert fork.file == "other-second-2.json"
    assert "first-1.json (game first hand 1)" in fork.detail


def test_trees_of_two_sizes_are_proven_by_a_kept_proof(played: Played) -> None:
    size = len(played.log.entries)
    early = [(f"early-{n}", doc) for n, doc in played.kept(size=3)[:2]]
    late = played.kept()[2:]
    found = verified(early + late, [played.key])
    assert found.ok
    (warning,) = found.findings
    assert (warning.check, warning.warning) == ("unproven", True)
    assert warning.command is not None
    assert f"proofs/consistency?old=3&new={size}" in warning.command
    proof = ("proof.json", played.log.consistency(3, size))
    assert verified([*early, *late, proof], [played.key]).findings == []


def test_a_proof_that_does_not_join_the_signed_trees_is_caught(played: Played) -> None:
    """The operator rewrote hand 1 and answers the proof from its new tree: the proof holds
    for its own heads, not for the tree signed earlier."""
    size = len(played.log.entries)
    rewritten = copy.deepcopy(played.log)
    rewritten.entries[0] = edited_entry(rewritten.entries[0], scores=(500, 0))
    early = played.kept(size=3)[:1]
    late = [(f"late-{n}", doc) for n, doc in played.kept(rewritten)[2:]]
    proof = ("proof.json", rewritten.consistency(3, size))
    findings = caught([*early, *late, proof], played)
    (failed,) = [f for f in findings if f.check == "consistency"]
    assert failed.file == "proof.json"
    assert "does not extend its tree of 3 signed for first-1.json (game first hand 1)" in (
        failed.detail
    )


def test_a_proof_that_fails_for_its_own_heads_is_caught(played: Played) -> None:
    size = len(played.log.entries)
    proof = played.log.consistency(3, size)
    proof["proof"] = proof["proof"][:-1]
    findings = caught([*played.kept()[:1], ("proof.json", proof)], played)
    assert [f.check for f in findings] == ["consistency"]


def test_one_hand_shown_at_two_places_is_caught(played: Played) -> None:
    """Hand 1 of the first game deleted from the log: every later leaf moves up one."""
    deleted = copy.deepcopy(played.log)
    del deleted.entries[0]
    mine = played.kept()[1:2]
    theirs = [("later.json", played.kept(deleted)[0][1])]
    findings = caught(mine + theirs, played)
    rewritten = [f for f in findings if f.check == "rewritten"]
    assert rewritten[0].file == "later.json"
    assert (rewritten[0].game_id, rewritten[0].hand) == ("first", 2)
    assert "it was leaf 1 in first-2.json, it is leaf 0 here" in rewritten[0].detail


def test_a_record_without_its_receipt_is_replayed_and_warned_of(played: Played) -> None:
    """A director's export (``spades audit GAME --records``) holds no receipt: each record is
    replayed alone, and said to be checked against no log."""
    records = [copy.deepcopy(record) for record in played.records.values()]
    found = verified([("game.json", {"hands": records})], [played.key])
    assert found.ok
    assert {(f.check, f.warning) for f in found.findings} == {("unlogged", True)}
    records[0]["scores"] = [s + 10 for s in records[0]["scores"]]
    findings = caught([("game.json", {"hands": records})], played)
    assert {(f.check, f.hand) for f in findings} == {("replay", 1)}


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("hand", -1, ".hand: Expected `int` >= 0"),
        ("hand", 2**40, ".hand: Expected `int` <= 2147483647"),
        ("start", {"scores": [0, 0], "bags": [10**6, 0]}, "bag counts are below 10"),
        ("points", [10**12, 0], ".points[0]: Expected `int` <= 1000000000"),
    ],
)
def test_a_record_no_table_could_keep_is_refused_not_replayed_at_any_cost(
    played: Played, field: str, value: Any, why: str
) -> None:
    record = copy.deepcopy(played.records["first", 1])
    record[field] = value
    findings = caught([("odd.json", record)], played)
    assert [f.check for f in findings] == ["replay"]
    assert "cannot be replayed" in findings[0].detail
    assert why in findings[0].detail


def test_what_is_neither_record_receipt_nor_proof_is_caught(played: Played) -> None:
    findings = caught([("notes.json", {"hello": 1}), *played.kept()[:1]], played)
    assert [(f.file, f.check) for f in findings] == [("notes.json", "unreadable")]


# --------------------------------------------------------------------------- the command

runner = CliRunner()


def write(folder: Path, documents: Documents) -> Path:
    folder.mkdir(exist_ok=True)
    for name, document in documents:
        (folder / name).write_text(json.dumps(document), encoding="utf-8")
    return folder


def test_the_command_exits_0_when_all_holds(played: Played, tmp_path: Path) -> None:
    folder = write(tmp_path / "kept", played.kept())
    result = runner.invoke(app, ["verify", str(folder), "--key", played.key.text()])
    assert result.exit_code == 0, result.output
    assert "4 receipts, 4 hand records, 0 consistency proofs: all holds" in result.output


def test_the_command_exits_1_naming_what_it_caught(played: Played, tmp_path: Path) -> None:
    documents = played.kept()
    documents[1][1]["scores"] = [1, 2]
    folder = write(tmp_path / "kept", documents)
    result = runner.invoke(app, ["verify", str(folder), "--key", played.key.text(), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["ok"] is False
    record = next(f for f in report["findings"] if f["check"] == "record")
    assert (record["file"], record["game_id"], record["hand"]) == ("first-2.json", "first", 2)
    plain = runner.invoke(app, ["verify", str(folder), "--key", played.key.text()])
    assert "caught [record] first-2.json: game first hand 2: the record's scores" in plain.output


@pytest.mark.parametrize("problem", ["no folder", "not json", "bad key", "no key", "empty"])
def test_the_command_exits_2_when_it_cannot_read(
    played: Played, tmp_path: Path, problem: str
) -> None:
    folder = write(tmp_path / "kept", [] if problem == "empty" else played.kept()[:1])
    key = ["--key", played.key.text()]
    if problem == "no folder":
        folder = tmp_path / "missing"
    elif problem == "not json":
        (folder / "broken.json").write_text("{", encoding="utf-8")
    elif problem == "bad key":
        key = ["--key", "nonsense"]
    elif problem == "no key":
        key = []
    result = runner.invoke(app, ["verify", str(folder), *key])
    assert result.exit_code == 2, result.output
