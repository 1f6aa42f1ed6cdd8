"""A duplicate league over real HTTP: 8 players in fixed pairs, 2 rounds of 2 boards, played by
the bots through the gateway, a real engine process and the projection workers. Every table of
a round holds the same cards on each board, the boards are the ones committed to when the league
was created, the seeds are revealed with each round's end, the standings compare the pairs by
matchpoints, and the audit is clean until what it reads is tampered with."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from msgspec.structs import replace
from typer.testing import CliRunner, Result

from contracts.answers import ScoredHandRecord
from domain.boards import board_proof, check_seed
from services.cli.main import app as cli
from services.client import SpadesClient
from services.client.leagues import LeagueClient
from services.runtime.nats_server import EmbeddedNats
from tests.e2e.secrecy import cards_shown
from tests.integration import stack
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.integration.test_gateway import (
    ServedGateway,
    assert_problem,
    bearer,
    gateway_settings,
)

pytestmark = pytest.mark.integration

MIN_VERSION_WAIT_S = 2.0
RULES = {"preset": "partnership"}
PLAYERS = [f"player {n}" for n in range(1, 9)]
"""Partners side by side: players 1 and 2, 3 and 4, ..."""
CATCH_UP_S = 20.0

engine = stack.engine
data_dir = stack.data_dir
projections = stack.projections


gateway = stack.served_gateway({"min_version_wait_s": MIN_VERSION_WAIT_S})
http = stack.http
ok = stack.ok


async def play_round(gateway: str, started: dict[str, Any], api_key: str | None = None) -> None:
    """Bots in every seat; the games' final states read as the platform of ``api_key``."""
    await stack.play_tables(gateway, started["tables"], api_key=api_key)


async def records(client: SpadesClient, game_id: str, hands: int) -> list[ScoredHandRecord]:
    """The table's hand records, once the read models hold all ``hands``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CATCH_UP_S
    while True:
        found = await client.hands(game_id)
        if len(found) >= hands or loop.time() > deadline:
            return found
        await asyncio.sleep(0.2)


async def until_listed(
    http: httpx.AsyncClient, league_id: str, games: int, status: str | None = "finished"
) -> Any:
    """The league's games in the public list, once it lists ``games`` of them (finished)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CATCH_UP_S
    while True:
        params = {"league": league_id, **({"status": status} if status else {})}
        listed = ok(await http.get("/v1/games", params=params))["games"]
        if len(listed) >= games or loop.time() > deadline:
            return listed
        await asyncio.sleep(0.2)


