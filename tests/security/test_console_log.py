"""A request path is the caller's text, and the gateway logs it: in the console format (an
operator's terminal) an escape sequence in it must arrive as text, never as the control
characters a terminal acts on (colours, a cleared screen, a retitled window, a rewritten line).
Every control character (C0, DEL, C1) of every value is written as a ``\\x1b``-style escape;
JSON lines escape them already."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import httpx
import pytest

from services.runtime.logging import configure_logging, get_logger
from tests.security.tenants import ACME, assert_problem, bearer

pytestmark = pytest.mark.integration

RAW_CONTROLS = ["\x1b", "\x9b", "\x07", "\x00", "\x7f", "\r"]
"""ESC, CSI (C1), BEL, NUL, DEL and a carriage return (which rewrites the line it ends)."""


@pytest.fixture
def console() -> Iterator[io.StringIO]:
    """Every log line of the process (the gateway serves in a thread of it), as the console
    renderer writes them, at DEBUG: each request's path is written."""
    written = io.StringIO()
    configure_logging("console", "DEBUG", stream=written)
    yield written
    configure_logging("json", "WARNING")


def assert_no_raw_control(output: str) -> None:
    lines = output.replace("\n", "").replace("\t", "")
    for control in RAW_CONTROLS:
        assert control not in lines, f"{control!r} reached the console: {output[-2000:]!r}"


async def test_an_escape_sequence_in_a_path_reaches_the_console_escaped(
    http: httpx.AsyncClient, console: io.StringIO
) -> None:
    paths = [
        "/v1/games/%1b%5b31mX",  # ESC [ 31 m: red from here on
        "/v1/games/%c2%9b2J/events",  # CSI (C1, one character) 2 J: clear the screen
        "/v1/games/%1b%5d0%3btitle%07/view",  # OSC 0: retitle the window, ended by BEL
        "/v1/%00%7f%0d%1bX",
    ]
    for path in paths:
        answer = await http.get(path, params={"q": "\x1b[2J"})
        assert answer.status_code in (400, 401, 404, 422), answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert answer.json()["code"]
    # the game id is checked: a problem with the contract's code, not a 500
    assert_problem(await http.get(paths[0], headers=bearer(ACME)), 404, "game_not_found")
    output = console.getvalue()
    assert "\\x1b[31mX" in output, output[-2000:]  # the path is logged, escaped
    assert "\\x9b2J" in output
    assert_no_raw_control(output)


def test_every_value_and_a_stdlib_record_are_escaped(console: io.StringIO) -> None:
    class Sneaky:
        def __repr__(self) -> str:
            return "\x1b[8mhidden"

    log = get_logger("spades.test")
    log.warning("\x1b[2Jevent", path="/\x1b]0;owned\x07", extra=Sneaky(), nested={"k": "\x9b"})
    logging.getLogger("uvicorn.error").warning("Invalid request %s", "\x1b[31m\r")
    try:
        raise ValueError("\x1b[31mboom")
    except ValueError:
        log.exception("failed")
    output = console.getvalue()
    assert "\\x1b[2Jevent" in output
    assert "\\x1b[8mhidden" in output
    assert "Invalid request \\x1b[31m\\x0d" in output
    assert "ValueError: \\x1b[31mboom" in output
    assert "Traceback (most recent call last):\n" in output  # a traceback keeps its lines
    assert_no_raw_control(output)
