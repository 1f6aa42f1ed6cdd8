"""``spades bench history`` at two small sizes (0 and 300 finished games): every figure of the
report is measured from what ran, each size on a stack of its own. Nothing here is timed: the
figures' size is the benchmark's to print (the one timed promise, a killed timer worker's table
moving again within seconds, is ``test_timers``'s)."""

from __future__ import annotations

import pytest

from benchmarks.history import run
from benchmarks.league_night import KINDS
from benchmarks.timers import finished_histories
from services.engine.round_watch import KIND as ROUND_WATCH

pytestmark = [pytest.mark.integration, pytest.mark.soak]


def test_each_size_is_filled_audited_restarted_and_measured() -> None:
    report = run([0, 300], partitions=1, turn_s=1.0)
    _, one_game = next(finished_histories(1))

    empty, filled = report.sizes
    assert (empty.games, filled.games) == (0, 300)
    assert (empty.messages, filled.messages) == (0, 300 * len(one_game))
    assert filled.fill_messages_per_s is not None
    assert empty.fill_messages_per_s is None
    for size in report.sizes:
        assert not size.problems
        assert set(size.first_catch_up_s) == {"projections", ROUND_WATCH, "timers"}
        assert set(size.kinds) == set(KINDS)
        for kind in size.kinds.values():
            assert kind.start_s > 0
            assert kind.rss_mb > 0
        assert size.first_timeout_s > 0
        assert size.nats_rss_mb > 0
        assert size.killed_held_s > 0
        assert size.killed_moved_s > 0
        assert size.stream_bytes > 0  # the table's commits, and the history
        assert size.database_bytes > 0
    assert filled.audited == 16 + 1  # a sample of the history, and the table
    assert empty.audited == 1
    assert filled.stream_bytes_per_game is not None
    assert filled.stream_bytes > 300 * sum(map(len, one_game))  # payloads, and their headers
    assert filled.database_bytes > empty.database_bytes
    # Every figure has a value a size and a slope, but those a size of no games has none of.
    assert all(len(values) == 2 for values in report.figures.values())
    undefined = {"fill: messages/s", "stream bytes/game", "database bytes/game"}
    assert {name for name, per in report.per_10k.items() if per is None} == undefined
