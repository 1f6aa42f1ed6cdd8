"""A league night on the three-node cluster, short enough for CI: 64 players with clocks, bots
that think and idle seats, two of every process on PostgreSQL, and during the second round one
process of each worker kind and then a node leading a partition killed with SIGKILL
(:mod:`benchmarks.league_night`; ``spades bench league-night`` runs a long one)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.league_night import Night, NightPlan, fresh_schema_url

pytestmark = [pytest.mark.integration, pytest.mark.soak, pytest.mark.postgres]

PLAN = NightPlan(players=64, rounds=3, partitions=3, kill_round=2, turn_s=3.0, concurrency=8)
"""Eight tables played by bots at a time on a machine of two cores; the others, and the idle
players' seats, are played by their clocks until bots take them."""
FAIL_OVER_S = 15.0
"""The most any kind may take to hold every partition again after a kill (the claims' renewal
finds a killed member gone at once; the node's partitions elect new leaders)."""


async def test_a_league_night_survives_one_of_every_process_and_a_node_killed(
    tmp_path: Path,
) -> None:
    base = os.environ.get("SPADES_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("SPADES_TEST_POSTGRES_URL is not set: the league night runs on PostgreSQL")
    report = await Night(PLAN, fresh_schema_url(base), tmp_path).run()
    print()
    for failover in report.failovers:
        print(f"{failover.kind}: {failover.killed} killed, failed over in {failover.seconds} s")
    print(
        f"{report.games} games, {report.commits} commits, {report.timeouts} timeouts, "
        f"{report.actions} actions by the bots, {report.webhooks_received} webhooks "
        f"({report.webhooks_twice} sent twice, in flight at the kill), {report.seconds} s"
    )
    assert report.rounds_finished == PLAN.rounds
    assert report.games == PLAN.rounds * PLAN.players // 4
    assert report.history_problems == []
    assert report.timed_out_twice == []
    assert report.timeouts > 0, "idle seats must have timed out"
    assert report.read_model_differences == []
    assert report.webhooks_missing == []
    assert report.webhooks_out_of_order == []
    assert report.webhooks_twice_not_in_flight == []
    kinds = {failover.kind for failover in report.failovers}
    assert kinds == {"engine", "projections", "webhooks", "webhooks-leagues", "timers", "nats-node"}
    for failover in report.failovers:
        assert failover.seconds is not None, failover
        assert failover.seconds < FAIL_OVER_S, failover
