"""schemathesis against the OpenAPI document the running stack serves: whatever it generates,
valid or not, no answer is a 500, and every answer is one the document describes (its status,
content type and body schema). And Schemathesis as a third party runs it: ``st run --checks
all``, every phase (its stateful one included), finds nothing.

Each operation is tried on an unknown game and, with a seat token, on a real one, so that
requests also reach past ``game_not_found``. (schemathesis's lazy pytest loader does not run
under pytest 9, so the cases come from its Python API, ``APIOperation.as_strategy``.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.strategies import SearchStrategy
from schemathesis import Case, CheckContext, CheckFunction, GenerationMode, Response
from schemathesis.core.failures import ServerError
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

MAX_EXAMPLES = 15
REQUEST_TIMEOUT_S = 10.0
STREAM_PATH = "/v1/games/{game_id}/events/stream"


def no_internal_error(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    """A 5xx answer only as docs/api.md's 503 ``unavailable`` with ``Retry-After``; never a 500."""
    if response.status_code < 500:
        return None
    if response.status_code == 503 and response.headers.get("retry-after"):
        problem = response.json()
        if isinstance(problem, dict) and problem.get("code") == "unavailable":
            return None
    raise ServerError(operation=case.operation.label, status_code=response.status_code)


CHECKS: list[CheckFunction] = [
    no_internal_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@dataclass(frozen=True)
class RealGame:
    """A game in play, and a seat token of it."""

    game_id: str
    token: str


def start_a_game(stack: Stack) -> RealGame:
    headers = {"Authorization": f"Bearer {stack.api_key}"}
    with httpx.Client(base_url=stack.base_url, timeout=REQUEST_TIMEOUT_S) as http:
        created = http.post("/v1/games", json={"rules": {"preset": "cutthroat"}}, headers=headers)
        assert created.status_code == 201, created.text
        game_id = created.json()["game_id"]
        seats = [  # the platform seats its users
            http.post(f"/v1/games/{game_id}/seats", json={"player": name}, headers=headers).json()
            for name in ("ann", "bob", "cy")
        ]
    return RealGame(game_id, seats[0]["token"])


def probe(cases: SearchStrategy[Case[Any]]) -> Callable[[str, dict[str, str] | None], None]:
    """A bounded hypothesis run that sends the cases and checks every answer."""

    @given(case=cases)
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(base_url: str, headers: dict[str, str] | None, case: Case[Any]) -> None:
        case.call_and_validate(
            base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT_S, checks=CHECKS
        )

    return run


def failures_of(
    run: Callable[[str, dict[str, str] | None], None],
    base_url: str,
    headers: dict[str, str] | None,
) -> list[str]:
    try:
        run(base_url, headers)
    except Unsatisfiable:  # no invalid request exists for it (a path of one fixed game)
        return []
    except (Exception, BaseExceptionGroup) as failure:  # a group of check failures
        return [f"{type(failure).__name__}: {failure}"]
    return []


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_answer_is_one_the_document_describes(stack: Stack, mode: GenerationMode) -> None:
    schema = schemathesis.openapi.from_url(f"{stack.base_url}/openapi.json")
    game = start_a_game(stack)
    operations = [result.ok() for result in schema.get_all_operations() if isinstance(result, Ok)]
    assert len(operations) >= 14, [operation.label for operation in operations]
    failures: list[str] = []
    tried = 0
    for operation in operations:
        targets: list[dict[str, Any] | None] = [None]
        if "{game_id}" in operation.path and operation.path != STREAM_PATH:
            targets.append({"game_id": game.game_id})  # (a real game's stream never ends)
        for path_parameters in targets:
            headers = {"Authorization": f"Bearer {game.token}"} if path_parameters else None
            if operation.path == "/v1/games" and operation.method.upper() == "POST":
                headers = {"Authorization": f"Bearer {stack.api_key}"}

            # A read waits for ``min_version``: one the game never reaches costs the wait.
            query = {"min_version": 0} if "min_version" in operation.query else None
            run = probe(operation.as_strategy(mode, path_parameters=path_parameters, query=query))
            tried += 1
            found = failures_of(run, stack.base_url, headers)
            failures += [f"{operation.label} {path_parameters}: {f}" for f in found]
    assert tried >= 20
    assert not failures, "\n\n".join(failures)


SCHEMATHESIS_CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS_TIMEOUT_S = 300
PHASES = ("Examples", "Coverage", "Fuzzing", "Stateful")


def test_schemathesis_with_every_check_and_phase_finds_nothing(
    stack: Stack, tmp_path: Path
) -> None:
    """The contract is exact: requests the schema allows are accepted (or refused by the game's
    rules, 422), requests it does not are refused, every answer is documented (status, headers,
    content type, body; the event stream's events too), 405s say what is allowed, and no
    sequence of calls the document's links lead to breaks it. Bounded by the config's example
    count, deterministic."""
    argv = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(SCHEMATHESIS_CONFIG)]
    argv += ["run", f"{stack.base_url}/openapi.json", "--checks", "all", "--no-color"]
    argv += ["-H", f"Authorization: Bearer {stack.api_key}"]
    argv += ["--report", "junit", "--report-dir", str(tmp_path)]
    done = subprocess.run(
        argv,
        check=False,
        capture_output=True,
        text=True,
        timeout=SCHEMATHESIS_TIMEOUT_S,
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-12000:]
    for phase in PHASES:
        assert f"✅ {phase}" in output, f"the {phase} phase did not pass:\n{output[-6000:]}"
    selected = re.search(r"Selected: (\d+)/(\d+)", output)
    tested = re.search(r"Tested: (\d+)", output)
    assert selected, output[-4000:]
    assert tested, output[-4000:]
    assert int(tested[1]) == int(selected[2]) >= 20, "every operation of the document is tried"
