"""An upgrade keeps every game: this version started on the data an earlier release left.

The earlier release (:data:`RELEASE`, unpacked from this checkout's history by
:mod:`tests.e2e.release`) runs ``spades up`` on a data directory and leaves in it finished
games, games in progress (one on a clock, one still waiting for a player) and a league in the
middle of its first round, all made over its HTTP API by a platform. It is stopped as a service
manager stops it (SIGTERM), and this version's ``spades up`` is started on the same directory:
every game must read as it did (its events, its state, its place in the list, its scoreboard
and hands), audit clean, and go on with the seat tokens the earlier release issued; the clocked
game's timeout is fired by this version at its deadline; the league's round ends once its last
table does, and the next one starts. Against the data directory's SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from services.client import (
    EventRecord,
    GameList,
    GameSummary,
    PublicState,
    Scoreboard,
    ScoredHandRecord,
    SeatTaken,
    SpadesClient,
)
from services.client.leagues import LeagueClient
from services.store.database import open_store
from tests.conftest import POSTGRES_VARIABLE
from tests.e2e.players import NAMES, Table, seat_players
from tests.e2e.release import ReleaseUnavailable, unpack
from tests.e2e.stack import Stack
from tests.e2e.test_recovery import stop, until_caught_up

pytestmark = pytest.mark.e2e

RELEASE = "6e0e73086535e10b7a347c4db206d58c1ecb3cf0"
"""The earlier release upgraded from: the last one before the game stream's partitions. Move it
forward as releases go (it may need no package this checkout does not: tests/e2e/release.py)."""
PLATFORM_KEY = "upgrade-platform-key"
ONE_HAND = {"preset": "partnership", "max_hands": 1}
TWO_PLAYER = {"preset": "two-player", "max_hands": 1}
TURN_S = 15.0
"""The clocked game's turn: longer than the earlier release takes from making the game to having
stopped (so its timers cannot fire a timeout), short enough to come due soon after this version
starts."""
CLOCK = {"turn_s": TURN_S, "on_timeout": "auto"}
TIMEOUT_WAIT_S = TURN_S + 60.0
ROUND_END_WAIT_S = 30.0
POLL_S = 0.1


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The earlier release's tree, ready to run; the test is skipped when it cannot be."""
    try:
        return unpack(RELEASE, tmp_path_factory.mktemp("release"))
    except ReleaseUnavailable as why:
        pytest.skip(str(why))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def read_models(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, str]]:
    """The ``SPADES_*`` settings that choose the read models' database: none (the SQLite file
    in the data directory, as ``spades up`` keeps it), or a new PostgreSQL schema."""
    base = os.environ.get(POSTGRES_VARIABLE)
    if request.param == "sqlite":
        yield {}
        return
    if not base:
        pytest.skip(f"{POSTGRES_VARIABLE} is not set: no PostgreSQL to test against")
    schema = f"test_upgrade_{secrets.token_hex(4)}"
    yield {"SPADES_DATABASE_URL": f"{base}{'&' if '?' in base else '?'}schema={schema}"}
    dropper = open_store(base)
    try:
        async with dropper.writing() as conn:
            await conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))
    finally:
        await dropper.close()


@dataclass
class Read:
    """What a game reads as: its events, its public state, and its read models once finished."""

    events: list[EventRecord]
    state: PublicState
    scoreboard: Scoreboard | None = None
    hands: list[ScoredHandRecord] | None = None


async def history(client: SpadesClient, game_id: str, after: int = 0) -> list[EventRecord]:
    """Every event of the game after version ``after``, as the public sees them."""
    found: list[EventRecord] = []
    while page := await client.events(game_id, after=after):
        found += page
        after = page[-1].version
    return found


async def read(client: SpadesClient, game_id: str) -> Read:
    state = await client.state(game_id)
    seen = Read(await history(client, game_id), state)
    if state.status == "finished":
        seen.scoreboard = await client.scoreboard(game_id, min_version=state.version)
        seen.hands = await client.hands(game_id, min_version=state.version)
    return seen


async def listed(client: SpadesClient) -> dict[str, GameSummary]:
    """The platform's game list, by game id."""
    page: GameList = await client.games(limit=100)
    assert page.next_cursor is None
    return {game.game_id: game for game in page.games}


async def clocked_table(client: SpadesClient, rng: random.Random) -> Table:
    """A partnership game on :data:`CLOCK`, every seat taken (so its first turn is running)."""
    game = await client.create_game(ONE_HAND, entropy=rng.randbytes(8).hex(), clock=CLOCK)
    seats: list[SeatTaken] = []
    for number in range(len(game.seats)):
        seats.append(await client.take_seat(game.game_id, NAMES[number], seat=number))
    return Table(client, game.game_id, seats, rng)


