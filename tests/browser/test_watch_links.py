"""Watch links and embedding, on a server with platform keys (where games are private unless
made public): a platform's link shows its private game, its replays, its league and the
league's tables to whoever holds it, as the public would see a public game; an expired or a
revoked link is refused; a page of the platform's own site frames the table and hears of its
turns and its end, and any other site cannot frame it. And a league's integrity report, which
its platform reads with its own key in the fragment, and no one else."""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from services.gateway.auth import WatchTokens
from services.runtime.nats_server import free_port
from tests.browser.conftest import WAIT_MS, Browse, screenshot
from tests.browser.games import Game, move_on, new_game, play_out, state, view
from tests.browser.test_accessibility import PHONE_390, violations
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

SECRET = "watch-links-test-signing-key-0123456789abcdef"
ACME_KEY = "acme-key-0123456789abcdef0123456789"
BETA_KEY = "beta-key-0123456789abcdef0123456789"
SITE_PORT = free_port()
ACME_SITE = f"http://127.0.0.1:{SITE_PORT}"
OTHER_SITE = f"http://localhost:{SITE_PORT}"
"""Two origins of one small server of the test's (on this machine: a browser refuses a page of
the internet that frames a local address before any policy of ours could)."""
PLAYERS = ["Ada", "Grace", "Alan", "Edsger"]
LEAGUE_PLAYERS = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal"]
REFUSED_LOADS = ("status of 401", "status of 404")
"""The console lines a page refused by the server logs (the browser's own, for the answer)."""


@dataclass(frozen=True)
class Keyed:
    stack: Stack
    acme: httpx.Client
    beta: httpx.Client


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyed]:
    """A stack with two platforms, a signing key of the test's, and acme's site allowed to
    frame acme's pages."""
    stack = Stack(
        tmp_path_factory.mktemp("keyed-stack"),
        api_keys=f"acme:{ACME_KEY},beta:{BETA_KEY}",
        env={"SPADES_SECRET_KEY": SECRET, "SPADES_FRAME_ORIGINS": f"acme={ACME_SITE}"},
    )
    stack.start()
    try:
        with (
            httpx.Client(base_url=stack.base_url, headers=bearer(ACME_KEY), timeout=15) as acme,
            httpx.Client(base_url=stack.base_url, headers=bearer(BETA_KEY), timeout=15) as beta,
        ):
            yield Keyed(stack, acme, beta)
    finally:
        status, left = stack.terminate()
        assert status == 0, stack.log_tail()
        assert not left


