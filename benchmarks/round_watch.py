"""What the engines' round watch costs per game commit, against decoding every commit.

Every engine's round watch is handed every commit of the game stream (its share of them): it
must tell the few that end a league table's game from all the others. It reads the subject (is
this a league's table?) and looks for ``"game_ended"`` in the bytes before it decodes anything
(:func:`services.engine.round_watch.finish_request`). The peer, measured in the same run on the
same commits, is the plain way: decode every commit (:func:`contracts.wire.read_commit`) and
look at its events. Half the games are league tables, half are not, as on a busy service.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import msgspec

from benchmarks.projections import play_game
from contracts.wire import read_commit
from domain.events import GameEnded
from services.engine.round_watch import finish_request


class RoundWatchFigures(msgspec.Struct):
    games: int
    commits: int
    ending: int
    """Commits that end a league table's game: the ones that become a league command."""
    triage_ns_per_commit: float
    decode_ns_per_commit: float
    ratio: float
    """The peer's time over the watch's: how many times cheaper the watch's triage is."""


def commits(games: int, seed: int) -> list[tuple[str, bytes]]:
    """The commits of ``games`` finished one-hand partnership games, half of them a league's
    tables (ids ``bench-<round>-<table>``), as (game id, bytes)."""
    rng = random.Random(seed)
    found: list[tuple[str, bytes]] = []
    for number in range(games):
        league = number % 2 == 0
        game_id = f"bench-{number // 64 + 1}-{number % 64 + 1}" if league else f"{number:016x}"
        log = play_game(
            rng, game_id, preset="partnership", max_hands=1, league="bench" if league else None
        )
        found += [(game_id, data) for data in log.payloads]
    return found


def _best(work: Callable[[], int], rounds: int) -> tuple[float, int]:
    best, result = float("inf"), 0
    for _ in range(rounds):
        start = time.perf_counter_ns()
        result = work()
        best = min(best, time.perf_counter_ns() - start)
    return best, result


def run(games: int = 200, seed: int = 1, rounds: int = 5) -> RoundWatchFigures:
    stream = commits(games, seed)

    def triage() -> int:
        return sum(finish_request(game_id, data) is not None for game_id, data in stream)

    def decode() -> int:
        return sum(
            any(isinstance(event, GameEnded) for event in read_commit(data).events)
            and game_id.startswith("bench-")
            for game_id, data in stream
        )

    watch_ns, ending = _best(triage, rounds)
    peer_ns, peer_ending = _best(decode, rounds)
    assert ending == peer_ending == games // 2 + games % 2, (ending, peer_ending)
    return RoundWatchFigures(
        games=games,
        commits=len(stream),
        ending=ending,
        triage_ns_per_commit=watch_ns / len(stream),
        decode_ns_per_commit=peer_ns / len(stream),
        ratio=peer_ns / watch_ns,
    )
