"""Pages for people: the table, a watcher's view, a hand's replay, a league, its integrity
report, and the API docs.

Each page is a plain HTML file of ``services/gateway/pages/`` whose ES modules read the public
API from the browser, like any other client: there is no page-only endpoint and no build step.
Every page and asset comes from this server under a Content-Security-Policy that allows this
origin only (no inline script or style, no other host), so a page works offline and an
injected string can never run. A seat's token stays in the URL fragment, which no browser
sends; the scripts send it as ``Authorization: Bearer``. A watch link's token rides the same
way (``/watch/GAME#token=...``, ``/leagues/LEAGUE#token=...``, ``/replay/GAME?hand=N#token=...``),
and a platform's key the same way to its league's integrity report
(``/leagues/LEAGUE/integrity#token=KEY``).

A page of a game or a league may be framed by the sites its platform named
(``SPADES_FRAME_ORIGINS``, :mod:`services.gateway.embedding`), by no other; the home and
docs pages by none. A framed table tells its parent of each turn and of the game's end with
``postMessage``, and ``?theme=dark`` draws it dark (see ``assets/js/embed.js``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI
from fastapi import Path as PathParam
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from domain.league import LEAGUE_ID
from domain.seating import GAME_ID
from services.gateway.deps import Services
from services.gateway.embedding import frame_ancestors
from services.gateway.problems import ProblemError

PAGES = Path(__file__).resolve().parent.parent / "pages"
"""The HTML, CSS and JavaScript of the pages, served as they are."""

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    )
)
NO_FRAMES = "frame-ancestors 'none'"
PAGE_HEADERS = {
    "Content-Security-Policy": f"{CONTENT_SECURITY_POLICY}; {NO_FRAMES}",
    "X-Content-Type-Options": "nosniff",
    # The fragment (a seat's token) is never part of a referrer; nothing else needs to be.
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


def _page(name: str, ancestors: str = NO_FRAMES) -> FileResponse:
    headers = {**PAGE_HEADERS, "Content-Security-Policy": f"{CONTENT_SECURITY_POLICY}; {ancestors}"}
    return FileResponse(PAGES / name, media_type="text/html", headers=headers)


def _game_id(game_id: str) -> str:
    if not GAME_ID.fullmatch(game_id):
        raise ProblemError("game_not_found", "no game has that id")
    return game_id


GamePath = Annotated[str, PathParam(description="The game's id.")]


async def page_game_id(game_id: GamePath) -> str:
    return _game_id(game_id)


async def game_frames(game_id: Annotated[str, Depends(page_game_id)], services: Services) -> str:
    """Who may frame a page of this game: its platform's sites (none for an unknown game).
    Whether it exists is all this tells, and only to one who knows its id. (The id is checked
    first: an impossible one is a 404 before anything is read.)"""
    game = (await services.games.latest(game_id)).state
    return frame_ancestors(services.frame_origins, game.platform) if game is not None else NO_FRAMES


GameFrames = Annotated[str, Depends(game_frames)]


@router.api_route("/", methods=["GET", "HEAD"])
async def home() -> FileResponse:
    """Games being played and finished, and their leagues."""
    return _page("index.html")


@router.api_route("/play/{game_id}", methods=["GET", "HEAD"])
async def play(ancestors: GameFrames) -> FileResponse:
    """A seat's table; the seat's token comes in the fragment (``#token=...``)."""
    return _page("table.html", ancestors)


@router.api_route("/watch/{game_id}", methods=["GET", "HEAD"])
async def watch(ancestors: GameFrames) -> FileResponse:
    """The table without a hand; a watch link's token comes in the fragment."""
    return _page("table.html", ancestors)


@router.api_route("/replay/{game_id}", methods=["GET", "HEAD"])
async def replay(ancestors: GameFrames) -> FileResponse:
    """A finished hand (``?hand=N``), step by step, with its score and the audit's verdict."""
    return _page("replay.html", ancestors)


@router.api_route("/leagues/{league_id}", methods=["GET", "HEAD"])
async def league(
    services: Services,
    league_id: Annotated[str, PathParam(description="The league's id.")],
) -> FileResponse:
    """A league's rounds, tables and standings."""
    if not LEAGUE_ID.fullmatch(league_id):
        raise ProblemError("league_not_found", "no league has that id")
    found = (await services.leagues.latest(league_id)).state
    ancestors = frame_ancestors(services.frame_origins, found.platform) if found else NO_FRAMES
    return _page("league.html", ancestors)


@router.api_route("/leagues/{league_id}/integrity", methods=["GET", "HEAD"])
async def league_integrity(
    league_id: Annotated[str, PathParam(description="The league's id.")],
) -> FileResponse:
    """A league's integrity report, for its platform (whose key comes in the fragment). Never
    framed: it is a director's page, not a platform's to embed. Whether the league exists is
    for the API to say, and only to its platform."""
    if not LEAGUE_ID.fullmatch(league_id):
        raise ProblemError("league_not_found", "no league has that id")
    return _page("integrity.html")


@router.api_route("/docs", methods=["GET", "HEAD"])
async def docs() -> FileResponse:
    """The API's operations, rendered in the browser from ``/openapi.json``."""
    return _page("docs.html")


class Assets(StaticFiles):
    """The pages' scripts, styles and images, with the pages' headers."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(
                    (name.lower().encode(), value.encode()) for name, value in PAGE_HEADERS.items()
                )
                message["headers"] = headers
            await send(message)

        await super().__call__(scope, receive, send_with_headers)


def install_pages(app: FastAPI) -> None:
    """Serve the pages and their assets (``/assets/...``) on ``app``."""
    app.include_router(router)
    app.mount("/assets", Assets(directory=PAGES / "assets"), name="assets")
