"""``/docs`` renders every operation of the served OpenAPI document, with nothing from
another host."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Request, expect

from tests.browser.conftest import Browse, data_of, screenshot
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

METHODS = {"get", "post", "put", "patch", "delete"}


def test_the_docs_render_every_operation_offline(browse: Browse, stack: Stack) -> None:
    document = httpx.get(f"{stack.base_url}/openapi.json").json()
    operations = {
        f"{method} {path}"
        for path, item in document["paths"].items()
        for method in item
        if method in METHODS
    }
    assert "post /v1/games/{game_id}/actions" in operations

    page = browse.page("/docs")
    hosts: set[str] = set()

    def record(request: Request) -> None:
        hosts.add(request.url.split("/")[2])

    page.on("request", record)
    page.reload()
    shown = page.locator("[data-operation]")
    expect(shown).to_have_count(len(operations))
    found = set(data_of(shown, "operation"))
    assert found == operations
    assert hosts == {stack.base_url.split("/")[2]}

    actions = page.locator('[data-operation="post /v1/games/{game_id}/actions"]')
    actions.locator("summary").click()
    expect(actions).to_contain_text("idempotency-key", ignore_case=True)
    expect(actions.locator('[data-status="409"]')).to_contain_text("not_your_turn")
    actions.locator('a[href="#schema-Problem"]').first.click()
    expect(page.locator("#schema-Problem")).to_have_attribute("open", "")
    page.locator("#filter").fill("/audit")
    expect(page.locator("[data-operation]:visible")).to_have_count(
        sum("/audit" in op for op in operations)
    )
    screenshot(page, "docs")
