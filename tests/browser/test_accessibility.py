"""Every page, checked by axe-core (the npm package, pinned in ``tests/browser/axe``; ``make
test`` installs it) at a desk's width and a phone's 390 px: no serious or critical violation of
the WCAG 2.1 A and AA rules, and, on the phone, nothing that makes the page scroll sideways.

axe's script is evaluated through the driver (as DevTools runs a script), which the pages'
Content-Security-Policy does not stop: the pages are checked under their real policy."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, ViewportSize, expect

from tests.browser.conftest import DESK, Browse, screenshot
from tests.browser.games import Game, move_on, new_game, play_out
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
PHONE_390: ViewportSize = {"width": 390, "height": 844}
WIDTHS = {"desk": DESK, "phone": PHONE_390}
RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("serious", "critical")
PLAYERS = ["Ada", "Grace", "Alan", "Edsger"]
LEAGUE_PLAYERS = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal"]


@dataclass(frozen=True)
class Pages:
    """A path of every page, each showing what it shows at its fullest, and what it waits on."""

    paths: dict[str, tuple[str, str]]
    """name -> (path, a selector that is there once the page has drawn its data)."""


@pytest.fixture(scope="module")
def pages(stack: Stack) -> Pages:
    if not AXE.is_file():
        pytest.fail(f"no {AXE}: `make test` installs it (cd tests/browser/axe && npm ci)")
    with httpx.Client(base_url=stack.base_url, timeout=15.0) as http:
        playing = new_game(http, {"preset": "partnership"}, PLAYERS)
        move_on(http, playing, 6)  # the bids made, two cards on the table
        done = new_game(http, {"preset": "partnership", "max_hands": 1}, PLAYERS)
        play_out(http, done)
        league = http.post(
            "/v1/leagues",
            json={
                "name": "Thursday",
                "rules": {"preset": "partnership"},
                "players": LEAGUE_PLAYERS,
            },
        )
        assert league.status_code == 201, league.text
        league_id = league.json()["league_id"]
        started = http.post(f"/v1/leagues/{league_id}/rounds", json={})
        assert started.status_code == 201, started.text
        cup = http.post(
            "/v1/leagues",
            json={
                "name": "Cup",
                "rules": {"preset": "two-player"},
                "players": LEAGUE_PLAYERS[:6],
                "knockout": {"deals": 2},
            },
        )
        assert cup.status_code == 201, cup.text
        cup_id = cup.json()["league_id"]
        bracket = http.post(f"/v1/leagues/{cup_id}/rounds", json={})
        assert bracket.status_code == 201, bracket.text
    return Pages(
        {
            "home": ("/", f'#playing [data-game="{playing.game_id}"]'),
            "table": (play_path(playing), "#hand [data-card]"),
            "watch": (f"/watch/{playing.game_id}", "#seats .seat"),
            "watch-dark": (f"/watch/{playing.game_id}?theme=dark", "#seats .seat"),
            "finished": (f"/watch/{done.game_id}", '#connection[data-status="over"]'),
            "replay": (f"/replay/{done.game_id}?hand=1", "[data-audit]"),
            "replay-dark": (f"/replay/{done.game_id}?hand=1&theme=dark", "[data-audit]"),
            "league": (f"/leagues/{league_id}", "#standings tbody tr"),
            "knockout": (f"/leagues/{cup_id}", "#knockout [data-match]"),
            "docs": ("/docs", ".op"),
        }
    )


def play_path(game: Game) -> str:
    return f"/play/{game.game_id}#token={game.tokens[0]}"


def violations(page: Page) -> list[dict[str, Any]]:
    """axe's serious and critical violations of the page as it is drawn now."""
    page.evaluate(AXE.read_text())
    found: list[dict[str, Any]] = page.evaluate(
        """rules => axe.run(document, {
                runOnly: {type: "tag", values: rules}, resultTypes: ["violations"]})
            .then(result => result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary)})))""",
        RULES,
    )
    return [v for v in found if v["impact"] in BLOCKING]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    "name",
    [
        "home",
        "table",
        "watch",
        "watch-dark",
        "finished",
        "replay",
        "replay-dark",
        "league",
        "knockout",
        "docs",
    ],
)
def test_no_page_has_a_serious_accessibility_violation_nor_scrolls_sideways_on_a_phone(
    browse: Browse, pages: Pages, name: str, width: str
) -> None:
    path, drawn = pages.paths[name]
    page = browse.page(path, WIDTHS[width])
    expect(page.locator(drawn).first).to_be_attached()
    shot = screenshot(page, f"axe-{name}-{width}")
    found = violations(page)
    assert not found, f"{name} at {width} ({shot}): {found}"
    if width == "phone":
        wide = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert wide[0] <= wide[1], f"{name} scrolls sideways on a phone: {wide} ({shot})"
