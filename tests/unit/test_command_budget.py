"""A platform's engine commands a minute (services/engine/budget.py), in the game engine as it
runs on the in-memory event store: a player's command past the budget is refused
``rate_limited`` and not recorded, the service's own commands (a round's game and its seatings,
a timeout) are admitted and counted, and another platform's budget is its own."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.wire import (
    ActRequest,
    CommandReply,
    CommandRequest,
    CreateGameRequest,
    RequestBody,
    TakeSeatRequest,
    TimeOutRequest,
)
from domain.clock import Clock
from services.engine.budget import CommandBudget
from services.engine.engine import Engine
from services.runtime.game_stream import GAMES
from services.runtime.memory_store import MemoryEventStore

PER_MINUTE = 600
"""A burst of 60 commands, refilled at 10 a second."""
BURST = PER_MINUTE // 10
RULES = {"preset": "partnership"}


class Clockwork:
    """The budget's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clockwork:
    return Clockwork()


@pytest.fixture
def store() -> MemoryEventStore[Any]:
    return MemoryEventStore(GAMES)


@pytest.fixture
def engine(store: MemoryEventStore[Any], clock: Clockwork) -> Engine:
    return Engine(
        store,
        clock=lambda: "2026-12-01T12:00:00.000Z",
        seed=lambda: bytes(range(32)),
        budget=CommandBudget(PER_MINUTE, clock=clock),
    )


async def send(engine: Engine, command_id: str, body: RequestBody, game: str) -> CommandReply:
    request = CommandRequest(command_id=command_id, game_id=game, body=body)
    return await engine.answer(msgspec.json.encode(request))


async def seated_game(
    engine: Engine, game: str, platform: str | None, **options: Any
) -> list[CommandReply]:
    """A game of ``platform``, every seat taken: five commands."""
    replies = [
        await send(
            engine, f"{game}-c", CreateGameRequest(rules=RULES, platform=platform, **options), game
        )
    ]
    for seat in range(4):
        replies.append(
            await send(
                engine, f"{game}-s{seat}", TakeSeatRequest(player=f"p{seat}", seat=seat), game
            )
        )
    return replies


def bid(n: int) -> ActRequest:
    return ActRequest(seat=n % 4, action={"type": "bid", "bid": 3})


async def test_a_players_commands_past_the_budget_are_refused_unrecorded(
    engine: Engine, store: MemoryEventStore[Any], clock: Clockwork
) -> None:
    assert all(reply.ok for reply in await seated_game(engine, "g1", "acme"))  # five spent
    stored = len(await store.read("g1"))
    answers = [await send(engine, f"a{n}", bid(n), "g1") for n in range(BURST - 5)]
    assert all(reply.code != "rate_limited" for reply in answers)  # decided: accepted or refused
    refused = await send(engine, "late", bid(0), "g1")
    assert (refused.ok, refused.code) == (False, "rate_limited")
    assert "SPADES_MAX_COMMANDS_PER_MINUTE" in refused.detail
    assert len(await store.read("g1")) == stored + BURST - 5  # the refusal is nowhere
    # A command answered already gets its first answer, budget or not.
    assert await send(engine, "a0", bid(0), "g1") == answers[0]
    # Another platform's budget is its own; a game of no platform has none.
    assert all(reply.ok for reply in await seated_game(engine, "g2", "rival"))
    assert all(reply.ok for reply in await seated_game(engine, "g3", None))
    # A tenth of a second later, one command a tenth of a second is allowed again.
    clock.now += 0.1
    assert (await send(engine, "late", bid(0), "g1")).code != "rate_limited"
    assert (await send(engine, "later", bid(1), "g1")).code == "rate_limited"


async def test_the_services_own_commands_are_admitted_and_counted(
    engine: Engine, clock: Clockwork
) -> None:
    clocked = {"clock": Clock(turn_s=3.0, on_timeout="auto")}
    # A round's table (a game of a league, seated by the round) past the budget: all admitted.
    for n in range(BURST // 5 + 2):
        replies = await seated_game(engine, f"t{n}", "acme", league="night", **clocked)
        assert all(reply.ok for reply in replies), replies
    # They spent the budget: the platform's own command is the one refused.
    assert (await send(engine, "own", bid(0), "t0")).code == "rate_limited"
    # A timeout is admitted whatever the budget (decided: here, its deadline not reached).
    timeout = TimeOutRequest(seat=0, expected_version=5)
    assert (await send(engine, "tick", timeout, "t0")).code != "rate_limited"
    # The debt stops one burst below empty: a burst's refill and one command later, admitted.
    for n in range(10 * BURST):
        await send(engine, f"tick{n}", TimeOutRequest(seat=0, expected_version=5), "t0")
    clock.now += (BURST + 1) / (PER_MINUTE / 60)
    assert (await send(engine, "own", bid(0), "t0")).code != "rate_limited"


def test_a_bucket_refills_at_its_rate_up_to_a_tenth_of_a_minute(clock: Clockwork) -> None:
    budget = CommandBudget(PER_MINUTE, clock=clock)
    assert [budget.draw("acme") for _ in range(BURST)] == [0] * BURST
    assert budget.draw("acme") == 1  # one command comes back in a tenth of a second: 1 s
    clock.now += 3600
    assert [budget.draw("acme") for _ in range(BURST)] == [0] * BURST
    assert budget.draw("acme") > 0
    for _ in range(10 * BURST):
        budget.charge("acme")
    assert budget.draw("acme") == 7  # (60 of debt + 1) / 10 a second, rounded up
