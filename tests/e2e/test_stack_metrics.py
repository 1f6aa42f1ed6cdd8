"""Every process of ``spades up`` serves its own Prometheus metrics, where the stack's record says:
each worker on a port of its own, the gateway on its HTTP port. A Prometheus pointed at the
record scrapes the whole stack, and each page is that process's, not a neighbour's."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.cli.up import SERVICES, WORKERS
from services.client import SpadesClient
from services.runtime.discovery import StackRecord, find_stack
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

SHOWN_WITHIN_S = 30.0
"""A partition is claimed within seconds of a start (two renewals, ``services.runtime.claims``)."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("metrics-stack"))
    running.start()
    yield running
    status, left = running.terminate()
    assert status == 0, running.log_tail()
    assert not left, f"still running after SIGTERM: {left}"


@pytest.fixture(scope="module")
def record(stack: Stack) -> StackRecord:
    return find_stack(stack.data_dir)


def samples(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a metrics page, by name and labels."""
    answer = httpx.get(url, timeout=5.0)
    assert answer.status_code == 200, url
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def shown(url: str, name: str, **labels: str) -> float:
    """The value of one sample of a metrics page, once the process shows it (polled: the page is
    another process's, with nothing to await)."""
    key = (name, frozenset(labels.items()))
    deadline = time.monotonic() + SHOWN_WITHIN_S
    while True:
        page = samples(url)
        if key in page:
            return page[key]
        assert time.monotonic() < deadline, f"{url} shows no {name}{labels}: {sorted(page)}"
        time.sleep(0.2)


def test_the_record_names_a_metrics_page_of_its_own_for_every_kind(
    stack: Stack, record: StackRecord
) -> None:
    assert set(record.metrics) == set(SERVICES)
    assert record.metrics["gateway"] == f"{stack.base_url}/metrics"
    ports = {url.rsplit(":", 1)[1] for url in record.metrics.values()}
    assert len(ports) == len(SERVICES), record.metrics
    for url in record.metrics.values():
        assert url.startswith("http://127.0.0.1:")
        assert samples(url), url  # a page in Prometheus's format, with samples on it


async def test_the_engine_shows_the_commands_it_answered(stack: Stack, record: StackRecord) -> None:
    url = record.metrics["engine"]
    assert shown(url, "spades_partitions_held", kind="engine") == 1  # the one partition
    before = shown(url, "spades_engine_commands_total", outcome="accepted")
    async with SpadesClient(stack.base_url) as client:
        await client.create_game({"preset": "partnership"})
    page = samples(url)
    assert page[("spades_engine_commands_total", frozenset({("outcome", "accepted")}))] > before
    assert page[("spades_engine_decision_seconds_count", frozenset())] >= 1
    assert ("spades_engine_conflicts_total", frozenset()) in page


def test_only_the_engine_shows_engine_metrics(record: StackRecord) -> None:
    for kind, url in record.metrics.items():
        names = {name for name, _ in samples(url)}
        engine_names = {name for name in names if name.startswith("spades_engine_decision")}
        assert bool(engine_names) == (kind == "engine"), (kind, sorted(names))


@pytest.fixture(scope="module")
def held(record: StackRecord) -> dict[str, dict[str, float]]:
    """Each worker's ``spades_partitions_held`` samples, by the kind they name, once every worker
    shows one of its own (or the time for it has passed: one wait for them all)."""
    deadline = time.monotonic() + SHOWN_WITHIN_S
    while True:
        pages = {kind: samples(record.metrics[kind]) for kind in WORKERS}
        found = {
            kind: {
                dict(labels)["kind"]: value
                for (name, labels), value in page.items()
                if name == "spades_partitions_held"
            }
            for kind, page in pages.items()
        }
        if all(kind in found[kind] for kind in WORKERS) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


@pytest.mark.parametrize("kind", WORKERS)
def test_each_worker_shows_the_partitions_it_holds_and_no_other_kind(
    held: dict[str, dict[str, float]], kind: str
) -> None:
    assert held[kind].get(kind, 0) >= 1, held[kind]
    # the webhooks worker holds its games' partitions and, as webhooks-leagues, the leagues'
    assert set(held[kind]) <= {kind, f"{kind}-leagues"}, held[kind]
