"""The engine's metrics (services/engine/metrics.py) count what its handler does: each command
answered once, by how it ended, timed; each append that met another commit. On the in-memory
event store, two engines sharing it as two processes share a stream. The registry is the
process's own, so each test reads how far a series moved, not where it stands."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from prometheus_client import REGISTRY, CollectorRegistry

from contracts.wire import CommandRequest, CreateGameRequest, RequestBody, TakeSeatRequest
from services.engine.engine import Engine
from services.engine.handler import MAX_ATTEMPTS
from services.engine.metrics import EngineTally, outcome_of
from services.runtime.event_store import AppendConflict
from services.runtime.game_stream import GAMES
from services.runtime.memory_store import MemoryEventStore

CREATE = CreateGameRequest(rules={"preset": "partnership"})


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class Readings:
    """Where the engine's series stand now, to tell how far a test moved them."""

    def __init__(self) -> None:
        self.before = self.now()

    @staticmethod
    def now() -> dict[str, float]:
        outcomes = ("accepted", "refused", "malformed", "unavailable")
        return {
            **{o: sample("spades_engine_commands_total", outcome=o) for o in outcomes},
            "conflicts": sample("spades_engine_conflicts_total"),
            "timed": sample("spades_engine_decision_seconds_count"),
            "seconds": sample("spades_engine_decision_seconds_sum"),
        }

    def moved(self) -> dict[str, float]:
        now = self.now()
        return {
            name: now[name] - self.before[name] for name in now if now[name] != self.before[name]
        }


def make_engine(store: MemoryEventStore[Any]) -> Engine:
    return Engine(store, clock=lambda: "2026-12-01T12:00:00.000Z", seed=lambda: bytes(range(32)))


async def send(engine: Engine, command_id: str, body: RequestBody, game: str = "g1") -> None:
    request = CommandRequest(command_id=command_id, game_id=game, body=body)
    await engine.handle(msgspec.json.encode(request))


@pytest.fixture
def store() -> MemoryEventStore[Any]:
    return MemoryEventStore(GAMES)


async def test_each_command_is_counted_once_by_its_outcome_and_timed(
    store: MemoryEventStore[Any],
) -> None:
    engine = make_engine(store)
    readings = Readings()
    await send(engine, "c1", TakeSeatRequest(player="ann"))  # no such game yet: refused
    await send(engine, "c2", CREATE)
    await send(engine, "c3", TakeSeatRequest(player="ann"))
    await send(engine, "c3", TakeSeatRequest(player="ann"))  # a retry: its first answer again
    await engine.handle(b"not a command")
    moved = readings.moved()
    seconds = moved.pop("seconds")
    assert moved == {"accepted": 3, "refused": 1, "malformed": 1, "timed": 5}
    assert 0 < seconds < 5


async def test_a_conflict_is_counted_and_the_command_once(store: MemoryEventStore[Any]) -> None:
    one, other = make_engine(store), make_engine(store)
    await send(one, "c1", CREATE)
    await send(other, "c2", TakeSeatRequest(player="ann"))  # one's copy is now stale
    readings = Readings()
    await send(one, "c3", TakeSeatRequest(player="bob"))  # conflicts, reloads, decides again
    moved = readings.moved()
    moved.pop("seconds")
    assert moved == {"accepted": 1, "conflicts": 1, "timed": 1}


class AlwaysBehind(MemoryEventStore[Any]):
    """A store on which another writer always got there first (but for the game's creation)."""

    async def append(self, key: str, data: bytes, *, expected: int, command_id: str) -> int:
        if self.appends >= 1:
            self.appends += 1
            raise AppendConflict("another commit got there first")
        return await super().append(key, data, expected=expected, command_id=command_id)


async def test_a_command_given_up_after_endless_conflicts_is_unavailable() -> None:
    engine = make_engine(AlwaysBehind(GAMES))
    await send(engine, "c1", CREATE)
    readings = Readings()
    await send(engine, "c2", TakeSeatRequest(player="ann"))
    moved = readings.moved()
    moved.pop("seconds")
    assert moved == {"unavailable": 1, "conflicts": MAX_ATTEMPTS, "timed": 1}


@pytest.mark.parametrize(
    ("ok", "code", "outcome"),
    [
        (True, None, "accepted"),
        (False, "malformed", "malformed"),
        (False, "unavailable", "unavailable"),
        (False, "game_not_found", "refused"),
        (False, "not_your_turn", "refused"),
        (False, None, "refused"),
    ],
)
def test_a_reply_has_one_of_four_outcomes(ok: bool, code: str | None, outcome: str) -> None:
    assert outcome_of(ok, code) == outcome


def test_the_tally_reads_as_a_prometheus_histogram_whose_buckets_hold_their_bounds() -> None:
    tally = EngineTally(buckets=(0.001, 0.01))
    for seconds in (0.0005, 0.001, 0.002, 0.01, 3.0):  # a time on a bound is in that bucket
        tally.answered(seconds, "accepted")
    tally.conflicted()
    registry = CollectorRegistry()
    registry.register(tally)

    def read(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    buckets = [read("spades_engine_decision_seconds_bucket", le=le) for le in ("0.001", "0.01")]
    assert buckets == [2, 4]
    assert read("spades_engine_decision_seconds_bucket", le="+Inf") == 5
    assert read("spades_engine_decision_seconds_count") == 5
    assert read("spades_engine_decision_seconds_sum") == pytest.approx(3.0135)
    assert read("spades_engine_conflicts_total") == 1
    assert read("spades_engine_commands_total", outcome="accepted") == 5
    assert read("spades_engine_commands_total", outcome="refused") == 0
