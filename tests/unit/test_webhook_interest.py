"""What the webhooks worker maps commits by: per platform, the sequence after which one of its
endpoints wants to hear; and when commits mapped by one view of the endpoints made every webhook
another view asks for (then the ingest need not map them again)."""

from __future__ import annotations

import doctest

import pytest

import services.webhooks.interest
from services.store.webhook_endpoints import Endpoint
from services.webhooks.interest import Interest, covers, interest_of


def endpoint(name: str, platform: str, **starts: int) -> Endpoint:
    return Endpoint(
        id=f"ep_{name:0>24}",
        platform=platform,
        url="https://hooks.example/",
        events=("game.turn",),
        secret="whsec_x",
        created_at=0.0,
        starts=starts,
    )


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(services.webhooks.interest).failed == 0


def test_a_platforms_interest_begins_where_its_earliest_endpoint_asks_in_each_stream() -> None:
    endpoints = [
        endpoint("a", "acme", SPADES_GAMES_0=40, SPADES_GAMES_1=7, SPADES_LEAGUES=3),
        endpoint("b", "acme", SPADES_GAMES_0=25, SPADES_GAMES_1=9, SPADES_LEAGUES=9),
        endpoint("r", "rival", SPADES_GAMES_0=70, SPADES_GAMES_1=0, SPADES_LEAGUES=0),
    ]
    assert interest_of(endpoints, "SPADES_GAMES_0") == {"acme": 25, "rival": 70}
    assert interest_of(endpoints, "SPADES_GAMES_1") == {"acme": 7, "rival": 0}
    assert interest_of(endpoints, "SPADES_LEAGUES") == {"acme": 3, "rival": 0}
    assert interest_of([], "SPADES_GAMES_0") == {}


def test_an_endpoint_without_a_starting_point_in_a_stream_wants_nothing_of_it_yet() -> None:
    endpoints = [
        endpoint("a", "acme", SPADES_GAMES=40),
        endpoint("r", "rival", SPADES_GAMES=10, SPADES_GAMES_0=5),
    ]
    assert interest_of(endpoints, "SPADES_GAMES_0") == {"rival": 5}


@pytest.mark.parametrize(
    ("mapped", "wanted", "covered"),
    [
        ({"acme": 10}, {"acme": 10}, True),
        ({"acme": 10}, {}, True),  # endpoints deleted: nothing more is wanted
        ({"acme": 10}, {"acme": 30}, True),  # wants less of what was mapped
        ({"acme": 10}, {"acme": 5}, False),  # wants commits mapped as no one's
        ({"acme": 10}, {"acme": 10, "rival": 50}, True),  # registered after them
        ({"acme": 10}, {"acme": 10, "rival": 49}, False),  # wants the last one
        ({}, {"rival": 0}, False),
    ],
)
def test_commits_mapped_by_one_view_cover_another_unless_it_wants_one_they_left_out(
    mapped: Interest, wanted: Interest, covered: bool
) -> None:
    assert covers(mapped, wanted, through=50) is covered
