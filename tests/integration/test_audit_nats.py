"""Auditing games played through the real engine over NATS: from the stream, and from a copy."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
import typer
from nats.aio.client import Client
from typer.testing import CliRunner

from benchmarks.nats_table import RandomTable
from contracts.wire import ActRequest
from services.audit.replay import audit_game
from services.cli.audit import audit
from services.runtime.broker_users import ADMIN
from services.runtime.game_stream import GameStream
from tests.integration.support import EngineProcess, credentials_of, history, ready_client

pytestmark = pytest.mark.integration

cli = typer.Typer()
cli.command()(audit)


@cli.command("unused")
def _unused() -> None:
    """A second command, so that ``audit`` is invoked by name as under ``spades``."""


async def play_game(connection: Client, game_id: str, preset: str) -> RandomTable:
    """A whole game of random legal play, with one refused command on the record."""
    client = await ready_client(connection)
    table = RandomTable(client, GameStream(connection.jetstream()), game_id, random.Random(5))
    await table.open({"preset": preset, "max_hands": 2, "target": 150})
    for _ in range(3):
        await table.step()
    assert table.state is not None
    assert table.state.hand is not None
    wrong_seat = (table.state.hand.turn + 1) % table.state.rules.players
    play = {"type": "play", "card": "3H"}
    refused = await client.send(game_id, ActRequest(seat=wrong_seat, action=play))
    assert refused.code in ("wrong_phase", "not_your_turn")
    await table.play_out()
    assert table.finished
    return table


async def invoke(*args: str) -> tuple[int, str]:
    """``spades audit`` in a thread of its own (it runs its own event loop), with the broker's
    admin credentials, as an operator runs it."""
    runner = CliRunner(env={"SPADES_NATS_CREDS": str(credentials_of(ADMIN))})
    result = await asyncio.to_thread(runner.invoke, cli, ["audit", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("preset", ["partnership", "two-player", "three-player-house"])
async def test_a_game_played_through_the_engine_audits_clean(
    preset: str, engine: EngineProcess, connection: Client
) -> None:
    table = await play_game(connection, f"audit-{preset}", preset)
    commits = await history(connection, table.game_id)
    assert table.state is not None
    report = audit_game(commits)
    assert report.problems == []
    assert report.events == table.state.version
    assert all(hand.deal_verified and hand.score_matches for hand in report.hands)
    assert len(report.hands) == table.state.hands_played


async def test_the_command_line_audits_the_stream_and_a_copy(
    engine: EngineProcess, connection: Client, nats_url: str, tmp_path: Path
) -> None:
    table = await play_game(connection, "audit-cli", "solo")

    code, output = await invoke(table.game_id, "--nats-url", nats_url, "--json")
    assert code == 0, output
    assert json.loads(output)["ok"] is True

    code, output = await invoke(table.game_id, "--nats-url", nats_url, "--export")
    assert code == 0
    copy = tmp_path / "game.jsonl"
    copy.write_text(output)
    commits = await history(connection, table.game_id)
    assert copy.read_bytes() == b"".join(stored.data + b"\n" for stored in commits)
    code, output = await invoke("--commits", str(copy))
    assert code == 0, output

    lines = copy.read_bytes().split(b"\n")
    at = next(
        k
        for k in range(31, len(lines))
        if b'"card_played"' in lines[k]
        and b'"card_played"' in lines[k - 1]
        and b'"hand_dealt"' not in lines[k - 1]
    )
    played = json.loads(lines[at])["events"][0]["card"]
    on_the_table = json.loads(lines[at - 1])["events"][0]["card"]  # no seat holds it any more
    lines[at] = lines[at].replace(f'"{played}"'.encode(), f'"{on_the_table}"'.encode(), 1)
    copy.write_bytes(b"\n".join(lines))
    code, output = await invoke("--commits", str(copy), "--json")
    assert code == 1
    first = json.loads(output)["first_problem"]
    assert first["version"] == commits[at].commit.first_version
    assert first["check"] == "replay"

    code, _ = await invoke("no-such-game", "--nats-url", nats_url)
    assert code == 2
