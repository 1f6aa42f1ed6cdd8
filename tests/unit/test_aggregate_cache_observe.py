"""What a cache takes from the stream it follows: only the next commit of a held, idle game."""

from __future__ import annotations

import random

from benchmarks.projections import GameLog, play_game
from contracts.wire import game_subject
from domain.game import fold
from services.runtime.game_cache import GameCache, LoadedGame
from services.runtime.game_stream import GAMES
from services.runtime.memory_store import MemoryEventStore

GAME = play_game(random.Random(3), "observed", max_hands=1)
SUBJECT = game_subject(GAME.game_id)


async def held_game() -> tuple[GameCache, LoadedGame]:
    cache = GameCache(MemoryEventStore(GAMES))  # empty: loads read nothing
    return cache, await cache.get(GAME.game_id)


def observe(cache: GameCache, log: GameLog, index: int) -> bool:
    """Show the cache commit ``index`` of the log, at stream sequence ``index + 1``."""
    return cache.observe(index + 1, SUBJECT, log.payloads[index])


async def test_the_next_commits_are_taken_in_order_and_fold_to_the_game() -> None:
    cache, held = await held_game()
    assert all(observe(cache, GAME, index) for index in range(len(GAME.payloads)))
    assert held.state == fold(GAME.events)
    assert held.sequence == len(GAME.payloads)
    assert set(held.answered) == {commit.command_id for commit in GAME.commits}


async def test_a_commit_after_a_gap_is_left_for_the_catch_up() -> None:
    cache, held = await held_game()
    assert observe(cache, GAME, 0)
    assert not observe(cache, GAME, 2)
    assert (held.version, held.sequence) == (GAME.commits[0].version, 1)


async def test_a_commit_seen_again_changes_nothing() -> None:
    cache, held = await held_game()
    assert observe(cache, GAME, 0)
    assert observe(cache, GAME, 1)
    assert not observe(cache, GAME, 1)
    assert not observe(cache, GAME, 0)
    assert (held.version, held.sequence) == (GAME.commits[1].version, 2)


async def test_a_game_a_command_holds_is_left_alone() -> None:
    """The command's own append (or its failure) decides what comes next, not the follower."""
    cache, held = await held_game()
    async with held.lock:
        assert not observe(cache, GAME, 0)
    assert held.state is None
    assert observe(cache, GAME, 0)


async def test_games_not_in_memory_and_other_streams_are_ignored() -> None:
    cache = GameCache(MemoryEventStore(GAMES))  # empty: loads read nothing
    assert not observe(cache, GAME, 0)
    assert not cache.observe(1, "spades.leagues.observed", GAME.payloads[0])
    assert cache.peek(GAME.game_id) is None
