"""Clients generated from ``contracts/openapi.json`` by other people's generators, each with its
default options, play whole games against ``spades up`` with the server's default rate limits:

- TypeScript: ``openapi-typescript`` types, ``openapi-fetch`` requests, ``tsc --strict``, no cast
  and no ``any`` (``tests/clients/ts/play.ts``);
- Python: ``openapi-python-client`` with no warning, checked by ``mypy --strict``, every answer
  its parsed model (``tests/clients/python/play.py``).

Each plays a game of every preset, all at once: partnership with a blind nil and its pass,
two-player with the draw, jokers-54 with the dealer's discard, solo, cutthroat, the three-player
house rules (lowest club leads, no nil) and six players on two decks (17 tricks a hand). Each
first sends more views than a seat's budget lets through: the 429s are made again after
``Retry-After``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.runtime.nats_server import free_port
from tests.clients.conftest import (
    CONTRACTS,
    NODE_PROJECT,
    PROJECT_BIN,
    generator_tool,
    node_tool,
    run,
)
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

KEY = "clients-platform-key"
GAMES: dict[str, tuple[set[str], int]] = {
    "partnership": ({"bid", "pass", "play"}, 13),
    "two-player": ({"draw", "bid", "play"}, 13),
    "jokers-54": ({"discard", "bid", "play"}, 13),
    "solo": ({"bid", "play"}, 13),
    "cutthroat": ({"bid", "play"}, 17),
    "three-player-house": ({"bid", "play"}, 17),
    "six-player": ({"bid", "play"}, 17),
}
"""The game each client plays (one of every preset), the phases it must go through and the
tricks of its hand."""
BURST = 60
"""Views at once of one seat: three times the default seat budget of 20 a second."""
GAME_TIMEOUT_S = 240
SOURCE = Path(__file__).parent


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """``spades up`` with its default rate limits: the budgets a platform meets."""
    running = Stack(
        tmp_path_factory.mktemp("clients-stack"),
        api_keys=KEY,
        rate_limit=None,
        env={"SPADES_WEBHOOK_ALLOW_PRIVATE": "1"},  # the webhook endpoint on loopback
    )
    running.start()
    yield running
    running.terminate()


@pytest.fixture(scope="module")
def typescript_program() -> Path:
    """``play.ts`` on freshly generated types, compiled by ``tsc --strict``."""
    generated = NODE_PROJECT / "generated" / "api.d.ts"
    run([node_tool("openapi-typescript"), CONTRACTS / "openapi.json", "-o", generated])
    run([node_tool("tsc"), "--strict", "-p", NODE_PROJECT])
    return NODE_PROJECT / "build" / "play.js"


@pytest.fixture(scope="module")
def python_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated package's directory (``spades_client``), generated with no warning."""
    out = tmp_path_factory.mktemp("python-client") / "client"
    env = {**os.environ, "PATH": f"{PROJECT_BIN}{os.pathsep}{os.environ['PATH']}"}  # its ruff
    said = run(
        [
            generator_tool("openapi-python-client"),
            "generate",
            "--path",
            CONTRACTS / "openapi.json",
            "--output-path",
            out,
        ],
        env=env,
    )
    assert "warning" not in said.lower(), said
    assert (out / "spades_client" / "api" / "actions" / "act.py").exists()
    return out


