"""The pages as files and as the gateway serves them: a strict Content-Security-Policy, nothing
that could load from another host or run inline, and every asset they name really served.

The routes need no NATS, so the app is used without its lifespan."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from services.gateway.app import create_app
from services.gateway.routes.pages import CONTENT_SECURITY_POLICY, PAGES

PAGE_PATHS = ["/", "/docs"]
"""Pages that name no game or league (those read the game's platform, which needs the stack:
tests/browser/test_watch_links.py checks their policy)."""
FILES = sorted(path for path in PAGES.rglob("*") if path.is_file())
TEXT_FILES = [path for path in FILES if path.suffix in {".html", ".js", ".css", ".svg"}]


@pytest.fixture(scope="module")
def http() -> TestClient:
    return TestClient(create_app())


@pytest.mark.parametrize("path", PAGE_PATHS)
def test_every_page_is_served_under_a_policy_that_allows_this_origin_only(
    http: TestClient, path: str
) -> None:
    answer = http.get(path)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    policy = answer.headers["content-security-policy"]
    assert policy == f"{CONTENT_SECURITY_POLICY}; frame-ancestors 'none'"
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    for directive in ("default-src", "script-src", "style-src", "img-src", "connect-src"):
        assert directives[directive] == "'self'", directive
    assert "unsafe" not in policy
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert http.head(path).status_code == 200


def test_the_docs_are_our_own_page_not_one_that_loads_from_a_cdn(http: TestClient) -> None:
    answer = http.get("/docs")
    assert "/assets/js/docs.js" in answer.text
    assert "cdn" not in answer.text.lower()
    assert http.get("/redoc").status_code == 404


@pytest.mark.parametrize("path", ["/play/not a game", "/watch/" + "x" * 65, "/replay/a.b"])
def test_a_page_for_an_impossible_game_id_is_a_404_problem(http: TestClient, path: str) -> None:
    answer = http.get(path)
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "game_not_found"


@pytest.mark.parametrize("path", TEXT_FILES, ids=lambda p: str(p.relative_to(PAGES)))
def test_no_page_file_names_another_host_or_runs_anything_inline(path: Path) -> None:
    text = path.read_text()
    assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.IGNORECASE) or (
        path.suffix == ".svg" and "http://www.w3.org/2000/svg" in text
    )
    if path.suffix == ".html":
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), "an inline script"
        assert not re.search(r"\son[a-z]+=", text), "an inline event handler"
        assert not re.search(r"\sstyle=", text), "an inline style"
        assert "<style" not in text
    if path.suffix == ".js":
        for risky in ("innerHTML", "outerHTML", "eval(", "new Function", "document.write"):
            assert risky not in text, risky


def _named_assets() -> set[str]:
    named: set[str] = set()
    for path in TEXT_FILES:
        text = path.read_text()
        named |= set(re.findall(r"""(?:src|href)="(/assets/[^"]+)\"""", text))
        if path.suffix == ".js":
            for module in re.findall(r"""from "\./([^"]+)\"""", text):
                named.add(f"/assets/js/{module}")
    return named


def test_every_asset_a_page_names_is_served(http: TestClient) -> None:
    named = _named_assets()
    assert {"/assets/js/table.js", "/assets/js/api.js", "/assets/pages.css"} <= named
    for asset in sorted(named):
        answer = http.get(asset)
        assert answer.status_code == 200, asset
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert http.get("/assets/js/table.js").headers["content-type"].startswith("text/javascript")
    assert http.get("/assets/no-such-file.js").status_code == 404
