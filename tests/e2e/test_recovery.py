"""The whole stack across the loss of its NATS store, and across a backup and a restore.

A stack whose NATS store is replaced by a fresh one while its read-model database is kept must
refuse the new stream (``/readyz`` 503 naming the cause, nothing of the new stream applied),
then serve it whole after ``spades projections rebuild --all``. A backup restored into an empty
NATS and an empty database gives a stack whose read models equal the originals, whose games all
audit clean, and whose games in progress go on with the seat tokens issued before the backup.
Both against SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import shutil
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from services.client import SpadesClient
from services.client.leagues import LeagueClient
from services.runtime.nats_server import free_port
from services.runtime.settings import LOG_KEY_FILENAME, Settings
from services.runtime.stream_identity import REBUILD_COMMAND
from services.store.database import open_store
from tests.e2e.players import Table, seat_players
from tests.e2e.stack import Stack

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import POSTGRES_VARIABLE, snapshot  # noqa: E402

pytestmark = pytest.mark.e2e

PLATFORM_KEY = "recovery-platform-key"
ONE_HAND = {"preset": "partnership", "max_hands": 1}
TWO_PLAYER = {"preset": "two-player", "max_hands": 1}
CATCH_UP_S = 90.0
COMMAND_TIMEOUT_S = 120.0

DatabaseUrl = Callable[[str], Awaitable[str]]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database_url(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[DatabaseUrl]:
    """Makes the ``SPADES_DATABASE_URL`` of a new, empty read-model database by name: a SQLite
    file, or a PostgreSQL schema of its own (dropped afterwards)."""
    base = os.environ.get(POSTGRES_VARIABLE)
    if request.param == "postgres" and not base:
        pytest.skip(f"{POSTGRES_VARIABLE} is not set: no PostgreSQL to test against")
    made: list[str] = []

    async def new(name: str) -> str:
        if request.param == "sqlite":
            return f"sqlite:///{tmp_path / f'{name}.db'}"
        assert base is not None
        schema = f"test_{name}_{secrets.token_hex(4)}"
        made.append(schema)
        return f"{base}{'&' if '?' in base else '?'}schema={schema}"

    yield new
    if made and base is not None:
        dropper = open_store(base)
        try:
            async with dropper.writing() as conn:
                for schema in made:
                    await conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))
        finally:
            await dropper.close()


async def readiness(base_url: str) -> tuple[int, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=base_url, timeout=5.0) as http:
        answer = await http.get("/readyz")
    return answer.status_code, answer.json()


async def until_caught_up(base_url: str) -> None:
    """Poll ``/readyz`` until it answers 200 with every read model at the end of the stream."""
    deadline = time.monotonic() + CATCH_UP_S
    while True:
        status, body = await readiness(base_url)
        if status == 200 and not any(body["projections"].values()):
            return
        assert time.monotonic() < deadline, f"not caught up after {CATCH_UP_S} s: {body}"
        await asyncio.sleep(0.1)


async def until_refused(base_url: str) -> dict[str, Any]:
    """Poll ``/readyz`` until it answers 503 because the read models refuse the stream."""
    deadline = time.monotonic() + CATCH_UP_S
    while True:
        status, body = await readiness(base_url)
        if status == 503 and REBUILD_COMMAND in body.get("detail", ""):
            return body
        assert time.monotonic() < deadline, f"no refusal after {CATCH_UP_S} s: {status} {body}"
        await asyncio.sleep(0.1)


async def stop(stack: Stack) -> None:
    status, left = await asyncio.to_thread(stack.terminate)
    assert status == 0, f"`spades up` exited with {status}:\n{stack.log_tail()}"
    assert not left, f"still running after SIGTERM: {left}"


async def spades(*args: str, env: dict[str, str]) -> str:
    """Run the ``spades`` command with only the ``SPADES_*`` settings given; return stdout."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SPADES")}
    environment.update(env, SPADES_LOG_FORMAT="json")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.cli.main",
        *args,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), COMMAND_TIMEOUT_S)
    assert process.returncode == 0, f"spades {' '.join(args)}: {err.decode()[-4000:]}"
    return out.decode()


async def listed(client: SpadesClient) -> set[str]:
    page = await client.games(limit=100)
    assert page.next_cursor is None
    return {game.game_id for game in page.games}


def logged(stack: Stack, event_start: str) -> list[dict[str, Any]]:
    lines = stack.log_path.read_text(errors="replace").splitlines()
    found = []
    for line in lines:
        if line.startswith("{"):
            entry = json.loads(line)
            if str(entry.get("event", "")).startswith(event_start):
                found.append(entry)
    return found


