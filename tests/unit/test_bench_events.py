"""``spades bench events``: its parts (Kendall's tau, a board dealt alike at every table) and
its command, on an event small enough for a unit test (the figures themselves are the
benchmark's, in benchmarks/RESULTS.md)."""

from __future__ import annotations

import doctest
import random

import msgspec
from typer.testing import CliRunner

import benchmarks.events
from benchmarks.events import DUPLICATE, SWISS, Erring, kendall_tau, play_hand
from domain.boards import board_deal, board_dealer
from domain.rules import resolve_rules
from domain.shuffle import DealtHands
from services.cli.main import app


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(benchmarks.events).failed == 0


def test_kendall_tau_counts_each_pair_once() -> None:
    assert kendall_tau([0, 1, 2, 3], [1, 0, 2, 3]) == (5 - 1) / 6
    assert kendall_tau([0, 1, 2, 3], [3, 1, 2, 0]) == (1 - 5) / 6  # only 1 before 2 holds


def test_a_board_played_by_the_same_players_scores_the_same_at_every_table() -> None:
    rules = resolve_rules({"preset": "partnership"})
    dealt = board_deal(rules, b"board seven", 7)
    scores = {
        play_hand(
            {"preset": "partnership"},
            [Erring(0.0, random.Random(table)) for _ in range(4)],
            DealtHands(dealt.hands),
            board_dealer(rules, 7),
        )
        for table in range(3)
    }
    assert len(scores) == 1, scores  # no error, the same cards: the bot plays them alike


def test_the_command_prints_both_formats_on_the_same_deals() -> None:
    small = ["--pairs", "4", "--rounds", "3", "--deals", "1", "--events", "2", "--json"]
    said = CliRunner().invoke(app, ["bench", "events", *small])
    assert said.exit_code == 0, said.output
    figures = msgspec.json.decode(said.output.strip().splitlines()[-1])
    assert figures["errors"] == [0.0, 0.167, 0.333, 0.5]
    assert [row["format"] for row in figures["formats"]] == [SWISS, DUPLICATE]
    for row in figures["formats"]:
        assert row["deals_each"] == 3
        assert row["events"] == 2
        assert -1 <= row["tau_min"] <= row["tau_mean"] <= row["tau_max"] <= 1
