"""Watch links' tokens and the sites that may frame a platform's pages, without a server: what
a token names, that it cannot be forged, stretched or read as a seat token, and how
``SPADES_FRAME_ORIGINS`` becomes a page's ``frame-ancestors``."""

from __future__ import annotations

import pytest

from services.gateway.auth import SeatTokens, WatchGrant, WatchTokens, is_watch_token
from services.gateway.embedding import frame_ancestors, parse_frame_origins

KEY = b"k" * 32
NOW = 1_800_000_000.0


def test_a_watch_token_names_its_game_or_league_generation_and_expiry() -> None:
    tokens = WatchTokens(KEY, clock=lambda: NOW)
    issued = tokens.issue("game", "c66b4a1393d821f7", 3, 600)
    assert is_watch_token(issued.token)
    assert tokens.read(issued.token) == WatchGrant("game", "c66b4a1393d821f7", 3, int(NOW) + 600)
    assert issued.expires_at == "2027-01-15T08:10:00Z"
    league = tokens.read(tokens.issue("league", "Tuesday-league", 0, 60).token)
    assert league is not None
    assert league.covers("any-table", "Tuesday-league")
    assert not league.covers("any-table", None)
    assert not league.covers("any-table", "another-league")
    game = tokens.read(issued.token)
    assert game is not None
    assert game.covers("c66b4a1393d821f7", "Tuesday-league")
    assert not game.covers("0000000000000000", None)
    assert not game.expired(NOW + 599)
    assert game.expired(NOW + 600)


def test_a_watch_token_altered_or_signed_by_another_key_reads_as_nothing() -> None:
    issued = WatchTokens(KEY, clock=lambda: NOW).issue("game", "c66b4a1393d821f7", 0, 600).token
    tokens = WatchTokens(KEY)
    body, _, mac = issued.rpartition(".")
    stretched = body.replace(f".{int(NOW) + 600}.", f".{int(NOW) + 999_999}.")
    other_game = body.replace("c66b4a1393d821f7", "c66b4a1393d821f8")
    older = body.replace(".game.c66b4a1393d821f7.0.", ".game.c66b4a1393d821f7.1.")
    for forged in (f"{stretched}.{mac}", f"{other_game}.{mac}", f"{older}.{mac}", "wl1.x"):
        assert tokens.read(forged) is None, forged
    assert WatchTokens(b"o" * 32).read(issued) is None


def test_a_watch_token_is_no_seat_token_and_a_seat_token_no_watch_token() -> None:
    watch = WatchTokens(KEY).issue("game", "c66b4a1393d821f7", 0, 600).token
    seat = SeatTokens(KEY, 600).issue("c66b4a1393d821f7", 0, 1).token
    assert SeatTokens(KEY, 600).read(watch) is None
    assert WatchTokens(KEY).read(seat) is None
    assert not is_watch_token(seat)


def test_frame_origins_per_platform_become_the_pages_frame_ancestors() -> None:
    origins = parse_frame_origins(
        " acme=https://acme.example https://www.acme.example:8443 ; beta=http://127.0.0.1:9000;"
        " http://localhost:3000"
    )
    assert origins == {
        "acme": ("https://acme.example", "https://www.acme.example:8443"),
        "beta": ("http://127.0.0.1:9000",),
        None: ("http://localhost:3000",),
    }
    assert frame_ancestors(origins, "acme") == (
        "frame-ancestors https://acme.example https://www.acme.example:8443"
    )
    assert frame_ancestors(origins, None) == "frame-ancestors http://localhost:3000"
    assert frame_ancestors(origins, "rival") == "frame-ancestors 'none'"
    assert frame_ancestors({}, None) == "frame-ancestors 'none'"


@pytest.mark.parametrize(
    "text",
    [
        "acme=",
        "acme=https://acme.example/path",
        "acme=*",
        "acme=https://acme.example 'unsafe-inline'",
        "a b=https://acme.example",
        "acme=javascript:alert(1)",
    ],
)
def test_a_bad_frame_origin_is_refused_at_start(text: str) -> None:
    with pytest.raises(ValueError, match="SPADES_FRAME_ORIGINS"):
        parse_frame_origins(text)
