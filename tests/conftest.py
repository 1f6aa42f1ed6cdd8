"""What every suite shares: the PostgreSQL the tests run against, how the tests are spread over
pytest-xdist workers, and a loud account of every test that did not run.

PostgreSQL: ``SPADES_TEST_POSTGRES_URL`` when it is set (set and empty: no PostgreSQL); else the
machine's own server when one answers at :data:`LOCAL_POSTGRES`, as on every developer's
machine and CI. Found or not, the header says which, and the end of the run names each test that
was skipped and why.

Workers (``make test`` runs ``pytest -n``, ``--dist loadgroup``): a test file is one unit of
work, so its module fixtures (an engine process, a gateway) start once; the browser suite is
one unit, run after everything else its worker has (Playwright's sync API holds the thread's
event loop for as long as its browser lives). Session fixtures (a nats-server, a whole stack)
are each worker's own; every server listens on free ports and keeps its files under the test's
temporary directory, so workers share nothing.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

POSTGRES_VARIABLE = "SPADES_TEST_POSTGRES_URL"
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
PROBE_TIMEOUT_S = 3.0
TESTS = Path(__file__).parent
BROWSER_SUITE = TESTS / "browser"
POSTGRES_NOTE = pytest.StashKey[str]()


def _probe(url: str) -> str | None:
    """None when PostgreSQL answers at ``url``; else why not."""
    import asyncpg

    async def connect() -> None:
        connection = await asyncpg.connect(url, timeout=PROBE_TIMEOUT_S)
        try:
            await connection.fetchval("select 1")
        finally:
            await connection.close()

    try:
        asyncio.run(connect())
    except Exception as error:  # any failure is a reason to report, not to raise
        return f"{type(error).__name__}: {error}".splitlines()[0]
    return None


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller decided, in its env
        config.stash[POSTGRES_NOTE] = os.environ.get("SPADES_TEST_POSTGRES_NOTE", "")
        return
    given = os.environ.get(POSTGRES_VARIABLE)
    if given is not None:
        note = (
            f"PostgreSQL: {POSTGRES_VARIABLE} is set but empty: the PostgreSQL tests are skipped"
            if not given
            else f"PostgreSQL: {POSTGRES_VARIABLE} (given)"
        )
    else:
        why_not = _probe(LOCAL_POSTGRES)
        if why_not is None:
            os.environ[POSTGRES_VARIABLE] = LOCAL_POSTGRES  # inherited by the xdist workers
            note = f"PostgreSQL: the local server, {LOCAL_POSTGRES} (found running)"
        else:
            note = (
                f"PostgreSQL: NONE: {POSTGRES_VARIABLE} is unset and {LOCAL_POSTGRES} does not "
                f"answer ({why_not}): the PostgreSQL tests are SKIPPED"
            )
    os.environ["SPADES_TEST_POSTGRES_NOTE"] = note
    config.stash[POSTGRES_NOTE] = note


def pytest_report_header(config: pytest.Config) -> str:
    return config.stash.get(POSTGRES_NOTE, "")


def _suite_of(item: pytest.Item) -> str:
    """The unit of work an item belongs to: the browser suite, else its own file."""
    path = Path(item.path)
    if BROWSER_SUITE in path.parents:
        return "browser"
    return path.relative_to(TESTS).as_posix()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test without an ``xdist_group`` its unit of work (before xdist reads them)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(_suite_of(item)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name every skipped test and why, last, where nobody misses it."""
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report, pytest.TestReport)
    ]
    note = terminalreporter.config.stash.get(POSTGRES_NOTE, "")
    if note:
        terminalreporter.write_line(note, yellow="NONE" in note, bold=True)
    if not skipped:
        return
    terminalreporter.section(f"{len(skipped)} tests did NOT run", sep="!", yellow=True, bold=True)
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        name = report.nodeid.split("@", 1)[0]  # without the xdist group suffix
        reason = str(reason).removeprefix("Skipped: ")
        terminalreporter.write_line(f"SKIPPED {name}: {reason}", yellow=True)


@pytest.fixture(autouse=True)
def _hands_sealed() -> None:
    """The hands model of the tests' own processes seals with a key of theirs, as a projections
    process does with the service's (services started as processes read their own). Set before
    every test: a service a test runs in its own process sets the key of its settings."""
    from services.projections.registry import seal_hands

    seal_hands(b"the tests' service key")  # conftest_projections.TESTS_KEY
