"""``spades bench gets`` against a real nats-server: both streams hold the same histories, every
question ("anything after?") is answered "no message" on both sides, and each side's figures
come from what was asked."""

from __future__ import annotations

import pytest

from benchmarks.commands import Broker
from benchmarks.gets import _measure
from services.runtime.nats_server import EmbeddedNats

pytestmark = pytest.mark.integration


async def test_both_sides_ask_every_history_past_its_end_and_are_measured(
    nats_server: EmbeddedNats,
) -> None:
    broker = Broker(nats_server.url, nats_server.credentials_for)
    figures = await _measure(broker, subjects=12, commits=2, gets=100, concurrency=4, rounds=2)

    assert (figures.subjects, figures.gets, figures.concurrency, figures.rounds) == (12, 100, 4, 2)
    for side in (figures.direct, figures.leader):
        assert side.gets_per_s > 0
        # A hundred gets may take less CPU than /proc counts (10 ms ticks): only the figures'
        # presence is required, not their size.
        assert {"client", "nats-server"} <= side.cpu_us.keys()
    # The streams are the benchmark's own and are gone once it is done.
    connection = await broker.connect()
    try:
        names = [info.config.name for info in await connection.jetstream().streams_info()]
    finally:
        await connection.close()
    assert not [name for name in names if name and name.startswith("SPADES_BENCH_GETS")]
