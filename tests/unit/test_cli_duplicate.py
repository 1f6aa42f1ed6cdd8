"""``spades league movement`` and ``spades league matchpoints`` (services/cli/duplicate.py)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from typer.testing import CliRunner

from domain.movement import Evenness, Movement
from services.cli.main import app

runner = CliRunner()


def test_movement_prints_every_round_table_and_the_evenness_figures() -> None:
    result = runner.invoke(
        app,
        ["league", "movement", "--players", "9", "--preset", "cutthroat", "--rounds", "4"],
        terminal_width=200,
    )
    assert result.exit_code == 0, result.output
    assert "cutthroat individual: 9 players, 4 rounds" in result.output
    assert "seats 1" in result.output
    assert "seats 3" in result.output
    assert "boards compared, per two players" in result.output
    assert "7-8" in result.output  # round 4's boards at two a round


def test_movement_as_json_is_the_domains_movement_and_evenness() -> None:
    result = runner.invoke(
        app, ["league", "movement", "--players", "12", "--preset", "partnership", "--json"]
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    plan = msgspec.convert(shown["movement"], Movement)
    figures = msgspec.convert(shown["evenness"], Evenness)
    assert plan.style == "pairs"
    assert len(plan.rounds) == 5
    assert figures.meetings == (1, 1)


def test_movement_refuses_a_field_that_cannot_play_with_a_clear_message() -> None:
    result = runner.invoke(
        app, ["league", "movement", "--players", "7", "--preset", "partnership", "--style", "pairs"]
    )
    assert result.exit_code == 2
    assert "even field" in result.output
    result = runner.invoke(app, ["league", "movement", "--players", "8", "--preset", "nope"])
    assert result.exit_code == 2
    assert "unknown preset" in result.output


def side(players: list[str], points: int) -> dict[str, object]:
    return {"players": players, "points": points}


def test_matchpoints_prints_each_board_across_its_tables_and_the_standings(
    tmp_path: Path,
) -> None:
    results = {
        "boards": [
            {
                "board": 1,
                "tables": [
                    {"table": "1", "sides": [side(["ann", "bob"], 120), side(["cy", "di"], -40)]},
                    {"table": "2", "sides": [side(["ed", "flo"], 80), side(["gus", "hal"], 20)]},
                ],
            }
        ]
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    result = runner.invoke(app, ["league", "matchpoints", str(path)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Board 1: played 2 times" in result.output
    assert "ann + bob" in result.output
    assert "100.00" in result.output  # ann + bob beat ed + flo: a top of 1, 100 %
    assert "Standings" in result.output


def test_matchpoints_refuses_a_file_it_cannot_score(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"boards": [{"board": 1, "tables": []}]}))
    result = runner.invoke(app, ["league", "matchpoints", str(path)])
    assert result.exit_code == 2
    assert "no tables" in result.output
    path.write_text("{not json")
    assert runner.invoke(app, ["league", "matchpoints", str(path)]).exit_code == 2
