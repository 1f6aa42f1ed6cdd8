"""What the webhooks worker maps commits by: per platform, the sequence after which one of its
endpoints wants to hear; and when commits mapped by one view of the endpoints made every webhook
another view asks for (then the ingest need not map them again)."""

from __future__ import annotations

import doctest

import pytest

import services.webhooks.interest
from services.store.webhook_endpoints import Endpoint
from services.webhooks.interest import Interest, covers, interest_of


def endpoint(name: str, platform: str, games_after: int, leagues_after: int = 0) -> Endpoint:
    return Endpoint(
        id=f"ep_{name:0>24}",
        platform=platform,
        url="https://hooks.example/",
        events=("game.turn",),
        secret="whsec_x",
        created_at=0.0,
        games_after=games_after,
        leagues_after=leagues_after,
    )


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(services.webhooks.interest).failed == 0


def test_a_platforms_interest_begins_where_its_earliest_endpoint_asks_in_each_stream() -> None:
    endpoints = [
        endpoint("a", "acme", 40, leagues_after=3),
        endpoint("b", "acme", 25, leagues_after=9),
        endpoint("r", "rival", 70),
    ]
    assert interest_of(endpoints, "games") == {"acme": 25, "rival": 70}
    assert interest_of(endpoints, "leagues") == {"acme": 3, "rival": 0}
    assert interest_of([], "games") == {}


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
