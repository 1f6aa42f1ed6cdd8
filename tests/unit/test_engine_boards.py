"""The engines' board seeds: one per board of each league, the same from every engine of a
stack (the same key), another for another stack, and never an HMAC under the stack's key itself
(a seed is published once revealed; seat tokens are signed with that key)."""

from __future__ import annotations

import hashlib
import hmac

from domain.shuffle import commitment
from services.engine.boards import board_seed, board_seeds, board_source


def test_every_engine_of_a_stack_derives_the_same_board() -> None:
    assert board_seed(b"key", "north", 3) == board_seed(b"key", "north", 3)
    assert len(board_seed(b"key", "north", 3)) == 32


def test_boards_leagues_and_stacks_differ() -> None:
    seeds = {
        board_seed(key, league, board)
        for key in (b"key", b"other key")
        for league in ("north", "south", "north-1")
        for board in (1, 2, 11, 12)
    }
    assert len(seeds) == 2 * 3 * 4


def test_a_seed_is_not_an_hmac_under_the_stack_key() -> None:
    direct = hmac.new(b"key", b"north:1", hashlib.sha256).digest()
    assert board_seed(b"key", "north", 1) != direct


def test_the_deal_source_gives_each_board_its_seed() -> None:
    source = board_source(b"key", "north")
    assert source.of(4) == board_seed(b"key", "north", 4)
    assert board_seeds(b"key", "north", [1, 2]) == {
        1: board_seed(b"key", "north", 1),
        2: board_seed(b"key", "north", 2),
    }
    assert commitment(source.of(1)) != commitment(source.of(2))
