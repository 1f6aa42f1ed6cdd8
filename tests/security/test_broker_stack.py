"""The broker's credentials in a stack as ``spades up`` runs it: each service with its own, none
on a command line or in a log, and the operator's tools finding theirs in the data directory."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import aclosing
from pathlib import Path

import pytest

from services.client import SpadesClient
from services.runtime.broker_users import ADMIN, BROKER_USERS
from tests.e2e.players import PRESETS, seat_players
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

SERVICES = ("engine", "projections", "gateway")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("broker-stack") / "data")
    running.start()
    yield running
    status, left = running.terminate()
    assert (status, left) == (0, [])


def environment_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {key.decode(): value.decode(errors="replace") for key, value in pairs}


def seeds(stack: Stack) -> dict[str, str]:
    directory = stack.data_dir / "nats" / "credentials"
    return {user: (directory / f"{user}.nk").read_text().strip() for user in BROKER_USERS}


def spades(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """A ``spades`` command beside the stack, told only the data directory."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SPADES_")}
    env["SPADES_DATA_DIR"] = str(stack.data_dir)
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_each_service_connects_with_its_own_seed_given_by_path(stack: Stack) -> None:
    secret = seeds(stack)
    for service in SERVICES:
        [process] = [p for p in stack.children() if f"serve {service}" in p.command]
        given = environment_of(process.pid)["SPADES_NATS_CREDS"]
        assert given == str(stack.data_dir / "nats" / "credentials" / f"{service}.nk")
        assert all(seed not in process.command for seed in secret.values())
        assert all(seed not in given for seed in secret.values())


def test_no_seed_reaches_a_log(stack: Stack) -> None:
    logs = [stack.log_path, stack.data_dir / "nats" / "nats-server.log"]
    text = "".join(path.read_text(errors="replace") for path in logs)
    assert "Server is ready" in text  # the server's log is among them
    for seed in seeds(stack).values():
        assert seed not in text


async def test_the_services_do_their_whole_work_within_their_permissions(stack: Stack) -> None:
    async with SpadesClient(stack.base_url) as client:
        table = await seat_players(client, PRESETS["partnership"], random.Random("permissions"))
        # A follower of the game (an ordered consumer of the gateway's) while it is played.
        async with aclosing(client.stream(table.game_id, table.seats[0].token)) as stream:
            first = await anext(stream)
            assert first.event == "state"
            final = await table.play_out()
        version = final.version
        assert final.status == "finished"
        assert (await client.scoreboard(table.game_id, min_version=version)).game_over
        assert await client.hands(table.game_id, min_version=version)
        assert (await client.audit(table.game_id)).ok
        assert len(await client.events(table.game_id, after=0, limit=500)) > 30

    server_log = (stack.data_dir / "nats" / "nats-server.log").read_text()
    assert "Violation" not in server_log, [
        line for line in server_log.splitlines() if "Violation" in line
    ]


async def test_the_operator_tools_find_the_server_and_the_admin_key_in_the_data_directory(
    stack: Stack,
) -> None:
    async with SpadesClient(stack.base_url) as client:
        table = await seat_players(client, PRESETS["two-player"], random.Random("operator"))
        for _ in range(6):
            await table.step()

    audit = await asyncio.to_thread(spades, stack, "audit", table.game_id, "--json")
    lag = await asyncio.to_thread(spades, stack, "projections", "lag", "--json")

    assert audit.returncode == 0, audit.stderr
    assert json.loads(audit.stdout)["ok"] is True
    assert lag.returncode == 0, lag.stderr
    assert set(json.loads(lag.stdout)) >= {"games", "scoreboard"}
    assert (stack.data_dir / "nats" / "credentials" / f"{ADMIN}.nk").is_file()