async def test_a_stack_whose_nats_store_is_replaced_refuses_it_until_rebuilt(
    tmp_path: Path,
) -> None:
    """On SQLite only: what is under test is the NATS store's identity, which the read model
    checks the same way on either database (the rebuild on PostgreSQL is test_projections_rebuild's,
    the whole backup and restore on it this file's other test)."""
    url = f"sqlite:///{tmp_path / 'kept.db'}"
    stack = Stack(tmp_path / "data", api_keys=PLATFORM_KEY, env={"SPADES_DATABASE_URL": url})
    rng = random.Random("a replaced NATS store")
    await asyncio.to_thread(stack.start)
    try:
        async with SpadesClient(stack.base_url, api_key=PLATFORM_KEY) as client:
            before = [await seat_players(client, ONE_HAND, rng) for _ in range(2)]
            for table in before:
                await table.play_out()
            await until_caught_up(stack.base_url)
        await stop(stack)

        shutil.rmtree(stack.data_dir / "nats")
        await asyncio.to_thread(stack.start, until="/healthz")
        async with SpadesClient(stack.base_url, api_key=PLATFORM_KEY) as client:
            after = await seat_players(client, ONE_HAND, rng)
            final = await after.play_out()

            problem = await until_refused(stack.base_url)
            assert problem["code"] == "unavailable"
            assert "belong to stream SPADES_GAMES (created" in problem["detail"]
            assert f"Run `{REBUILD_COMMAND}`" in problem["detail"]
            assert await listed(client) == {table.game_id for table in before}, "none applied"
            refusals = logged(stack, "read model refuses the game stream")
            assert refusals, stack.log_tail()
            assert {entry["fix"] for entry in refusals} == {REBUILD_COMMAND}

            printed = await spades(
                "projections",
                "rebuild",
                "--all",
                env={"SPADES_DATABASE_URL": url, "SPADES_DATA_DIR": str(stack.data_dir)},
            )
            assert "the workers replay the stream" in printed
            await until_caught_up(stack.base_url)

            assert await listed(client) == {after.game_id}
            scoreboard = await client.scoreboard(after.game_id, min_version=final.version)
            assert scoreboard.scores == final.scores, "nothing skipped"
            records = await client.hands(after.game_id, min_version=final.version)
            assert len(records) == final.hand_number
            assert (await client.audit(after.game_id)).ok
    finally:
        await stop(stack)


async def test_a_backup_restored_into_an_empty_deployment_serves_the_same_games(
    database_url: DatabaseUrl, tmp_path: Path
) -> None:
    rng = random.Random("backup and restore")
    nats_port = free_port()
    original_url = await database_url("original")
    original = Stack(
        tmp_path / "original",
        api_keys=PLATFORM_KEY,
        env={"SPADES_DATABASE_URL": original_url, "SPADES_NATS_PORT": str(nats_port)},
    )
    await asyncio.to_thread(original.start)
    try:
        async with SpadesClient(original.base_url, api_key=PLATFORM_KEY) as client:
            finished = await seat_players(client, ONE_HAND, rng)
            await finished.play_out()
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
            league_tables = [
                Table(client, table.game_id, table.seats, rng) for table in first_round.tables
            ]
            await league_tables[0].play_out()
            for _ in range(9):
                await league_tables[1].step()
            await until_caught_up(original.base_url)

        backup = tmp_path / "backup"
        printed = await spades(
            "backup",
            str(backup),
            "--data-dir",
            str(original.data_dir),
            # The read-model database too: the audit log and the webhook endpoints are in it.
            env={
                "SPADES_NATS_URL": f"nats://127.0.0.1:{nats_port}",
                "SPADES_DATABASE_URL": original_url,
            },
        )
        assert "backup complete" in printed
    finally:
        await stop(original)
    key = Settings(data_dir=original.data_dir, secret_key=None).signing_key()  # the backup's
    store = open_store(original_url)
    try:
        originals = await snapshot(store, key)
    finally:
        await store.close()

    restored_dir = tmp_path / "restored"
    restored_url = await database_url("restored")
    printed = await spades(
        "restore",
        str(backup),
        "--data-dir",
        str(restored_dir),
        env={"SPADES_DATABASE_URL": restored_url},  # where the audit log goes back
    )
    assert "restore complete" in printed
    assert "audit log:" in printed
    # The log's private key is the operator's to carry (the backup holds its public key only).
    shutil.copy(original.data_dir / LOG_KEY_FILENAME, restored_dir / LOG_KEY_FILENAME)
    restored = Stack(restored_dir, api_keys=PLATFORM_KEY, env={"SPADES_DATABASE_URL": restored_url})
    await asyncio.to_thread(restored.start)
    try:
        await until_caught_up(restored.base_url)
        store = open_store(restored_url)
        try:
            assert await snapshot(store, key) == originals, "the read models equal the originals"
        finally:
            await store.close()

        async with SpadesClient(restored.base_url, api_key=PLATFORM_KEY) as client:
            games = await listed(client)
            assert len(games) == 5
            for game_id in games:
                audit = await client.audit(game_id)
                assert audit.ok, audit

            # The games in progress go on, with the tokens issued before the backup.
            for table in (in_progress, league_tables[1]):
                moved = Table(client, table.game_id, table.seats, rng)
                assert (await moved.play_out()).status == "finished"
            second = await client.take_seat(waiting.game_id, "walt")
            assert second.seat != waiting_seat.seat
            seats = sorted([waiting_seat, second], key=lambda seat: seat.seat)
            assert (await Table(client, waiting.game_id, seats, rng).play_out()).winners
            leagues = LeagueClient(client)
            second_round = await leagues.start_round(league.league_id, idempotency_key="round-2")
            assert second_round.round == 2
            for game_id in games:
                assert (await client.audit(game_id)).ok
    finally:
        await stop(restored)
