"""What keeps the pages to their own host does work: the guard every browser test runs under
refuses and records a request to another host and records console errors, and the pages'
Content-Security-Policy stops a foreign image before any request is made."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page

from tests.browser.conftest import Guard
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

FOREIGN = "https://cdn.example.com/spades.png"
ADD_A_FOREIGN_IMAGE = """src => new Promise(done => {
    const image = document.createElement("img");
    image.onload = image.onerror = () => done(image.complete);
    image.src = src;
    document.body.append(image);
})"""


def guarded_page(browser: Browser, stack: Stack) -> tuple[Page, Guard]:
    guard = Guard(stack.base_url)
    context = browser.new_context(base_url=stack.base_url)
    context.route("**/*", guard.route)
    page = context.new_page()
    page.on("console", guard.console)
    page.on("pageerror", guard.page_error)
    return page, guard


def test_the_guard_refuses_a_request_to_another_host_and_records_console_errors(
    browser: Browser, stack: Stack
) -> None:
    page, guard = guarded_page(browser, stack)
    try:
        page.set_content("<p>a page of no policy</p>")
        page.evaluate(ADD_A_FOREIGN_IMAGE, FOREIGN)
        page.evaluate("() => console.error('something broke')")
    finally:
        page.context.close()
    assert guard.foreign == [FOREIGN]
    assert any("something broke" in error for error in guard.errors)
    with pytest.raises(AssertionError, match="another host"):
        guard.check()


def test_the_pages_policy_stops_a_foreign_image_before_it_is_requested(
    browser: Browser, stack: Stack
) -> None:
    page, guard = guarded_page(browser, stack)
    try:
        page.goto("/")
        page.evaluate(ADD_A_FOREIGN_IMAGE, FOREIGN)
    finally:
        page.context.close()
    assert guard.foreign == []  # never even asked for
    assert any("Content Security Policy" in error for error in guard.errors), guard.errors
