"""``spades league bracket``: seeds from a stage's standings or from ratings, the byes to the
best seeds, and a clear refusal for a bracket that cannot be made."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from services.cli.main import app

runner = CliRunner()


def test_a_stage_s_top_entrants_are_seeded_in_order_with_byes_to_the_best() -> None:
    result = runner.invoke(
        app, ["league", "bracket", "--top", "6", "ada", "bea", "cy", "di", "ev", "fay", "gus"]
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        app, ["league", "bracket", "--top", "6", "ada", "bea", "cy", "di", "ev", "fay", "--json"]
    )
    shown = json.loads(result.output)
    assert shown["places"] == 8
    assert shown["round"] == [
        {"match": 1, "entrants": ["ada"], "bye": True},
        {"match": 2, "entrants": ["di", "ev"], "bye": False},
        {"match": 3, "entrants": ["bea"], "bye": True},
        {"match": 4, "entrants": ["cy", "fay"], "bye": False},
    ]


def test_ratings_seed_the_highest_first(tmp_path: Path) -> None:
    ratings = tmp_path / "ratings.json"
    ratings.write_text(json.dumps({"cy": 20.5, "ada": 31.0, "bea": 25.0, "di": 19.0}))
    result = runner.invoke(app, ["league", "bracket", "--ratings", str(ratings), "--json"])
    assert result.exit_code == 0, result.output
    assert [m["entrants"] for m in json.loads(result.output)["round"]] == [
        ["ada", "di"],
        ["bea", "cy"],
    ]


def test_a_bracket_that_cannot_be_made_is_refused_with_the_reason(tmp_path: Path) -> None:
    alone = runner.invoke(app, ["league", "bracket", "ada"])
    assert alone.exit_code == 2
    assert "the top 1 of 1 entrants" in alone.output
    twice = runner.invoke(app, ["league", "bracket", "ada", "bea", "ada"])
    assert twice.exit_code == 2
    assert "stands twice" in twice.output
    bad = tmp_path / "bad.json"
    bad.write_text('["ada"]')
    refused = runner.invoke(
        app, ["league", "bracket", "--ratings", str(bad)], env={"COLUMNS": "400"}
    )
    assert refused.exit_code == 2
    assert "a JSON object of entrant to rating" in refused.output
