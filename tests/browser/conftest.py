"""Browser tests: the pages in a real headless Chromium (Debian's ``chromium``, driven by
Playwright for Python; Playwright's own browsers are never downloaded), against one real stack.

One browser for the suite, a fresh context per page under test. Every context is guarded:
each request is routed, and one to any host but the stack's is refused and recorded; every
console error and uncaught page error is recorded; a test fails on either unless it names what
it expects (a 409 it provoked, a connection it cut). Screenshots go to ``var/screenshots/``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Locator,
    Page,
    Playwright,
    Route,
    ViewportSize,
    sync_playwright,
)

from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
PHONE: ViewportSize = {"width": 375, "height": 740}
DESK: ViewportSize = {"width": 1280, "height": 900}
WAIT_MS = 20_000
"""The longest a page may take to show what a test waits for (the machine is shared)."""

if os.environ.get("CI") != "true" and not shutil.which(CHROMIUM):
    pytest.skip(
        f"no {CHROMIUM}: `apt-get install chromium` (.ci/run does)", allow_module_level=True
    )


@dataclass
class Guard:
    """What a context did that it must not: a request to another host, a console error."""

    origin: str
    foreign: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def route(self, route: Route) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob") or f"{parts.scheme}://{parts.netloc}" == self.origin:
            route.fallback()
            return
        self.foreign.append(url)
        route.abort("blockedbyclient")

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text} ({message.location.get('url', '')})")

    def page_error(self, error: Exception) -> None:
        self.errors.append(f"page error: {error}")

    def check(self, allowed: Callable[[str], bool] = lambda _: False) -> None:
        assert not self.foreign, f"requests to another host: {self.foreign}"
        unexpected = [error for error in self.errors if not allowed(error)]
        assert not unexpected, f"errors in the page: {unexpected}"


@dataclass
class Browse:
    """Opens guarded pages on the stack; checks every guard when the test ends."""

    browser: Browser
    base_url: str
    contexts: list[tuple[BrowserContext, Guard]] = field(default_factory=list)
    allowed: Callable[[str], bool] = lambda _: False

    def page(self, path: str, viewport: ViewportSize | None = None) -> Page:
        context = self.browser.new_context(
            viewport=viewport or DESK, base_url=self.base_url, service_workers="block"
        )
        context.set_default_timeout(WAIT_MS)
        guard = Guard(self.base_url)
        context.route("**/*", guard.route)
        page = context.new_page()
        page.on("console", guard.console)
        page.on("pageerror", guard.page_error)
        self.contexts.append((context, guard))
        page.goto(path)
        return page

    def guards(self) -> list[Guard]:
        return [guard for _, guard in self.contexts]

    def close(self) -> None:
        for context, _ in self.contexts:
            context.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests first, together: the longest unit of work starts first (under
    pytest-xdist the other workers take everything else meanwhile). Playwright's sync API marks
    the thread's event loop as running while its browser lives, so the driver and the browser
    are this package's fixtures: torn down after its last test, before any async test runs."""
    browser = [item for item in items if _is_browser_test(item)]
    if browser:
        items[:] = browser + [item for item in items if not _is_browser_test(item)]


def _is_browser_test(item: pytest.Item) -> bool:
    return Path(__file__).parent in Path(item.path).parents


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The whole stack for the browser tests (no platform keys: the pages read as anyone)."""
    running = Stack(tmp_path_factory.mktemp("browser-stack"))
    running.start()
    yield running
    status, left = running.terminate()
    assert status == 0, f"`spades up` exited with {status}:\n{running.log_tail()}"
    assert not left, f"still running after SIGTERM: {left}"


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """The driver, for this package's tests only: under pytest-xdist a worker may run other
    suites after these, and they need the thread's event loop back."""
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = playwright.chromium.launch(
        executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
    )
    yield launched
    launched.close()


@pytest.fixture
def browse(browser: Browser, stack: Stack) -> Iterator[Browse]:
    """Guarded pages on the stack; the test fails if any of them broke the rules."""
    opened = Browse(browser, stack.base_url)
    yield opened
    try:
        for guard in opened.guards():
            guard.check(opened.allowed)
    finally:
        opened.close()


def screenshot(page: Page, name: str) -> Path:
    """Keep a picture of the page as a test artifact (``var/screenshots/NAME.png``)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def data_of(elements: Locator, name: str) -> list[str]:
    """The ``data-NAME`` value of each element, in page order (``data_of(cards, "card")``)."""
    values: list[str] = elements.evaluate_all(f"es => es.map(e => e.dataset.{name})")
    return values