async def first_event_after(client: SpadesClient, game_id: str, version: int) -> EventRecord:
    """The game's first event after ``version``, once one is there (polled: it is committed by
    another process, at a deadline)."""
    deadline = time.monotonic() + TIMEOUT_WAIT_S
    while not (found := await client.events(game_id, after=version, limit=1)):
        assert time.monotonic() < deadline, f"nothing after version {version} of {game_id}"
        await asyncio.sleep(POLL_S)
    return found[0]


async def round_finished(leagues: LeagueClient, league_id: str, number: int) -> None:
    deadline = time.monotonic() + ROUND_END_WAIT_S
    while not (await leagues.round(league_id, number)).finished:
        assert time.monotonic() < deadline, f"round {number} of {league_id} never ended"
        await asyncio.sleep(POLL_S)


def same_reads(before: Mapping[str, Read], after: Mapping[str, Read]) -> None:
    for game_id, was in before.items():
        now = after[game_id]
        assert now.events == was.events, f"{game_id}'s history reads otherwise"
        assert now.state == was.state, f"{game_id}'s state reads otherwise"
        assert now.scoreboard == was.scoreboard, f"{game_id}'s scoreboard reads otherwise"
        assert now.hands == was.hands, f"{game_id}'s hands read otherwise"


async def test_this_version_started_on_an_earlier_releases_data_keeps_every_game(
    release: Path, read_models: dict[str, str], tmp_path: Path
) -> None:
    rng = random.Random("an upgrade")
    data = tmp_path / "data"
    earlier = Stack(data, api_keys=PLATFORM_KEY, env=read_models, source=release)
    await asyncio.to_thread(earlier.start)
    try:
        async with SpadesClient(earlier.base_url, api_key=PLATFORM_KEY) as client:
            finished = [
                await seat_players(client, ONE_HAND, rng),
                await seat_players(client, TWO_PLAYER, rng),
            ]
            for table in finished:
                await table.play_out()
            in_progress = await seat_players(client, ONE_HAND, rng)
            for _ in range(23):
                await in_progress.step()
            waiting = await client.create_game(TWO_PLAYER)
            waiting_seat = await client.take_seat(waiting.game_id, "wanda")
            leagues = LeagueClient(client)
            league = await leagues.create_league(
                "North", TWO_PLAYER, ["ann", "bob", "cy", "dee"], rounds=2
            )
            first_round = await leagues.start_round(league.league_id, idempotency_key="round-1")
            league_tables = [Table(client, t.game_id, t.seats, rng) for t in first_round.tables]
            await league_tables[0].play_out()
            for _ in range(9):
                await league_tables[1].step()
            await until_caught_up(earlier.base_url)
            list_before = await listed(client)
            before = {game_id: await read(client, game_id) for game_id in list_before}

            clock_started = time.monotonic()  # before every commit that could start a turn
            clocked = await clocked_table(client, rng)
            for _ in range(2):
                await clocked.step()
            clocked_before = await history(client, clocked.game_id)
    finally:
        await stop(earlier)
    assert time.monotonic() < clock_started + TURN_S, (
        f"the earlier release stopped over {TURN_S} s after the clocked game was made: its "
        "timers may have fired the timeout this test expects of this version"
    )
    assert len(before) == 6
    assert sum(seen.state.status == "finished" for seen in before.values()) == 3

    current = Stack(data, api_keys=PLATFORM_KEY, env=read_models)
    await asyncio.to_thread(current.start)
    try:
        await until_caught_up(current.base_url)
        async with SpadesClient(current.base_url, api_key=PLATFORM_KEY) as client:
            games = await listed(client)
            assert set(games) == set(before) | {clocked.game_id}
            assert {game_id: games[game_id] for game_id in list_before} == list_before
            same_reads(before, {game_id: await read(client, game_id) for game_id in before})
            for game_id in games:
                audit = await client.audit(game_id)
                assert audit.ok, (game_id, audit)

            # The clock carried over: the first thing to happen to the clocked game is its
            # timeout, fired by this version's timers (the earlier release stopped before it
            # was due); then its players go on with the tokens they hold.
            assert (await history(client, clocked.game_id))[: len(clocked_before)] == clocked_before
            timeout = await first_event_after(client, clocked.game_id, clocked_before[-1].version)
            assert timeout.type == "timed_out", timeout

            # Every seat token the earlier release issued acts in this version.
            for table in (in_progress, clocked, league_tables[1]):
                carried_on = Table(client, table.game_id, table.seats, rng)
                assert (await carried_on.play_out()).status == "finished"
            second = await client.take_seat(waiting.game_id, "walt")
            seats = sorted([waiting_seat, second], key=lambda seat: seat.seat)
            assert (await Table(client, waiting.game_id, seats, rng).play_out()).winners

            leagues = LeagueClient(client)
            await round_finished(leagues, league.league_id, 1)
            assert (await leagues.league(league.league_id)).rounds_finished == 1
            second_round = await leagues.start_round(league.league_id, idempotency_key="round-2")
            assert second_round.round == 2
            for game_id in games:
                audit = await client.audit(game_id)
                assert audit.ok, (game_id, audit)
    finally:
        await stop(current)
