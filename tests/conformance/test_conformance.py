"""The scenario files of this directory (docs/rules.md, "Scenario files"), run two ways: through
:func:`domain.scenario.run_case` in process, one test per case, and through the real
``spades scenario run`` command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from domain.scenario import differences, run_case

HERE = Path(__file__).parent
FILES = sorted(HERE.glob("*.json"))
SPADES = Path(sys.executable).parent / "spades"


def _cases(path: Path) -> list[Any]:
    document = json.loads(path.read_text(encoding="utf-8"))
    return document if isinstance(document, list) else [document]


CASES: list[tuple[Path, int, Any]] = [
    (path, position, case) for path in FILES for position, case in enumerate(_cases(path))
]


def _case_id(path: Path, position: int, case: Any) -> str:
    name = case.get("name", f"#{position}") if isinstance(case, dict) else f"#{position}"
    return f"{path.name}::{name}"


def test_the_conformance_files_are_found() -> None:
    names = {path.name for path in FILES}
    assert {"play_rules.json", "seed_examples.json", "cases_own.json"} <= names
    assert len(CASES) >= 50


@pytest.mark.parametrize(
    ("path", "position", "case"),
    CASES,
    ids=[_case_id(path, position, case) for path, position, case in CASES],
)
def test_case(path: Path, position: int, case: Any) -> None:
    outcome = run_case(case, position)
    assert differences(case.get("expect", {}), outcome) == []


def _run(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SPADES), "scenario", "run", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_runs_every_conformance_file() -> None:
    result = _run(*FILES)
    assert result.returncode == 0, result.stderr
    outcomes = json.loads(result.stdout)
    assert isinstance(outcomes, list)
    assert len(outcomes) == len(CASES)
    for outcome, (_, position, case) in zip(outcomes, CASES, strict=True):
        assert outcome["name"] == case.get("name", f"#{position}")
        assert differences(case.get("expect", {}), outcome) == []


TALLY_CASE: dict[str, Any] = {
    "name": "a set of 8 with 6",
    "rules": {"preset": "partnership"},
    "tallies": [{"bids": [4, 3, 4, 3], "tricks": [3, 4, 3, 3]}],
}


def test_cli_exit_1_names_the_differing_field(tmp_path: Path) -> None:
    right = {**TALLY_CASE, "name": "right", "expect": {"scores": [-80, 61]}}
    wrong = {**TALLY_CASE, "name": "wrong", "expect": {"scores": [-80, 60], "bags": [0, 1]}}
    path = tmp_path / "differs.json"
    path.write_text(json.dumps([right, wrong]), encoding="utf-8")
    result = _run(path)
    assert result.returncode == 1
    outcomes = json.loads(result.stdout)
    assert [outcome["name"] for outcome in outcomes] == ["right", "wrong"]
    assert outcomes[1]["scores"] == [-80, 61]
    assert "wrong" in result.stderr
    assert "scores[1]" in result.stderr
    assert "'right'" not in result.stderr
    assert "bags" not in result.stderr


HANDS = [
    ["AS", "KS", "QS", "JS", "AH", "KH", "QH", "AD", "KD", "QD", "AC", "KC", "QC"],
    ["TS", "9S", "8S", "JH", "TH", "9H", "8H", "JD", "TD", "9D", "JC", "TC", "9C"],
    ["7S", "6S", "5S", "7H", "6H", "5H", "8D", "7D", "6D", "5D", "8C", "7C", "6C"],
    ["4S", "3S", "2S", "4H", "3H", "2H", "4D", "3D", "2D", "5C", "4C", "3C", "2C"],
]


@pytest.mark.parametrize(
    ("case", "field"),
    [
        (
            {
                "name": "a bad card",
                "deals": [{"hands": [HANDS[0], HANDS[1], [*HANDS[2][:-1], "ZZ"], HANDS[3]]}],
            },
            "deals[0].hands[2]",
        ),
        (
            {"name": "an unknown option", "rules": {"preset": "partnership", "joker": True}},
            "rules",
        ),
        (
            {"name": "a card dealt twice", "deals": [{"hands": [HANDS[0], HANDS[0], *HANDS[2:]]}]},
            "deals[0].hands",
        ),
        (
            {
                "name": "tricks that do not add up",
                "tallies": [{"bids": [4, 3, 4, 3], "tricks": [3, 4, 3, 4]}],
            },
            "tallies[0].tricks",
        ),
        (
            {
                "name": "a bid the rules refuse",
                "tallies": [{"bids": [4, 0, 4, 3], "tricks": [3, 4, 3, 3]}],
            },
            "tallies[0].bids[1]",
        ),
    ],
    ids=["bad card", "unknown option", "card twice", "tricks", "refused bid"],
)
def test_cli_exit_2_for_a_malformed_case(tmp_path: Path, case: dict[str, Any], field: str) -> None:
    case = {"rules": {"preset": "partnership"}, **case}
    good = {**TALLY_CASE, "name": "fine"}
    path = tmp_path / "malformed.json"
    path.write_text(json.dumps([good, case]), encoding="utf-8")
    result = _run(path)
    assert result.returncode == 2
    assert case["name"] in result.stderr
    assert field in result.stderr


def test_cli_exit_2_for_a_file_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"name": "half a case", "rules": ', encoding="utf-8")
    result = _run(FILES[0], path)
    assert result.returncode == 2
    assert "broken.json" in result.stderr
