"""``spades up`` owns its nats-server: nothing it started outlives it, however it dies; a server
that dies under it is started again; and one store directory never gets two servers."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.client import ApiError, SpadesClient
from services.runtime.nats_server import free_port
from tests.e2e.players import PRESETS, Table, seat_players
from tests.e2e.stack import ProcessInfo, Stack, read_process

pytestmark = pytest.mark.e2e

GONE_WITHIN_S = 30.0
BACK_WITHIN_S = 60.0
REFUSED_WITHIN_S = 60.0
_POLL_S = 0.1


def nats_servers(processes: list[ProcessInfo]) -> list[ProcessInfo]:
    return [process for process in processes if "nats-server" in process.command]


def servers_on(store: Path) -> list[ProcessInfo]:
    """Every nats-server on the machine whose configuration lives in ``store``."""
    found = []
    for entry in os.listdir("/proc"):
        process = read_process(int(entry)) if entry.isdigit() else None
        if process is not None and process.state != "Z" and str(store) in process.command:
            found.append(process)
    return nats_servers(found)


def wait_until_gone(processes: list[ProcessInfo]) -> list[ProcessInfo]:
    """Wait for the processes to exit; return those still running at the deadline."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while (left := [p for p in processes if p.running]) and time.monotonic() < deadline:
        time.sleep(_POLL_S)  # another process's exit: nothing of ours to await
    return left


def kill_left(processes: list[ProcessInfo]) -> None:
    for process in processes:
        if process.running:
            os.kill(process.pid, signal.SIGKILL)


async def some_moves(table: Table, moves: int) -> None:
    for _ in range(moves):
        if not await table.step():
            return


async def a_game_under_way(stack: Stack, moves: int = 8) -> Table:
    async with SpadesClient(stack.base_url) as client:
        table = await seat_players(client, PRESETS["two-player"], random.Random("supervision"))
        await some_moves(table, moves)
    return table


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """``spades up`` with no platform keys, as ``make run`` starts it."""
    running = Stack(tmp_path / "data")
    running.start()
    yield running
    if running.process is not None and running.process.poll() is None:
        running.terminate()


async def test_kill_9_of_the_process_group_leaves_no_server_and_a_restart_carries_on(
    stack: Stack,
) -> None:
    table = await a_game_under_way(stack)
    async with SpadesClient(stack.base_url) as client:
        before = await client.state(table.game_id)
    started = stack.children()
    assert len(nats_servers(started)) == 1
    assert stack.process is not None

    os.killpg(stack.process.pid, signal.SIGKILL)
    stack.process.wait()
    left = await asyncio.to_thread(wait_until_gone, started)
    kill_left(left)

    assert left == [], f"still running after kill -9 of the group: {left}"
    assert servers_on(stack.data_dir / "nats") == []

    again = Stack(stack.data_dir)
    await asyncio.to_thread(again.start)
    try:
        async with SpadesClient(again.base_url) as client:
            assert (await client.state(table.game_id)).version == before.version
            table.client = client
            await some_moves(table, 6)
            after = await client.state(table.game_id)
            audit = await client.audit(table.game_id)
        assert after.version > before.version
        assert audit.ok, audit
        assert audit.events == after.version
    finally:
        status, still = await asyncio.to_thread(again.terminate)
    assert (status, still) == (0, [])


async def test_ctrl_c_stops_the_services_before_their_server(stack: Stack) -> None:
    started = stack.children()
    assert stack.process is not None

    # What a terminal does on Ctrl-C: SIGINT to the foreground process group.
    os.killpg(stack.process.pid, signal.SIGINT)
    status = await asyncio.to_thread(stack.process.wait, GONE_WITHIN_S)
    left = await asyncio.to_thread(wait_until_gone, started)
    kill_left(left)

    assert status == 0
    assert left == []
    server_log = (stack.data_dir / "nats" / "nats-server.log").read_text()
    # The server never saw the terminal's SIGINT: `spades up` stopped it (SIGTERM), last.
    assert 'Trapped "interrupt" signal' not in server_log
    assert server_log.count('Trapped "terminated" signal') == 1
    lines = stack.log_path.read_text().splitlines()
    told = [json.loads(line) for line in lines if line.startswith("{") and "spades.up" in line]
    order = [e.get("service", "nats-server") for e in told if e["event"].endswith(" stopped")]
    assert sorted(order[:5]) == ["engine", "gateway", "projections", "timers", "webhooks"]
    assert order[5:] == ["nats-server"]


async def test_kill_9_of_spades_up_alone_stops_everything_it_started(stack: Stack) -> None:
    started = stack.children()
    assert len(nats_servers(started)) == 1
    assert stack.process is not None

    stack.process.kill()
    stack.process.wait()
    left = await asyncio.to_thread(wait_until_gone, started)
    kill_left(left)

    assert left == [], f"outlived spades up: {left}"


async def test_a_second_spades_up_on_the_same_data_directory_is_refused(stack: Stack) -> None:
    [server] = nats_servers(stack.children())
    env = {key: value for key, value in os.environ.items() if not key.startswith("SPADES_")}
    argv = [sys.executable, "-m", "services.cli.main", "up"]
    argv += ["--port", str(free_port()), "--data-dir", str(stack.data_dir)]

    second = await asyncio.to_thread(
        subprocess.run,
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=REFUSED_WITHIN_S,
        check=False,
    )

    assert second.returncode == 1
    [line] = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert str(stack.data_dir / "nats") in line
    assert f"pid {server.pid}" in line
    assert server.running
    assert servers_on(stack.data_dir / "nats") == [server]
    async with SpadesClient(stack.base_url) as client:
        assert (await client.readyz()).status == "ok"


async def test_a_nats_server_killed_under_spades_up_is_started_again(stack: Stack) -> None:
    table = await a_game_under_way(stack)
    [server] = nats_servers(stack.children())
    async with SpadesClient(stack.base_url) as client:
        before = (await client.state(table.game_id)).version

    os.kill(server.pid, signal.SIGKILL)

    deadline = time.monotonic() + BACK_WITHIN_S
    async with SpadesClient(stack.base_url) as client:
        table.client = client
        while True:
            try:
                await some_moves(table, 1)
                break
            except ApiError as error:  # 503 until the services have reconnected
                if error.status != 503 or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)
        await some_moves(table, 3)
        after = (await client.state(table.game_id)).version

    [restarted] = nats_servers(stack.children())
    assert restarted.pid != server.pid
    assert not server.running
    assert after > before
    assert stack.process is not None
    assert stack.process.poll() is None
