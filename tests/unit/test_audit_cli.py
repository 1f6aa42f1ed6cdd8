"""``spades audit`` on files: exit 0 clean, 1 a problem found, 2 unreadable input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from msgspec.structs import replace
from typer.testing import CliRunner

from domain.events import HandScored
from services.audit.commit_file import commit_lines
from services.cli.audit import audit
from tests.unit.test_audit_games import HonestTable, rechained

app = typer.Typer()
app.command()(audit)


@app.command("unused")
def _unused() -> None:
    """A second command, so that ``audit`` is invoked by name as it will be under ``spades``."""


runner = CliRunner()


def run(*args: str) -> Any:
    return runner.invoke(app, ["audit", *args])


@pytest.fixture
def game(tmp_path: Path) -> Path:
    table = HonestTable({"preset": "cutthroat", "max_hands": 2}, 31).play()
    path = tmp_path / "game.jsonl"
    path.write_bytes(commit_lines(table.commits))
    return path


@pytest.fixture
def tampered(tmp_path: Path, game: Path) -> tuple[Path, int]:
    """The same game with its first score raised by 10 and its chain forged."""
    table = HonestTable({"preset": "cutthroat", "max_hands": 2}, 31).play()
    commits = [stored.commit for stored in table.commits]
    index, offset = next(
        (i, k)
        for i, commit in enumerate(commits)
        for k, event in enumerate(commit.events)
        if isinstance(event, HandScored)
    )
    scored = commits[index].events[offset]
    assert isinstance(scored, HandScored)
    events = list(commits[index].events)
    events[offset] = replace(scored, points=(scored.points[0] + 10, *scored.points[1:]))
    commits[index] = replace(commits[index], events=events)
    path = tmp_path / "tampered.jsonl"
    path.write_bytes(commit_lines(rechained(commits)))
    return path, commits[index].first_version + offset


def test_a_clean_copy_exits_0(game: Path) -> None:
    result = run("--commits", str(game))
    assert result.exit_code == 0, result.output
    assert "clean" in result.output


def test_a_tampered_copy_exits_1_naming_the_event(tampered: tuple[Path, int]) -> None:
    path, version = tampered
    result = run("--commits", str(path), "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["ok"] is False
    assert report["first_problem"]["version"] == version
    assert report["first_problem"]["check"] == "score"
    assert report["first_problem"]["arithmetic"]


def test_a_hand_is_told_in_full(game: Path) -> None:
    result = run("--commits", str(game), "--hand", "1")
    assert result.exit_code == 0
    for part in ("The hands as dealt", "The bids", "The tricks", "The score, by the rules"):
        assert part in result.output
    assert "contract" in result.output or "failed_bid" in result.output


def test_records_exported_from_a_game_are_audited_alone(game: Path, tmp_path: Path) -> None:
    exported = run("--commits", str(game), "--records", "--hand", "2")
    assert exported.exit_code == 0
    record = tmp_path / "hand2.json"
    record.write_text(exported.output)
    assert json.loads(exported.output)["hand"] == 2
    result = run("--record", str(record), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["rules"]["preset"] == "cutthroat"


def suit(letter: str) -> list[str]:
    return [rank + letter for rank in "AKQJT98765432"]


def test_a_record_with_a_renege_exits_1(tmp_path: Path) -> None:
    """Seat 0 leads the ace of spades; seat 1 answers with the ace of hearts. Legal when seat 1
    holds no spade; a renege when it holds the king."""
    hands = [suit("S"), suit("H"), suit("D"), suit("C")]
    record: dict[str, Any] = {
        "dealer": 3,
        "deal": {"hands": hands},
        "bids": [13, 1, 1, 1],
        "tricks": [{"leader": 0, "cards": [{"seat": 0, "card": "AS"}, {"seat": 1, "card": "AH"}]}],
    }
    path = tmp_path / "record.json"
    rules = '{"preset": "solo", "spades_lead": "any"}'
    path.write_text(json.dumps(record))
    result = run("--record", str(path), "--rules", rules)
    assert result.exit_code == 0, result.output

    hands[0][1], hands[1][1] = "KH", "KS"
    path.write_text(json.dumps(record))
    result = run("--record", str(path), "--rules", rules, "--json")
    assert result.exit_code == 1, result.output
    problem = json.loads(result.output)["first_problem"]
    assert problem["rule"] == "must_follow_suit"
    assert problem["detail"].startswith("trick 1, card 2: seat 1 plays AH")


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--commits", "missing.jsonl"],
        ["--record", "missing.json"],
        ["some-game", "--commits", "x.jsonl"],
        ["bad game id!"],
        ["some-game", "--rules", "{}"],
    ],
)
def test_unreadable_input_exits_2(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADES_NATS_URL", "nats://127.0.0.1:1")
    assert run(*args).exit_code == 2


def test_a_file_that_is_not_commits_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_text('{"not": "a commit"}\n')
    result = run("--commits", str(path))
    assert result.exit_code == 2
    assert "line 1" in result.output


def test_rules_that_are_not_json_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "tally.json"
    path.write_text(json.dumps({"bids": [3, "nil", 2, 6], "tricks": [5, 1, 3, 4]}))
    assert run("--record", str(path), "--rules", "{preset").exit_code == 2
    assert run("--record", str(path), "--rules", '{"preset": "bridge"}').exit_code == 2
    assert run("--record", str(path)).exit_code == 0