async def until_round_over(http: httpx.AsyncClient, league_id: str, number: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CATCH_UP_S
    while True:
        league = ok(await http.get(f"/v1/leagues/{league_id}"))
        if league["rounds_finished"] >= number or loop.time() > deadline:
            return league
        await asyncio.sleep(0.2)


def by_player(rows: list[dict[str, Any]], player: str) -> tuple[Any, ...]:
    row = next(row for row in rows if row["player"] == player)
    return (row["boards"], row["matchpoints"], row["percentage"])


async def test_a_duplicate_league_played_by_bots_deals_every_table_the_same_boards(
    gateway: str, http: httpx.AsyncClient
) -> None:
    body = {
        "name": "Duplicate night",
        "rules": RULES,
        "players": PLAYERS,
        "rounds": 2,
        "format": "duplicate",
        "boards_per_round": 2,
    }
    league = ok(await http.post("/v1/leagues", json=body), 201)
    league_id = league["league_id"]
    assert (league["format"], league["boards_per_round"], league["rounds"]) == ("duplicate", 2, 2)
    published = league["boards"]
    assert len(published["commitments"]) == 4
    assert league["revealed"] == []

    rounds = f"/v1/leagues/{league_id}/rounds"
    deals: dict[int, list[Any]] = {}
    """Board -> each table's hands (as cards) on it."""
    async with SpadesClient(gateway) as client:
        for number in (1, 2):
            started = ok(await http.post(rounds, headers={"Idempotency-Key": f"r{number}"}), 201)
            assert len(started["tables"]) == 2
            assert started["byes"] == []
            assert started["boards"] == [(number - 1) * 2 + 1, (number - 1) * 2 + 2]
            shown_round = ok(await http.get(f"{rounds}/{number}"))
            assert shown_round["boards"] == started["boards"]
            for table in started["tables"]:  # partners sit opposite: seats 0 and 2, 1 and 3
                players = [seat["player"] for seat in table["seats"]]
                for a, b in ((0, 2), (1, 3)):
                    assert abs(PLAYERS.index(players[a]) - PLAYERS.index(players[b])) == 1
            await play_round(gateway, started)
            after = await until_round_over(http, league_id, number)
            assert after["rounds_finished"] == number
            boards = [(number - 1) * 2 + 1, (number - 1) * 2 + 2]
            assert [shown["board"] for shown in after["revealed"]] == [1, 2, 3, 4][: 2 * number]
            for table in started["tables"]:
                found = await records(client, table["game_id"], 2)
                assert [record.hand for record in found] == [1, 2]
                for record, board in zip(found, boards, strict=True):
                    assert record.deal.commitment == published["commitments"][board - 1]
                    assert record.deal.seed is None  # the league reveals it, not the table
                    assert record.dealer == (board - 1) % 4
                    deals.setdefault(board, []).append(record.deal.hands)
        league = ok(await http.get(f"/v1/leagues/{league_id}"))
        assert league["finished"]
        for shown in league["revealed"]:
            proof = board_proof(published["commitments"], shown["board"])
            check_seed(bytes.fromhex(shown["seed"]), shown["board"], proof, published["root"], 4)
        assert sorted(deals) == [1, 2, 3, 4]
        for board, held in deals.items():
            assert len(held) == 2
            assert held[0] == held[1], f"board {board}: the tables held different cards"
        assert deals[1] != deals[2]

        # standings by matchpoints: two tables, so each side's result on a board is compared
        # with the one other side of its direction (1 for better, 1/2 for equal, 0 for worse)
        standings = ok(
            await http.get(f"/v1/leagues/{league_id}/standings", params={"min_version": 4})
        )
        rows = standings["players"]
        assert {row["player"] for row in rows} == set(PLAYERS)
        for row in rows:
            assert (row["games"], row["byes"]) == (2, 0)  # as the league recorded its rounds
            assert row["boards"] == 4
            assert 0 <= row["matchpoints"] <= 4
            assert row["percentage"] == pytest.approx(100 * row["matchpoints"] / 4)
        for one, partner in zip(PLAYERS[::2], PLAYERS[1::2], strict=True):  # a side's score
            assert by_player(rows, one) == by_player(rows, partner)
        # on each board, each direction's two sides share 1 matchpoint, 2 players a side
        assert sum(row["matchpoints"] for row in rows) == 4 * 2 * 2
        percentages = [row["percentage"] for row in rows]
        assert percentages == sorted(percentages, reverse=True)
        exported = ok(await http.get(f"/v1/leagues/{league_id}/exports/standings"))
        assert exported["players"] == rows
        csv_text = (
            await http.get(f"/v1/leagues/{league_id}/exports/standings", params={"format": "csv"})
        ).text
        header, first_row = csv_text.splitlines()[:2]
        assert header.endswith(",boards,matchpoints,percentage")
        assert first_row.split(",")[1] == rows[0]["player"]

        # the cross-table: every board across both tables, each direction's two sides
        # sharing its one matchpoint, the seed revealed, the sides' points as recorded
        across = ok(await http.get(f"/v1/leagues/{league_id}/boards"))["boards"]
        assert [board["board"] for board in across] == [1, 2, 3, 4]
        revealed = {
            b["board"]: b["seed"]
            for b in ok(await http.get(f"/v1/leagues/{league_id}"))["revealed"]
        }
        for board in across:
            assert board["played"] == 2
            assert board["seed"] == revealed[board["board"]]
            assert len(board["results"]) == 4  # two tables, two directions
            for direction in (0, 1):
                column = [r for r in board["results"] if r["direction"] == direction]
                assert sum(r["matchpoints"] for r in column) == 1
        assert not cards_shown(across)
        standard = ok(
            await http.post(
                "/v1/leagues", json={"name": "Std", "rules": RULES, "players": PLAYERS}
            ),
            201,
        )
        missing = await http.get(f"/v1/leagues/{standard['league_id']}/boards")
        assert (missing.status_code, missing.json()["code"]) == (404, "not_found")

        # the director: an adjustment is matchpoints for a duplicate event; a voided table's
        # boards are scored over the other tables (here: nobody left to compare with)
        url = f"/v1/leagues/{league_id}"
        first = PLAYERS[0]
        before = {row["player"]: row for row in rows}
        penalty = {"player": first, "points": -1, "reason": "slow play"}
        ok(await http.post(f"{url}/adjustments", json=penalty), 201)
        # one board of a table: scored over the other table alone, the table's other boards
        # still count; then a whole table
        fouled = {"game_id": f"{league_id}-1-1", "reason": "a board fouled", "board": 1}
        made = ok(await http.post(f"{url}/voids", json=fouled), 201)
        assert (made["board"], made["table"]) == (1, 1)
        again = await http.post(f"{url}/voids", json=fouled)
        assert (again.status_code, again.json()["code"]) == (409, "wrong_phase")
        wrong = await http.post(f"{url}/voids", json={**fouled, "board": 3})  # a round-2 board
        assert (wrong.status_code, wrong.json()["code"]) == (404, "not_found")
        crossed = {b["board"]: b for b in ok(await http.get(f"{url}/boards"))["boards"]}
        assert (crossed[1]["played"], crossed[2]["played"]) == (1, 2)
        assert {r["game_id"] for r in crossed[1]["results"]} == {f"{league_id}-1-2"}
        void = {"game_id": f"{league_id}-2-1", "reason": "a table fouled"}
        ok(await http.post(f"{url}/voids", json=void), 201)
        after = {row["player"]: row for row in ok(await http.get(f"{url}/standings"))["players"]}
        played_out = set(ok(await http.get(f"{url}/rounds/2"))["tables"][0]["players"])
        fouled_at = set(ok(await http.get(f"{url}/rounds/1"))["tables"][0]["players"])
        for player, row in after.items():
            # a voided table's boards, and a voided board, count no more for its sides
            gone = 2 * (player in played_out) + (player in fouled_at)
            assert row["boards"] == 4 - gone, row
            assert row["adjusted"] == (-1 if player == first else 0)
            if not gone:  # their boards left with no one to beat score nothing more
                lost = 1.0 if player == first else 0.0
                assert row["matchpoints"] <= before[player]["matchpoints"] - lost, row

        leagues = LeagueClient(client)
        assert await leagues.board_audit(league_id) == []

        def spades(*args: str) -> Result:
            return CliRunner().invoke(cli, ["league", *args, "--url", gateway])

        clean = await asyncio.to_thread(spades, "audit", league_id)
        assert clean.exit_code == 0, clean.output
        assert "every table of every round held the published boards" in clean.output
        for number in (1, 2):  # each table's own audit by replay, dealt as its boards
            for table in (1, 2):
                report = ok(await http.get(f"/v1/games/{league_id}-{number}-{table}/audit"))
                assert report["ok"], report["problems"]
                assert all(hand["deal_verified"] for hand in report["hands"])

        # tampered with: one table's first hand shows other cards than the board's
        honest = client.hands
        victim = f"{league_id}-1-1"

        async def forged(game_id: str, min_version: int | None = None) -> list[ScoredHandRecord]:
            shown = await honest(game_id, min_version)
            if game_id != victim:
                return shown
            first = shown[0]
            hands = first.deal.hands
            deal = replace(first.deal, hands=[hands[1], hands[0], *hands[2:]])
            return [replace(first, deal=deal), *shown[1:]]

        client.hands = forged  # type: ignore[method-assign]
        tampered = await leagues.board_audit(league_id)
        assert [(f.finding, f.board, f.game_id) for f in tampered] == [("deal", 1, victim)]


async def test_a_duplicate_league_refuses_what_makes_no_sense(http: httpx.AsyncClient) -> None:
    base = {"name": "D", "rules": RULES, "players": PLAYERS, "format": "duplicate"}
    swiss = await http.post("/v1/leagues", json={**base, "pairing": "swiss"})
    assert "movement" in assert_problem(swiss, 422, "invalid_rules")["detail"]
    odd = await http.post("/v1/leagues", json={**base, "players": PLAYERS[:7]})
    assert "even" in assert_problem(odd, 422, "invalid_rules")["detail"]
    many = await http.post("/v1/leagues", json={**base, "rounds": 330})
    assert "rounds" in assert_problem(many, 422, "invalid_rules")["detail"]
    standard = {**base, "format": "standard", "boards_per_round": 2}
    assert_problem(await http.post("/v1/leagues", json=standard), 422, "invalid_rules")
    none = {**base, "boards_per_round": 0}
    assert_problem(await http.post("/v1/leagues", json=none), 400, "malformed")
    league = ok(await http.post("/v1/leagues", json=base), 201)
    assert league["rounds"] == 3  # the movement's: every pair meets every other once
    standard = ok(await http.post("/v1/leagues", json={**base, "format": "standard"}), 201)
    gateway = str(http.base_url).rstrip("/")
    command = ["league", "audit", str(standard["league_id"]), "--url", gateway]
    not_duplicate = await asyncio.to_thread(CliRunner().invoke, cli, command)
    assert not_duplicate.exit_code == 2, not_duplicate.output
    withdraw = await http.post(
        f"/v1/leagues/{league['league_id']}/withdrawals", json={"player": PLAYERS[0]}
    )
    assert_problem(withdraw, 409, "wrong_phase")


async def test_a_duplicate_table_is_kept_from_other_readers_until_its_round_is_over(
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    projections: ProjectionsProcess,
    data_dir: Path,
) -> None:
    """Every table of a round holds the same cards: while the round is played, a table's game
    (its plays, its hand records) is shown to its own seats and its platform alone, even when
    the league is public; once every table is over, to everyone its visibility lets read it."""
    settings = gateway_settings(shared_nats.url, data_dir, api_keys="dup-key")
    platform = bearer("dup-key")
    body = {
        "name": "Public duplicate",
        "rules": RULES,
        "players": PLAYERS,
        "rounds": 1,
        "format": "duplicate",
        "boards_per_round": 1,
        "visibility": "public",
    }
    with ServedGateway(settings, min_version_wait_s=MIN_VERSION_WAIT_S) as served:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            league = ok(await http.post("/v1/leagues", json=body, headers=platform), 201)
            league_id = league["league_id"]
            rounds = f"/v1/leagues/{league_id}/rounds"
            started = ok(await http.post(rounds, headers=platform), 201)
            one, other = started["tables"]
            game = f"/v1/games/{one['game_id']}"
            for path in ("", "/events", "/hands"):
                assert_problem(await http.get(f"{game}{path}"), 404, "game_not_found")
            ok(await http.get(game, headers=platform))
            waiting = await until_listed(http, league_id, 2, status=None)
            assert [game["scores"] for game in waiting] == [[], []]  # held back, not [0, 0]
            mine = ok(await http.get("/v1/games", params={"league": league_id}, headers=platform))
            assert [game["scores"] for game in mine["games"]] == [[0, 0], [0, 0]]
            ok(await http.get(f"{game}/view", headers=bearer(one["seats"][0]["token"])))
            # a seat of the other table has no business here either
            foreign = await http.get(game, headers=bearer(other["seats"][0]["token"]))
            assert_problem(foreign, 403, "forbidden")
            await play_round(served.url, started, api_key="dup-key")
            # the public list: the tables are there, their scores held back until the round
            # is recorded over (the round's answer says whether it is)
            listed = ok(await http.get("/v1/games", params={"league": league_id}))["games"]
            round_over = ok(await http.get(f"{rounds}/1"))["finished"]
            assert {game["game_id"] for game in listed} <= {one["game_id"], other["game_id"]}
            if not round_over:
                assert all(game["scores"] == [] for game in listed)
            await until_round_over(http, league_id, 1)
            listed = await until_listed(http, league_id, 2)
            assert len(listed) == 2, listed
            assert all(len(game["scores"]) == 2 for game in listed)
            async with SpadesClient(served.url) as anyone:  # no key, no seat: the public
                assert len(await records(anyone, one["game_id"], 1)) == 1
            ok(await http.get(f"{game}/events"))


async def test_a_duplicate_events_ratings_move_only_when_every_table_has_played_the_round(
    gateway: str, http: httpx.AsyncClient
) -> None:
    """A table's result says how the round's boards went, so a rating that moved as one table
    ended would tell the tables still playing them: the ratings shown are those of the rounds
    every table has finished, as the read model would rate the same games in the same order."""
    body = {
        "name": "Quiet ratings",
        "rules": RULES,
        "players": PLAYERS,
        "rounds": 1,
        "format": "duplicate",
        "boards_per_round": 1,
    }
    league_id = ok(await http.post("/v1/leagues", json=body), 201)["league_id"]
    url = f"/v1/leagues/{league_id}"
    started = ok(await http.post(f"{url}/rounds"), 201)
    one, _ = started["tables"]
    await play_round(gateway, {"tables": [one]})
    # the read model has rated the finished table; the standings still show nobody rated
    halfway = ok(await http.get(f"{url}/standings", params={"min_version": 1}))
    assert halfway["version"] == 1
    start = {(row["rating"]["mu"], row["rating"]["sigma"]) for row in halfway["players"]}
    assert len(start) == 1, halfway["players"]
    await play_round(gateway, started)
    await until_round_over(http, league_id, 1)
    over = ok(await http.get(f"{url}/standings", params={"min_version": 2}))
    rated = {row["player"]: row["rating"] for row in over["players"]}
    assert all((r["mu"], r["sigma"]) not in start for r in rated.values()), rated
    # each side's two partners are rated as one team: the same figures
    for table in started["tables"]:
        seats = [seat["player"] for seat in table["seats"]]
        assert rated[seats[0]] == rated[seats[2]]
        assert rated[seats[1]] == rated[seats[3]]
