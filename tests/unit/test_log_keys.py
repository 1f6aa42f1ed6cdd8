"""The audit log's key: made once, private, by ``spades up``; given by ``SPADES_LOG_KEY``
otherwise; and ``spades log keys`` prints each partition's public key, which opens that
partition's checkpoints and no other's."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.cli.main import app
from services.projections.audit_log import LogModel
from services.runtime.settings import LOG_KEY_FILENAME, Settings
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import EMPTY_ROOT
from services.transparency.note import NoteError, Signer, Verifier, open_note, signed_note


def test_the_key_file_is_made_once_and_private(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "var")
    assert settings.log_signer() is None  # nothing made unless asked: the log signs nothing
    made = settings.log_signer(create=True)
    assert made is not None
    path = tmp_path / "var" / LOG_KEY_FILENAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = settings.log_signer(create=True)
    assert again is not None
    assert again.text() == made.text()
    given = Signer.generate("elsewhere/log")
    chosen = Settings(data_dir=tmp_path / "var", log_key=given.text()).log_signer()
    assert chosen is not None
    assert chosen.text() == given.text()


def test_log_keys_prints_each_partitions_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = Signer.generate("spades.example/log")
    monkeypatch.setenv("SPADES_LOG_KEY", key.text())
    monkeypatch.setenv("SPADES_LOG_ORIGIN", "spades.example/log")
    monkeypatch.setenv("SPADES_PARTITIONS", "3")
    result = CliRunner().invoke(app, ["log", "keys", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    printed = [Verifier.parse(line) for line in result.output.splitlines()]
    assert [v.name for v in printed] == [f"spades.example/log/{p}" for p in range(3)]
    model = LogModel()
    model.origin, model.key = "spades.example/log", key
    for partition in range(3):
        signer = model.signer(partition)
        assert signer is not None
        text = Checkpoint(f"spades.example/log/{partition}", 0, EMPTY_ROOT).text()
        note = signed_note(text, signer.sign(text))
        assert open_note(note, [printed[partition]]).text == text
        with pytest.raises(NoteError):
            open_note(note, [printed[(partition + 1) % 3]])


def test_log_keys_without_a_key_says_how_to_make_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPADES_LOG_KEY", raising=False)
    result = CliRunner().invoke(app, ["log", "keys", "--data-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "SPADES_LOG_KEY" in result.output