class Site(BaseHTTPRequestHandler):
    """A platform's site: ``/game?src=URL`` is a page that frames URL."""

    def do_GET(self) -> None:
        src = self.path.partition("?src=")[2]
        body = EMBEDDING.format(src=urllib.parse.unquote(src)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def site() -> Iterator[None]:
    server = ThreadingHTTPServer(("127.0.0.1", SITE_PORT), Site)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    yield
    server.shutdown()
    server.server_close()


@pytest.fixture
def pages(browser: Browser, keyed: Keyed) -> Iterator[Browse]:
    """Guarded pages on the keyed stack; a refusal the test provokes may be logged."""
    opened = Browse(browser, keyed.stack.base_url)
    opened.allowed = lambda error: any(status in error for status in REFUSED_LOADS)
    yield opened
    try:
        for guard in opened.guards():
            guard.check(opened.allowed)
    finally:
        opened.close()


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


def watch_link(http: httpx.Client, path: str, **body: Any) -> dict[str, Any]:
    issued = http.post(f"{path}/watch-links", json=body or None)
    assert issued.status_code == 201, issued.text
    link: dict[str, Any] = issued.json()
    return link


def local(link: dict[str, Any]) -> str:
    """The link's path and fragment (the pages' base URL is the stack's)."""
    url: str = link["url"]
    return url.split("/", 3)[3].join(["/", ""])


def strings_in(value: Any) -> set[str]:
    """Every string anywhere in a JSON value."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*(strings_in(item) for item in value))
    return set()


def private_game(keyed: Keyed, moves: int, **rules: Any) -> Game:
    game = new_game(keyed.acme, {"preset": "partnership", **rules}, PLAYERS)
    move_on(keyed.acme, game, moves)
    return game


def test_a_watch_link_shows_a_private_game_as_the_public_sees_a_public_one(
    pages: Browse, keyed: Keyed
) -> None:
    game = private_game(keyed, 6)
    anyone = httpx.get(f"{keyed.stack.base_url}/v1/games/{game.game_id}")
    assert anyone.json()["code"] == "game_not_found"  # private: unknown to anyone else
    unknown = pages.page(f"/watch/{game.game_id}")
    expect(unknown.locator("#refusal")).to_have_attribute("data-code", "game_not_found")

    link = watch_link(keyed.acme, f"/v1/games/{game.game_id}", expires_in_s=600)
    assert link["url"] == f"{keyed.stack.base_url}/watch/{game.game_id}#token={link['token']}"
    page = pages.page(local(link))
    expect(page.locator("#connection")).to_have_attribute("data-status", "live")
    expect(page.locator("#seats .seat")).to_have_count(4)
    for player in PLAYERS:
        expect(page.locator("#seats")).to_contain_text(player)
    expect(page.locator("#hand-panel")).to_be_hidden()
    expect(page.locator("#hand [data-card]")).to_have_count(0)
    version = move_on(keyed.acme, game, 1)
    page.locator(f'body[data-version="{version}"]').wait_for(state="attached")
    screenshot(page, "watch-link")

    # The link reads; it never acts, sits, nor sees a hand; another game it does not show.
    with httpx.Client(base_url=keyed.stack.base_url, headers=bearer(link["token"])) as watcher:
        assert watcher.get(f"/v1/games/{game.game_id}").status_code == 200
        assert watcher.get(f"/v1/games/{game.game_id}/view").json()["code"] == "unauthorized"
        acted = watcher.post(f"/v1/games/{game.game_id}/actions", json={"type": "look"})
        assert acted.json()["code"] == "unauthorized"
        events = watcher.get(f"/v1/games/{game.game_id}/events").json()["events"]
        held = set(view(keyed.acme, game, 0)["hand"])  # seat 0's cards not played yet
        assert len(held) >= 12  # three cards are on the table; seat 0's may be one of them
        assert not held & strings_in(events), "a watcher saw a card of a hand"
        other = new_game(keyed.acme, {"preset": "partnership"}, PLAYERS)
        assert watcher.get(f"/v1/games/{other.game_id}").json()["code"] == "forbidden"
        assert watcher.post("/v1/games", json={"rules": {}}).status_code == 401
    # Only the game's platform issues its links; to another it is no game at all.
    refused = keyed.beta.post(f"/v1/games/{game.game_id}/watch-links")
    assert (refused.status_code, refused.json()["code"]) == (404, "game_not_found")
    too_long = keyed.acme.post(
        f"/v1/games/{game.game_id}/watch-links", json={"expires_in_s": 40 * 86_400}
    )
    assert (too_long.status_code, too_long.json()["code"]) == (400, "malformed")


def test_a_watch_link_replays_a_finished_hand_of_a_private_game(
    pages: Browse, keyed: Keyed
) -> None:
    game = private_game(keyed, 0, max_hands=1)
    play_out(keyed.acme, game)
    link = watch_link(keyed.acme, f"/v1/games/{game.game_id}")
    table = pages.page(local(link))
    expect(table.locator("#connection")).to_have_attribute("data-status", "over")
    expect(table.locator("#seats [data-seat-score]")).to_have_count(4)
    expect(table.locator("#seats")).not_to_contain_text("bid")
    screenshot(table, "watch-link-finished")
    table.locator("#scores a", has_text="hand 1").click()
    expect(table.locator("[data-audit]")).to_have_attribute("data-audit", "ok")
    expect(table.locator("#watch-link")).to_have_attribute(
        "href", f"/watch/{game.game_id}#token={link['token']}"
    )


def test_an_expired_watch_link_is_refused(pages: Browse, keyed: Keyed) -> None:
    game = private_game(keyed, 0)
    an_hour_ago = WatchTokens(SECRET.encode(), clock=lambda: time.time() - 3600)
    token = an_hour_ago.issue("game", game.game_id, 0, 600).token  # as issued then, for 10 min
    page = pages.page(f"/watch/{game.game_id}#token={token}")
    expect(page.locator("#refusal")).to_have_attribute("data-code", "unauthorized")
    expect(page.locator("#refusal")).to_contain_text("expired")
    expect(page.locator("#seats .seat")).to_have_count(0)
    replay = pages.page(f"/replay/{game.game_id}?hand=1#token={token}")
    expect(replay.locator("#problem")).to_contain_text("expired")
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    answer = httpx.get(f"{keyed.stack.base_url}/v1/games/{game.game_id}", headers=bearer(forged))
    assert answer.json()["code"] == "unauthorized"


def test_a_revoked_watch_link_is_refused_and_a_new_one_works(pages: Browse, keyed: Keyed) -> None:
    game = private_game(keyed, 0)
    old = watch_link(keyed.acme, f"/v1/games/{game.game_id}")
    before = pages.page(local(old))
    expect(before.locator("#seats .seat")).to_have_count(4)
    revoked = keyed.acme.delete(f"/v1/games/{game.game_id}/watch-links")
    assert revoked.status_code == 204
    assert keyed.beta.delete(f"/v1/games/{game.game_id}/watch-links").status_code == 404
    after = pages.page(local(old))
    expect(after.locator("#refusal")).to_have_attribute("data-code", "unauthorized")
    expect(after.locator("#refusal")).to_contain_text("revoked")
    new = watch_link(keyed.acme, f"/v1/games/{game.game_id}")
    expect(pages.page(local(new)).locator("#seats .seat")).to_have_count(4)


def test_a_league_watch_link_shows_the_league_and_its_tables(pages: Browse, keyed: Keyed) -> None:
    created = keyed.acme.post(
        "/v1/leagues",
        json={"name": "Acme night", "rules": {"preset": "partnership"}, "players": LEAGUE_PLAYERS},
    )
    assert created.status_code == 201, created.text
    league_id = created.json()["league_id"]
    started = keyed.acme.post(f"/v1/leagues/{league_id}/rounds", json={})
    assert started.status_code == 201, started.text
    first = started.json()["tables"][0]["game_id"]
    unknown = pages.page(f"/leagues/{league_id}")
    expect(unknown.locator("#problem")).to_contain_text("league_not_found")

    link = watch_link(keyed.acme, f"/v1/leagues/{league_id}")
    assert link["url"].endswith(f"/leagues/{league_id}#token={link['token']}")
    page = pages.page(local(link))
    expect(page.locator("#standings tbody tr")).to_have_count(len(LEAGUE_PLAYERS))
    screenshot(page, "league-watch-link")
    page.locator(f'[data-game="{first}"] a', has_text="watch").click()
    expect(page).to_have_url(f"{keyed.stack.base_url}/watch/{first}#token={link['token']}")
    expect(page.locator("#seats .seat")).to_have_count(4)
    # A league's link shows the league's tables, and no other game.
    loner = new_game(keyed.acme, {"preset": "partnership"}, PLAYERS)
    with httpx.Client(base_url=keyed.stack.base_url, headers=bearer(link["token"])) as watcher:
        assert watcher.get(f"/v1/games/{loner.game_id}").json()["code"] == "game_not_found"
        assert watcher.get(f"/v1/games/{first}/view").json()["code"] == "unauthorized"
    keyed.acme.delete(f"/v1/leagues/{league_id}/watch-links").raise_for_status()
    refused = pages.page(local(link))
    expect(refused.locator("#problem")).to_contain_text("revoked")


def test_the_home_page_with_the_platforms_key_lists_its_private_games(
    pages: Browse, keyed: Keyed
) -> None:
    game = private_game(keyed, 0, max_hands=1)
    play_out(keyed.acme, game)
    playing = private_game(keyed, 2)
    public = pages.page("/")
    expect(public.locator("#platform-note")).to_be_hidden()
    for hidden in (game, playing):
        expect(public.locator(f'[data-game="{hidden.game_id}"]')).to_have_count(0)
    others = pages.page(f"/#token={BETA_KEY}")  # another platform's key: none of acme's games
    expect(others.locator("#platform-note")).to_be_visible()
    expect(others.locator("#finished")).not_to_contain_text("Loading")
    expect(others.locator(f'[data-game="{game.game_id}"]')).to_have_count(0)

    home = pages.page(f"/#token={ACME_KEY}")
    expect(home.locator("#platform-note")).to_be_visible()
    expect(home.locator(f'#playing [data-game="{playing.game_id}"]')).to_have_count(1)
    finished = home.locator(f'#finished [data-game="{game.game_id}"]')
    expect(finished.locator("a", has_text="replay hand 1")).to_have_attribute(
        "href", f"/replay/{game.game_id}?hand=1#token={ACME_KEY}"
    )
    screenshot(home, "home-platform")
    finished.locator("a", has_text="the table").click()
    expect(home).to_have_url(f"{keyed.stack.base_url}/watch/{game.game_id}#token={ACME_KEY}")
    expect(home.locator("#connection")).to_have_attribute("data-status", "over")
    expect(home.locator("#seats [data-seat-score]")).to_have_count(4)


def test_a_leagues_integrity_page_shows_its_platform_the_signals(
    pages: Browse, keyed: Keyed
) -> None:
    players = LEAGUE_PLAYERS[:6]
    rules = {"preset": "cutthroat", "max_hands": 2}
    created = keyed.acme.post(
        "/v1/leagues", json={"name": "Acme cutthroat", "rules": rules, "players": players}
    )
    assert created.status_code == 201, created.text
    league_id = created.json()["league_id"]
    started = keyed.acme.post(f"/v1/leagues/{league_id}/rounds", json={})
    assert started.status_code == 201, started.text
    played = 0  # two hands a table, or more while the leaders were level (a tie on top plays on)
    for table in started.json()["tables"]:
        seats = table["seats"]
        game = Game(table["game_id"], [s["token"] for s in seats], [s["player"] for s in seats])
        play_out(keyed.acme, game)
        played += state(keyed.acme, game.game_id)["hand_number"]
    assert played >= 4
    report_path = f"/v1/leagues/{league_id}/integrity"
    deadline = time.monotonic() + WAIT_MS / 1000
    while (report := keyed.acme.get(report_path).json())["hands"] < played:
        assert time.monotonic() < deadline, report
        time.sleep(0.2)
    assert report["hands"] == played

    path = f"/leagues/{league_id}/integrity#token={ACME_KEY}"
    page = pages.page(path)
    rows = page.locator("#signals tbody tr")
    expect(rows).to_have_count(len(report["signals"]))
    for row, signal in zip(rows.all(), report["signals"], strict=True):
        expect(row).to_have_attribute("data-signal", signal["signal"])
        expect(row.locator("th")).to_have_text(" / ".join(signal["players"]))
    expect(page.locator("#title")).to_contain_text(league_id)
    screenshot(page, "integrity")
    assert not violations(page)
    phone = pages.page(path, PHONE_390)
    expect(phone.locator("#signals tbody tr")).to_have_count(len(report["signals"]))
    assert not violations(phone)
    wide = phone.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert wide[0] <= wide[1], f"the integrity page scrolls sideways on a phone: {wide}"

    # The league's page links to it, the key carried on in the fragment.
    league = pages.page(f"/leagues/{league_id}#token={ACME_KEY}")
    league.locator("#integrity").click()
    expect(league).to_have_url(f"{keyed.stack.base_url}{path}")
    expect(league.locator("#signals tbody tr")).to_have_count(len(report["signals"]))

    # Another platform's key, or none, reads nothing of it.
    other = pages.page(f"/leagues/{league_id}/integrity#token={BETA_KEY}")
    expect(other.locator("#problem")).to_contain_text("league_not_found")
    expect(other.locator("#signals tbody tr")).to_have_count(0)
    nobody = pages.page(f"/leagues/{league_id}/integrity")
    expect(nobody.locator("#problem")).to_contain_text("unauthorized")


EMBEDDING = """<!doctype html><html lang="en"><head><title>A platform's page</title></head>
<body><h1>Our game</h1><iframe title="The table" width="900" height="700" src="{src}"></iframe>
<script>
window.heard = [];
window.addEventListener("message", (e) => window.heard.push({{origin: e.origin, data: e.data}}));
</script></body></html>"""


def site_page(browser: Browser) -> Page:
    """A page for a platform's site, in a context of its own."""
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    return context.new_page()


def framing(site: str, src: str) -> str:
    """The address of ``site``'s page that frames ``src``."""
    return f"{site}/game?src={urllib.parse.quote(src, safe='')}"


def heard(page: Page) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = page.evaluate("() => window.heard")
    return messages


@pytest.mark.usefixtures("site")
def test_the_platforms_site_frames_the_table_and_hears_its_turns_and_its_end(
    browser: Browser, keyed: Keyed
) -> None:
    game = private_game(keyed, 0, max_hands=1)
    link = watch_link(keyed.acme, f"/v1/games/{game.game_id}")
    src = f"{keyed.stack.base_url}/watch/{game.game_id}?theme=dark#token={link['token']}"
    page = site_page(browser)
    try:
        page.goto(framing(ACME_SITE, src))
        table = page.frame_locator("iframe")
        expect(table.locator("#seats .seat")).to_have_count(4)
        expect(table.locator("html")).to_have_attribute("data-theme", "dark")
        page.wait_for_function("() => window.heard.some(m => m.data.type === 'turn')")
        move_on(keyed.acme, game, 4)  # every bid: the play's first turn
        page.wait_for_function(
            "() => window.heard.some(m => m.data.type === 'turn' && m.data.phase === 'play')"
        )
        play_out(keyed.acme, game)
        page.wait_for_function("() => window.heard.some(m => m.data.type === 'game_over')")
        screenshot(page, "embedded-table")
        messages = heard(page)
        assert {m["origin"] for m in messages} == {keyed.stack.base_url}
        assert all(m["data"]["source"] == "spades" for m in messages)
        assert all(m["data"]["game_id"] == game.game_id for m in messages)
        over = [m["data"] for m in messages if m["data"]["type"] == "game_over"]
        final = keyed.acme.get(f"/v1/games/{game.game_id}").json()
        assert over == [
            {
                "source": "spades",
                "type": "game_over",
                "game_id": game.game_id,
                "version": final["version"],
                "winners": final["winners"],
                "scores": final["scores"],
            }
        ]
        turns = [m["data"] for m in messages if m["data"]["type"] == "turn"]
        assert all("hand" not in turn and "cards" not in turn for turn in turns)
        assert len({(t["hand_number"], t["phase"], t["seat"]) for t in turns}) >= 2
    finally:
        page.context.close()


@pytest.mark.usefixtures("site")
def test_no_other_site_can_frame_a_platforms_pages(browser: Browser, keyed: Keyed) -> None:
    game = private_game(keyed, 0)
    link = watch_link(keyed.acme, f"/v1/games/{game.game_id}")
    page_of = f"/watch/{game.game_id}"
    policy = keyed.acme.get(page_of).headers["content-security-policy"]
    assert f"frame-ancestors {ACME_SITE}" in policy
    beta_game = new_game(keyed.beta, {"preset": "partnership"}, PLAYERS)
    beta_policy = keyed.beta.get(f"/watch/{beta_game.game_id}").headers["content-security-policy"]
    assert "frame-ancestors 'none'" in beta_policy

    src = f"{keyed.stack.base_url}{page_of}#token={link['token']}"
    page = site_page(browser)
    try:
        # Chromium says why it refused the frame: the policy's frame-ancestors, naming acme.
        with page.expect_console_message(lambda m: "frame-ancestors" in m.text) as refusal:
            page.goto(framing(OTHER_SITE, src))
        assert ACME_SITE in refusal.value.text
        expect(page.frame_locator("iframe").locator("#seats")).to_have_count(0)
        assert heard(page) == []
    finally:
        page.context.close()
