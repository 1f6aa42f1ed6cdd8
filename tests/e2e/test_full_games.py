"""Whole games of every preset, played only through the HTTP API by random legal players; the
scoreboard, the hand records, the audit and the game list must agree with what was played."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from msgspec import structs

from services.client import (
    GameSummary,
    HandRecord,
    PublicState,
    Scoreboard,
    ScoredHandRecord,
    SpadesClient,
)
from tests.e2e.players import PRESETS, VARIATIONS, Table, seat_players

pytestmark = pytest.mark.e2e

LIST_CATCH_UP_S = 10.0


@pytest.mark.parametrize("preset", sorted(PRESETS))
async def test_a_whole_game_of_every_preset(client: SpadesClient, preset: str) -> None:
    await check_a_whole_game(client, PRESETS[preset], f"full game {preset}")


async def test_a_whole_game_of_seed_002_s_variations(client: SpadesClient) -> None:
    """jokers-54 with a first hand without bidding, blind bids and blind Boston."""
    final, records = await check_a_whole_game(client, VARIATIONS, "full game of variations")
    first, *later = records
    assert first.bids == [None] * 4
    assert first.points == [10 * sum(first.tricks_won[s] for s in unit) for unit in final.units]
    assert all(None not in record.bids for record in later)
    assert all(len(record.discards) == 1 for record in records)


async def check_a_whole_game(
    client: SpadesClient, rules: dict[str, Any], seed: str
) -> tuple[PublicState, list[ScoredHandRecord]]:
    rng = random.Random(seed)
    table = await seat_players(client, rules, rng)

    final = await table.play_out()

    records = await client.hands(table.game_id, min_version=final.version)
    scoreboard = await client.scoreboard(table.game_id, min_version=final.version)
    assert final.status == "finished"
    assert final.winners, "a finished game has winners"
    assert len(records) == final.hand_number >= 1
    for record in records:
        check_record_against_play(table, final, record)
        one = await client.hand(table.game_id, record.hand, min_version=final.version)
        assert structs.asdict(one) == {**structs.asdict(record), "receipt": one.receipt}
        for unit, points in enumerate(record.points):  # the score's lines add up to it
            assert sum(line.points for line in record.score_lines if line.unit == unit) == points
    check_scoreboard(scoreboard, records, final)
    audit = await client.audit(table.game_id)
    assert audit.ok, audit
    assert [hand.hand for hand in audit.hands] == [record.hand for record in records]
    for hand in audit.hands:
        assert hand.deal_verified, hand
        assert hand.replayed, hand
        assert hand.score_matches, hand
        assert hand.problems == []
    summary = await listed_when_finished(client, table.game_id, "north")
    assert summary.players[: len(final.seats)] == [seat.player for seat in final.seats]
    assert summary.scores == final.scores
    assert summary.winners == final.winners
    return final, records


async def listed_when_finished(client: SpadesClient, game_id: str, player: str) -> GameSummary:
    """The game's line in the list of finished games with this player, once the list (a read
    model, a moment behind the game) has it."""
    deadline = asyncio.get_running_loop().time() + LIST_CATCH_UP_S
    while True:
        found: dict[str, GameSummary] = {}
        cursor: str | None = None
        while True:
            page = await client.games(status="finished", player=player, cursor=cursor, limit=100)
            found.update((summary.game_id, summary) for summary in page.games)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        if game_id in found:
            return found[game_id]
        assert asyncio.get_running_loop().time() < deadline, f"{game_id} never listed"
        await asyncio.sleep(0.1)  # a read model catching up: nothing to await over HTTP


def check_record_against_play(table: Table, final: PublicState, record: HandRecord) -> None:
    """The record holds the bids, discards and plays the players sent, in order, and its deal
    adds up, copy by copy with two decks."""
    players = len(final.seats)
    sent_bids = table.bids_of(record.hand)
    assert {seat: record.bids[seat] for seat in sent_bids} == sent_bids
    if any(bid is not None for bid in record.bids):
        assert len(sent_bids) == players
    else:  # first_hand: no_bid
        assert sent_bids == {}
    sent_discards = table.discards_of(record.hand)
    assert [(d.seat, [c.value for c in d.cards]) for d in record.discards] == sent_discards
    played = [(card.seat, card.card.value) for trick in record.tricks for card in trick.cards]
    assert played == table.plays_of(record.hand)
    wins = Counter(trick.winner for trick in record.tricks)
    assert record.tricks_won == [wins[seat] for seat in range(players)]
    for trick in record.tricks:
        assert trick.cards[0].seat == trick.leader
        assert [c.seat for c in trick.cards] == [
            (trick.leader + k) % players for k in range(players)
        ]
    # Every card a seat played was dealt to it or passed to it and not discarded, and it played
    # all of them: each copy once.
    for seat in range(players):
        held = Counter(record.deal.hands[seat])
        for exchange in record.passes:
            if exchange.from_seat == seat:
                held -= Counter(exchange.cards)
            if exchange.to == seat:
                held += Counter(exchange.cards)
        for discarded in record.discards:
            if discarded.seat == seat:
                held -= Counter(discarded.cards)
        played_by = Counter(
            card.card for t in record.tricks for card in t.cards if card.seat == seat
        )
        assert held == played_by
    assert record.deal.seed, "the seed is revealed in the record"
    deck = record.deal.deck
    assert deck is not None
    if not record.draws:  # dealt one at a time from the left of the dealer, who takes the rest
        size = len(record.tricks)
        for index, card in enumerate(deck[: size * players]):
            assert card in record.deal.hands[(record.dealer + 1 + index) % players]
        extra = len(record.deal.hands[record.dealer]) - size
        assert Counter(deck[size * players : size * players + extra]) <= Counter(
            record.deal.hands[record.dealer]
        )
    else:  # the two-player draw: the pile, top card first, is what was drawn
        assert [drawn.card for drawn in record.draws] == deck[: len(record.draws)]
        for seat in range(players):
            kept = {drawn.card for drawn in record.draws if drawn.seat == seat and drawn.kept}
            assert kept == set(record.deal.hands[seat])


def check_scoreboard(
    scoreboard: Scoreboard, records: Sequence[HandRecord], final: PublicState
) -> None:
    assert scoreboard.units == final.units
    assert [(line.hand, line.points, line.scores, line.bags) for line in scoreboard.hands] == [
        (record.hand, record.points, record.scores, record.bags) for record in records
    ]
    running = [0] * len(final.units)
    for record in records:
        running = [total + points for total, points in zip(running, record.points, strict=True)]
        assert record.scores == running, "each hand's scores are the last ones plus its points"
    assert scoreboard.scores == records[-1].scores == final.scores
    assert scoreboard.bags == records[-1].bags == final.bags
    assert scoreboard.game_over
    assert scoreboard.winners == final.winners
    best = max(final.scores)
    assert final.winners == [unit for unit, score in enumerate(final.scores) if score == best]
