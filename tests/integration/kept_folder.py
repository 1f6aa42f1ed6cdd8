"""``spades verify`` as a player runs it, on a folder of the documents a test kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from services.cli.main import app

runner = CliRunner()


def verify(folder: Path, documents: dict[str, Any], key: str) -> tuple[int, dict[str, Any]]:
    """``spades verify FOLDER --key KEY --json`` on the documents (each written to its file
    in a new ``folder``): its exit code and its report."""
    folder.mkdir()
    for name, document in documents.items():
        (folder / name).write_text(json.dumps(document), encoding="utf-8")
    result = runner.invoke(app, ["verify", str(folder), "--key", key, "--json"])
    assert result.exit_code in (0, 1), result.output
    report: dict[str, Any] = json.loads(result.output)
    code: int = result.exit_code
    return code, report
