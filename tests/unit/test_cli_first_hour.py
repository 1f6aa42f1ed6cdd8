"""What a newcomer meets in the first hour at the terminal: help that reads right, a hand's
seed and commitment shown whole at 80 columns, and ``spades play`` redrawing in place."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import typer.main
from rich.console import Console
from typer.testing import CliRunner

from services.audit.commit_file import commit_lines
from services.cli.main import app as spades
from services.cli.play import STORY_LINES, Screen
from services.client import PublicState
from tests.unit.test_audit_games import HonestTable


def every_command(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command's words, from a click command (typer's own click: typed loosely)."""
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from every_command(sub, (*path, name))


COMMANDS = list(every_command(typer.main.get_command(spades)))


def test_there_are_commands_to_look_at() -> None:
    assert ("audit",) in COMMANDS
    assert ("projections", "lag") in COMMANDS
    assert len(COMMANDS) > 20


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "spades")
def test_a_flag_takes_no_value_in_help(path: tuple[str, ...]) -> None:
    shown = CliRunner().invoke(spades, [*path, "--help"], env={"COLUMNS": "120"})
    assert shown.exit_code == 0, shown.output
    assert "<bool>" not in shown.stdout
    assert re.search(r"--help\s+Show this message", shown.stdout), shown.stdout


def test_a_flag_still_reads_as_one() -> None:
    shown = CliRunner().invoke(spades, ["projections", "rebuild", "--help"], env={"COLUMNS": "120"})
    assert re.search(r"--all\s+Rebuild every read model", shown.stdout), shown.stdout


@pytest.mark.parametrize("preset", ["partnership", "six-player"])
def test_a_hand_told_at_80_columns_shows_its_seed_and_commitment_whole(
    tmp_path: Path, preset: str
) -> None:
    table = HonestTable({"preset": preset, "max_hands": 1}, 7).play()
    game = tmp_path / "game.jsonl"
    game.write_bytes(commit_lines(table.commits))
    runner = CliRunner()
    narrow = {"COLUMNS": "80"}
    record = json.loads(
        runner.invoke(spades, ["audit", "--commits", str(game), "--records", "--hand", "1"]).stdout
    )
    told = runner.invoke(spades, ["audit", "--commits", str(game), "--hand", "1"], env=narrow)
    assert told.exit_code == 0, told.output
    assert max(len(line) for line in told.stdout.splitlines()) <= 80
    # Folded onto the next line where it must be, every character kept, in order.
    lines = told.stdout.splitlines()
    for name in ("commitment", "seed"):
        value = record["deal"][name]
        assert len(value) >= 32
        start = next(i for i, line in enumerate(lines) if line.strip().startswith(name))
        shown = "".join(line.split()[-1] for line in lines[start : start + 3])
        assert "…" not in shown, "not cut short"
        assert value in shown.removeprefix(name), (value, lines[start : start + 3])


def test_play_redraws_in_place_on_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80, color_system=None)
    screen = Screen(console)
    assert screen.redraw
    for trick in range(1, STORY_LINES + 3):
        screen.tell(f"seat {trick % 4} wins trick {trick}.")
    screen.wait("Waiting for seat 1…")
    last = out.getvalue().rsplit("\x1b[2J", 1)  # the screen is cleared before each drawing
    assert len(last) == 2, "cleared"
    drawn = last[1]
    assert "wins trick 1." not in drawn, "only the latest lines of the story"
    assert f"wins trick {STORY_LINES + 2}." in drawn
    assert drawn.rstrip().endswith("Waiting for seat 1…")


def test_play_writes_each_line_once_elsewhere() -> None:
    out = io.StringIO()
    screen = Screen(Console(file=out, width=80))
    assert not screen.redraw
    screen.tell("seat 2 (cy) wins the trick.")
    screen.tell_event(5, {"type": "trick_won", "seat": 1}, _no_state())
    screen.tell_event(5, {"type": "trick_won", "seat": 1}, _no_state())  # told already
    screen.tell_event(4, {"type": "trick_won", "seat": 3}, _no_state())  # older: told already
    assert out.getvalue().splitlines() == ["seat 2 (cy) wins the trick.", "seat 1 wins the trick."]


def _no_state() -> PublicState:
    """A state whose seats nobody has taken: all ``narrate`` asks of it here."""

    class Nobody:
        def player(self, seat: int) -> None:
            return None

    return cast(PublicState, Nobody())
