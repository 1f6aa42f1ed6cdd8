"""``spades verify --witness KEY``: each receipt's checkpoint must carry a valid cosignature of
each witness given (C2SP ``cosignature/v1``); the receipt that lacks one, or carries a forged
one, is named. Without ``--witness`` a cosignature is tolerated and none is required."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from services.audit.verify import Finding, read_kept, verify_kept
from services.cli.main import app
from services.transparency.note import COSIGNATURE, Signer, Verifier
from tests.unit.test_verify_receipts import Documents, Played, write

WITNESS = Signer.generate("witness.test", COSIGNATURE)
OTHER = Signer.generate("other-witness.test", COSIGNATURE)
runner = CliRunner()


@pytest.fixture(scope="module")
def played() -> Played:
    return Played()


def cosigned(documents: Documents, witness: Signer, seconds: int = 1_700_000_000) -> Documents:
    """Every receipt's checkpoint with ``witness``'s cosignature line appended, as a log with
    that witness hands it out."""
    for _, document in documents:
        receipt = document["receipt"]
        text = receipt["checkpoint"].partition("\n\n")[0] + "\n"
        receipt["checkpoint"] += witness.cosign(text, seconds)
    return documents


def findings(documents: Documents, played: Played, *witnesses: Verifier) -> list[Finding]:
    verified = verify_kept(read_kept(documents), [played.key], None, witnesses)
    return [finding for finding in verified.findings if not finding.warning]


def test_receipts_cosigned_by_each_witness_given_hold(played: Played) -> None:
    documents = cosigned(cosigned(played.kept(), WITNESS), OTHER)
    assert findings(documents, played, WITNESS.verifier, OTHER.verifier) == []
    assert findings(documents, played) == []  # without --witness: tolerated


def test_a_receipt_without_the_witness_cosignature_is_named(played: Played) -> None:
    documents = cosigned(played.kept(), WITNESS)
    name, document = documents[2]
    document["receipt"]["checkpoint"] = played.log.receipt("second", 1)["checkpoint"]
    assert name == "second-1.json"
    assert findings(documents, played) == []
    (lacking,) = findings(documents, played, WITNESS.verifier)
    assert (lacking.check, lacking.file, lacking.game_id, lacking.hand) == (
        "witness",
        "second-1.json",
        "second",
        1,
    )
    assert "no cosignature of the witness witness.test" in lacking.detail
    others = findings(documents, played, OTHER.verifier)
    assert {f.file for f in others} == {name for name, _ in documents}  # nobody has OTHER's


def test_a_forged_cosignature_is_named(played: Played) -> None:
    """The witness's key id with a signature over another tree, and a signature's bytes
    changed: both are caught as forged, on their own receipts only."""
    documents = cosigned(played.kept(), WITNESS)
    receipt = documents[0][1]["receipt"]
    text = receipt["checkpoint"].partition("\n\n")[0] + "\n"
    lines = text.split("\n")
    other_size = "\n".join([lines[0], str(int(lines[1]) + 1), *lines[2:]])
    signed = played.log.receipt("first", 1)["checkpoint"]
    receipt["checkpoint"] = signed + WITNESS.cosign(other_size, 1_700_000_000)
    tampered = documents[3][1]["receipt"]
    line = tampered["checkpoint"].rstrip("\n").rsplit("\n", 1)[1]
    flipped = line[:-6] + ("AAAA" if line[-6:-2] != "AAAA" else "BBBB") + line[-2:]
    tampered["checkpoint"] = tampered["checkpoint"].replace(line, flipped)
    caught = findings(documents, played, WITNESS.verifier)
    assert sorted((f.check, f.file) for f in caught) == [
        ("witness", documents[0][0]),
        ("witness", documents[3][0]),
    ]
    assert all("witness.test's cosignature of its checkpoint is forged" in f.detail for f in caught)


def test_the_command_takes_witness_keys_and_files(played: Played, tmp_path: Path) -> None:
    documents = cosigned(played.kept(), WITNESS)
    documents[1][1]["receipt"] = played.log.receipt("first", 2)  # kept before it was cosigned
    folder = write(tmp_path / "kept", documents)
    about = tmp_path / "witness.txt"  # what the witness answers at GET /
    about.write_text(f"witness {WITNESS.verifier.text()}\nlog {played.key.text()}\n")
    key = ["--key", played.key.text()]
    for given in (WITNESS.verifier.text(), str(about)):
        result = runner.invoke(app, ["verify", str(folder), *key, "--witness", given, "--json"])
        assert result.exit_code == 1, result.output
        report: dict[str, Any] = json.loads(result.output)
        assert [(f["check"], f["file"]) for f in report["findings"]] == [
            ("witness", documents[1][0])
        ]
    assert runner.invoke(app, ["verify", str(folder), *key]).exit_code == 0
    del documents[1]
    folder = write(tmp_path / "cosigned", documents)
    result = runner.invoke(app, ["verify", str(folder), *key, "--witness", str(about)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("given", ["nonsense", "log key", "missing file"])
def test_a_witness_key_that_cannot_be_read_exits_2(
    played: Played, tmp_path: Path, given: str
) -> None:
    folder = write(tmp_path / "kept", cosigned(played.kept()[:1], WITNESS))
    witness = {
        "nonsense": "nonsense+1234+AAAA",
        "log key": played.key.text(),
        "missing file": str(tmp_path / "missing.txt"),
    }[given]
    key = ["--key", played.key.text()]
    result = runner.invoke(app, ["verify", str(folder), *key, "--witness", witness])
    assert result.exit_code == 2, result.output
