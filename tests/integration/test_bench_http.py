"""``spades bench http``'s parts against real servers: the bare peer (its own nats-server, a
JetStream file stream) driven by the lean client in its own process, the figures taken from
what the client saw and from /proc, and py-spy's stacks read back as where the time went."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.http import bare_peer, drive, hottest

pytestmark = pytest.mark.integration


def test_the_lean_client_plays_the_bare_peer_and_its_appends_are_in_the_stream() -> None:
    with bare_peer() as target:
        figures = drive(target, 2, 0.3, 1.5, "partnership", None, None)
    assert figures.errors == 0, figures.error_samples
    assert figures.actions > 10
    assert figures.requests_per_action == pytest.approx(2.0, abs=0.01)  # its guess is always right
    assert 0 < figures.p50_ms <= figures.p99_ms
    names = {process.name for process in figures.processes}
    assert {"peer", "nats-server", "client"} <= names
    peer = next(process for process in figures.processes if process.name == "peer")
    assert peer.cpu_s > 0
    assert peer.ms_per_action == pytest.approx(peer.cpu_s * 1000 / figures.actions, rel=0.01)


def test_at_a_rate_the_lean_client_spaces_its_actions_evenly() -> None:
    with bare_peer() as target:
        figures = drive(target, 4, 0.3, 2.0, "partnership", None, None, rate=20.0)
    assert figures.errors == 0, figures.error_samples
    assert figures.rate == 20.0
    assert 30 <= figures.actions <= 42  # 20/s over 2 s, whatever the four games could do
    assert figures.events is None  # no stream to count: the peer's is not the service's


def test_where_the_time_went_leaves_out_idle_waits_and_the_frames_every_stack_has(
    tmp_path: Path,
) -> None:
    stacks = tmp_path / "stacks.txt"
    stacks.write_text(
        "thread1;main (a.py:1);run_forever (base_events.py:600);select (selectors.py:468) 50\n"
        "thread1;main (a.py:1);handle (b.py:2);encode (c.py:3) 30\n"
        "thread1;main (a.py:1);handle (b.py:2) 10\n"
        "thread1;main (a.py:1);decide (d.py:4) 10\n"
    )
    lines = hottest(stacks)
    assert lines[0].startswith("busy in 50% of 100 samples")
    shown = {line.split(")  ")[-1]: line for line in lines[1:]}
    assert "main (a.py:1)" not in shown  # on every busy stack
    assert shown["handle (b.py:2)"].startswith(" 80.0% (self 20.0%)")
    assert shown["encode (c.py:3)"].startswith(" 60.0% (self 60.0%)")
    assert not any("select" in line for line in lines)
