"""The partitions of the game stream: a fixed function of a game's id, and the names of each
partition's stream and subjects."""

from __future__ import annotations

from collections import Counter

import pytest

from contracts.partitions import (
    LEGACY_STREAM,
    ONE,
    PARTITION_KEY,
    PARTITIONS_KEY,
    Partitions,
    fnv1a_32,
    partition_of,
)

FIXED = {
    # game id: (partition of 3, partition of 8)
    "c66b4a1393d821f7": (1, 1),
    "0000000000000000": (0, 5),
    "ffffffffffffffff": (1, 5),
    "league-north-r1-t1": (1, 0),
}
"""Worked out once and never to change: a game's partition is fixed for the life of a
deployment, so the function may not change with a release."""


def test_the_hash_is_fnv_1a_32_as_go_computes_it() -> None:
    # Go: fnv.New32a() over "", "a", "foobar" (the reference vectors of the FNV authors)
    assert [fnv1a_32(b""), fnv1a_32(b"a"), fnv1a_32(b"foobar")] == [
        0x811C9DC5,
        0xE40C292C,
        0xBF9CF968,
    ]


@pytest.mark.parametrize(("game_id", "expected"), FIXED.items())
def test_a_games_partition_is_fixed_by_its_id(game_id: str, expected: tuple[int, int]) -> None:
    assert (partition_of(game_id, 3), partition_of(game_id, 8)) == expected
    assert Partitions(3).of(game_id) == expected[0]
    assert ONE.of(game_id) == 0


def test_games_spread_evenly_over_the_partitions() -> None:
    counts = Counter(Partitions(3).of(f"{n:016x}") for n in range(3000))
    assert set(counts) == {0, 1, 2}
    assert all(900 < count < 1100 for count in counts.values())


def test_one_partition_is_the_layout_of_every_earlier_deployment() -> None:
    assert ONE.streams == (LEGACY_STREAM,)
    assert ONE.game_subject("g1") == "spades.games.g1"
    assert ONE.command_subject("g1") == "spades.commands.g1"
    assert ONE.subjects(0) == "spades.games.*"
    assert ONE.mismatch(0, None) is None  # its stream was made before metadata


def test_each_partition_has_a_stream_and_subjects_of_its_own() -> None:
    layout = Partitions(3)
    assert layout.streams == ("SPADES_GAMES_0", "SPADES_GAMES_1", "SPADES_GAMES_2")
    game = "c66b4a1393d821f7"  # partition 1
    assert layout.game_subject(game) == f"spades.part.1.games.{game}"
    assert layout.command_subject(game) == f"spades.part.1.commands.{game}"
    assert layout.partition_of_stream("SPADES_GAMES_2") == 2
    assert layout.partition_of_stream(LEGACY_STREAM) is None
    # no partition's subjects overlap another's, nor the one-partition stream's
    assert not any(s.startswith("spades.games.") for s in map(layout.subjects, layout.indexes))


def test_a_partition_stream_says_which_it_is_and_of_how_many() -> None:
    layout = Partitions(3)
    assert layout.metadata(2) == {PARTITION_KEY: "2", PARTITIONS_KEY: "3"}
    assert layout.mismatch(2, layout.metadata(2)) is None
    assert "4 partitions" in (layout.mismatch(2, Partitions(4).metadata(2)) or "")
    assert "partition 1" in (layout.mismatch(2, layout.metadata(1)) or "")
    assert "names no partitions" in (layout.mismatch(0, None) or "")
    assert ONE.mismatch(0, layout.metadata(0)) is not None


@pytest.mark.parametrize("count", [0, -1, 1025])
def test_a_layout_has_one_to_1024_partitions(count: int) -> None:
    with pytest.raises(ValueError, match="partitions must be"):
        Partitions(count)
