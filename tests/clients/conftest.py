"""The tools nobody here wrote, as ``make clients`` installs them: the npm packages of
``tests/clients/ts`` (pinned by its package-lock.json) and ``openapi-python-client`` in a venv of
its own (``.venv/generators``: it pins a typer older than the service's CLI needs). A test that
needs one and does not find it fails and says how to install it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ROOT / "contracts"
NODE_PROJECT = Path(__file__).parent / "ts"
GENERATORS = ROOT / ".venv" / "generators" / "bin"
PROJECT_BIN = ROOT / ".venv" / "bin"
TOOL_TIMEOUT_S = 240


def node_tool(name: str) -> Path:
    tool = NODE_PROJECT / "node_modules" / ".bin" / name
    if not tool.exists():
        pytest.fail(f"{tool} is missing: run `make clients` (npm ci --prefix tests/clients/ts)")
    return tool


def generator_tool(name: str) -> Path:
    tool = GENERATORS / name
    if not tool.exists():
        pytest.fail(f"{tool} is missing: run `make clients`")
    return tool


def run(argv: list[str | Path], *, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """Run a tool; its output, or a failure that shows it."""
    done = subprocess.run(
        [str(part) for part in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"{argv[0]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr
