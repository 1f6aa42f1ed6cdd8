"""The gateway's access record: a summary line per route and status every few seconds, a line
at once for each failed or slow request, every request only at DEBUG; never a query string."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from services.gateway.telemetry import STREAMS, AccessRecord
from services.runtime.logging import configure_logging

VIEW = "/v1/games/{game_id}/view"


@pytest.fixture
def output() -> Iterator[io.StringIO]:
    written = io.StringIO()
    configure_logging("json", "INFO", stream=written)
    yield written
    configure_logging("json", "WARNING")


def lines(output: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.getvalue().splitlines()]


def test_ordinary_requests_are_summed_per_route_and_status_not_written_each(
    output: io.StringIO,
) -> None:
    record = AccessRecord(every_s=3600)
    for ms in (2.0, 4.0, 9.0):
        record.note("GET", VIEW, "/v1/games/g1/view", 200, ms / 1000)
    record.note("POST", "/v1/games/{game_id}/actions", "/v1/games/g1/actions", 409, 0.003)
    assert lines(output) == []
    record.flush()
    summary = {(line["route"], line["status"]): line for line in lines(output)}
    view = summary[(VIEW, 200)]
    assert (view["event"], view["count"], view["mean_ms"], view["max_ms"]) == (
        "requests",
        3,
        5.0,
        9.0,
    )
    assert summary[("/v1/games/{game_id}/actions", 409)]["count"] == 1


def test_a_failed_or_slow_request_is_written_at_once_with_its_path(output: io.StringIO) -> None:
    record = AccessRecord(every_s=3600)
    record.note("GET", VIEW, "/v1/games/g1/view", 503, 0.002)
    record.note("GET", VIEW, "/v1/games/g2/view", 200, 1.5)
    record.note("GET", STREAMS, "/v1/games/g3/events/stream", 200, 60.0)  # a stream lasts
    written = [(line["path"], line["status"]) for line in lines(output)]
    assert written == [("/v1/games/g1/view", 503), ("/v1/games/g2/view", 200)]


def test_a_summary_is_written_once_its_window_has_passed(output: io.StringIO) -> None:
    record = AccessRecord(every_s=0.0)
    record.note("GET", VIEW, "/v1/games/g1/view", 200, 0.001)
    assert [line["event"] for line in lines(output)] == ["requests"]


def test_at_debug_every_request_is_written(output: io.StringIO) -> None:
    configure_logging("json", "DEBUG", stream=output)
    record = AccessRecord(every_s=3600)
    record.note("GET", VIEW, "/v1/games/g1/view", 200, 0.001)
    assert [line["path"] for line in lines(output)] == ["/v1/games/g1/view"]