def play_all(argv: list[str | Path], stack: Stack, env: dict[str, str]) -> dict[str, Any]:
    """Every game at once, one process each; what each printed."""
    running = {
        game: subprocess.Popen(
            [*map(str, argv), stack.base_url, KEY, game, str(BURST)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for game in GAMES
    }
    played: dict[str, Any] = {}
    for game, process in running.items():
        out, err = process.communicate(timeout=GAME_TIMEOUT_S)
        assert process.returncode == 0, f"{game}: exited {process.returncode}\n{out}\n{err}"
        played[game] = json.loads(out.strip().splitlines()[-1])
    return played


def check_games(played: dict[str, Any], stack: Stack) -> None:
    """Each game ended, through its phases, as the server tells it too; the bursts met the
    seat's budget, and each refusal was waited out and made again."""
    assert sum(summary["retries"] for summary in played.values()) > 0, played
    with httpx.Client(base_url=stack.base_url, headers={"Authorization": f"Bearer {KEY}"}) as http:
        for game, (phases, tricks) in GAMES.items():
            summary = played[game]
            assert summary["status"] == "finished", summary
            assert phases <= set(summary["phases"]), summary
            assert all(summary["sent"].get(phase) for phase in phases), summary
            assert summary["audit_ok"], summary
            assert summary["hands"] == summary["scoreboard_hands"] >= 1, summary
            assert summary["first_hand_tricks"] == tricks, summary
            assert "game_ended" in summary["event_types"], summary
            assert all(re.fullmatch(r"[0-9]+", after) for after in summary["retry_after"])
            served = http.get(f"/v1/games/{summary['game_id']}").json()
            assert served["status"] == "finished"
            assert served["version"] == summary["version"]
            assert served["scores"] == summary["scores"]


CASTS = re.compile(
    r"\bas\s+[\w{(\[]"  # x as T
    r"|(?<![\w.])<[\w\[\]\"., |]+>\s*[\w(]"  # <T>x (a generic call, f<T>(x), is no cast)
    r"|\w[!]\.|[)\]][!]\."  # x!.y, a non-null assertion
    r"|\bany\b|@ts-"
)


def test_the_typescript_program_has_no_cast_and_no_any() -> None:
    code = re.sub(r"//.*", "", (NODE_PROJECT / "play.ts").read_text())
    assert CASTS.search("const n = <number>x;")
    assert CASTS.search("const v = view as SeatView;")
    assert not CASTS.search("createClient<paths>({ baseUrl })")
    assert not CASTS.findall(code)


def test_a_typescript_client_plays_every_phase_under_tsc_strict(
    stack: Stack, typescript_program: Path
) -> None:
    played = play_all(["node", typescript_program], stack, dict(os.environ))
    check_games(played, stack)


def typed(program: Path, python_client: Path) -> dict[str, str]:
    """The environment a program on the generated package runs in, once ``mypy --strict`` has
    passed it."""
    env = {**os.environ, "PYTHONPATH": str(python_client)}
    env["MYPYPATH"] = os.pathsep.join([str(python_client), str(program.parent)])  # its `play`
    mypy = ["-m", "mypy", "--strict", "--no-incremental", "--config-file=", "--cache-dir=/dev/null"]
    run([sys.executable, *mypy, program], env=env)
    return env


def test_a_generated_python_client_plays_every_phase_every_answer_parsed(
    stack: Stack, python_client: Path
) -> None:
    program = SOURCE / "python" / "play.py"
    played = play_all([generator_tool("python"), program], stack, typed(program, python_client))
    check_games(played, stack)


UNPARSED = {"eventStream": "a server-sent event stream: tests/e2e/test_stream.py reads it"}
"""Operations the Python programs do not call, and why."""


def called(operation_id: str, sources: str) -> bool:
    """Whether the programs call the generated function of ``operation_id`` (``createGame``
    is ``create_game.sync_detailed``)."""
    module = re.sub(r"(?<!^)(?=[A-Z])", "_", operation_id).lower()
    return re.search(rf"\b{module}\.(a?sync|asyncio)(_detailed)?\b", sources) is not None


def test_the_generated_python_client_calls_every_operation_each_answer_parsed(
    stack: Stack, python_client: Path
) -> None:
    program = SOURCE / "python" / "operations.py"
    env = typed(program, python_client)
    hook = f"http://127.0.0.1:{free_port()}/hooks"  # nobody listens: the deliveries fail
    said = run([generator_tool("python"), program, stack.base_url, KEY, hook], env=env)
    seen = json.loads(said.strip().splitlines()[-1])
    assert seen["metrics_lines"] > 10, seen
    assert seen["tables"] == len(seen["round_tables"]) == 2, seen
    assert seen["substitute"][1] == "zed", seen
    assert seen["substitute"][2] in seen["round_tables"], seen
    assert seen["league_withdrawn"] == [seen["withdrawn"]], seen
    assert seen["league_substitutions"] == 1, seen
    # one table played out (its hands counted as the integrity model catches up), voided: its
    # one hand, or more when the sides were level after it (a tie on top plays on)
    assert seen["played_hands"] >= 1, seen
    assert seen["integrity"][0] == seen["league_id"], seen
    assert 0 <= seen["integrity"][1] <= seen["played_hands"], seen
    assert seen["voided"] == [seen["round_tables"][0], 1, 1], seen
    assert seen["standing_voided"] == [seen["round_tables"][0]], seen
    assert (seen["adjusted"][0], seen["adjusted"][2]) == (1, -10), seen
    assert seen["standing_adjustments"] == 1, seen
    assert seen["duplicate_boards"] == ["duplicate", 0], seen
    assert sorted(seen["standings"]) == sorted(seen["exported_standings"]), seen
    assert len(seen["standings"]) == 8, seen
    assert seen["results"] == 0, seen  # no round finished yet (one of its tables is)
    assert "away" in " ".join(seen["away_events"]), seen
    assert seen["league_link"], seen
    assert seen["game_link"], seen
    assert seen["league_links_revoked"] == seen["game_links_revoked"] == 204, seen
    assert seen["endpoint_listed"], seen
    assert seen["endpoint_deleted"] == 204, seen
    assert seen["receipt"] == [seen["log_game"], 1, True], seen
    assert seen["inclusion_root"] == seen["receipt_root"], seen  # the leaf is in that tree
    assert seen["checkpoint_origin"] == seen["receipt_origin"], seen
    old, new, old_root = seen["consistency"]
    assert old <= new, seen
    assert old_root == seen["receipt_root"], seen
    sources = "".join((SOURCE / "python" / name).read_text() for name in ("play.py", program.name))
    operations = {
        operation["operationId"]
        for path in json.loads((CONTRACTS / "openapi.json").read_text())["paths"].values()
        for operation in path.values()
    }
    assert called("createGame", sources)
    assert not called("createGames", sources)
    assert {op for op in operations if not called(op, sources)} == set(UNPARSED)
