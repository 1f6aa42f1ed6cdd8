"""The first hour: ``spades up`` on its own data directory, then the commands a newcomer types
beside it, without a flag, finding it through the record it leaves there; and after it stops,
one line that says so instead of a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from services.runtime.discovery import StackRecord, find_stack, record_path
from tests.e2e.stack import READY_TIMEOUT_S, Stack

pytestmark = pytest.mark.e2e

COMMAND_TIMEOUT_S = 180
SHORT_BOTS = ("bots", "--games", "1", "--preset", "two-player", "--rules", '{"max_hands": 1}')
"""One short game: what is tested is that the command finds the stack and names its game."""


def spades(*args: str, data_dir: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A ``spades`` command as a user runs it: no ``SPADES_*`` setting but the data directory."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SPADES_")}
    env["SPADES_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def recorded(stack: Stack) -> StackRecord:
    """The stack's record, once `spades up` has written it (after it saw the gateway answer)."""
    assert stack.process is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not record_path(stack.data_dir).exists():
        assert stack.process.poll() is None, stack.log_tail()
        assert time.monotonic() < deadline, stack.log_tail()
        time.sleep(0.01)  # a file appearing: nothing to await
    return find_stack(stack.data_dir)


def test_the_commands_beside_spades_up_find_it_without_flags(tmp_path: Path) -> None:
    data_dir, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    elsewhere.mkdir()
    stack = Stack(data_dir)
    stack.start()
    try:
        record = recorded(stack)
        assert record.gateway_url == stack.base_url
        assert stack.process is not None
        assert record.pid == stack.process.pid

        played = spades(*SHORT_BOTS, data_dir=data_dir, cwd=elsewhere)
        assert played.returncode == 0, played.stderr
        game_ids = re.findall(r"^game ([0-9a-f]+)", played.stdout, flags=re.MULTILINE)
        assert len(game_ids) == 1, played.stdout  # `spades bots` says which games it played

        audited = spades("audit", game_ids[0], data_dir=data_dir, cwd=elsewhere)
        assert audited.returncode == 0, audited.stderr
        assert f"Audit of game {game_ids[0]}: clean" in audited.stdout

        lag = spades("projections", "lag", "--json", data_dir=data_dir, cwd=elsewhere)
        assert lag.returncode == 0, lag.stderr
        assert '"games"' in lag.stdout
        assert lag.stderr == "", "no logs on a command's stderr when all is well"
    finally:
        status, left = stack.terminate()
    assert (status, left) == (0, [])
    assert not record_path(data_dir).exists(), "a clean stop takes its record away"

    for command in (["audit", game_ids[0]], ["projections", "lag"], ["bots", "--games", "1"]):
        gone = spades(*command, data_dir=data_dir, cwd=elsewhere)
        assert gone.returncode == 2, gone
        assert gone.stderr.count("\n") == 1, gone.stderr
        assert f"no `spades up` runs on {data_dir}" in gone.stderr
    assert list(elsewhere.iterdir()) == [], "the commands created nothing where they ran"


def test_ready_is_announced_only_once_the_gateway_answers(tmp_path: Path) -> None:
    stack = Stack(tmp_path / "data")
    stack.start(until=None)  # no waiting for the gateway here: that is what is tested
    try:
        # Asked at once, no retry: the record (and "ready") come after the gateway answered.
        record = recorded(stack)
        assert httpx.get(f"{record.gateway_url}/healthz", timeout=5).status_code == 200
        ready = [line for line in stack.log_path.read_text().splitlines() if '"ready"' in line]
        assert ready, stack.log_tail()
    finally:
        status, left = stack.terminate()
    assert (status, left) == (0, [])
