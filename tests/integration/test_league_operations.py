"""League operations over real HTTP, a real engine process (with its round watch) and the
projection workers on a real nats-server: a round that finishes on its own as its last game
ends and the next that starts from it, a league that finishes with its last planned round,
withdrawals and substitutes end to end, forfeits and byes in the standings, and the exports.

A forfeit is what the clocks will record when a seat's ``forfeit`` clock runs out: a commit
ending the game with ``forfeited`` set. Until the clocks' timer makes one, the test appends that
commit to the game's history exactly as the engine appends (hash chain, version, optimistic
concurrency), and everything downstream of it (the round watch, the league engine, the
standings model, the exports) is the real service.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.client import Client
from typer.testing import CliRunner, Result

from contracts.wire import league_subject
from domain.clock import Clock
from domain.events import GameCreated, TieRule
from domain.league import RoundCompleted
from services.cli.main import app as cli
from services.runtime.league_stream import LeagueStream
from services.store.ratings import Standing
from tests.e2e.secrecy import cards_shown
from tests.integration import stack
from tests.integration.support import (
    forfeit_on_time,
    history,
)
from tests.integration.test_gateway import (
    assert_problem,
    bearer,
)

pytestmark = pytest.mark.integration

RULES = {"preset": "solo", "max_hands": 1}
CLOCK = {"turn_s": 30.0, "bank_s": 60.0, "on_timeout": "forfeit", "away_after": 2}
WAIT_S = 60.0

engine = stack.engine
data_dir = stack.data_dir
projections = stack.projections
house = stack.house


gateway = stack.served_gateway({"min_version_wait_s": 5.0})
http = stack.http
ok = stack.ok
play_tables = stack.play_tables


async def create_league(
    http: httpx.AsyncClient, players: list[str], rounds: int, **options: Any
) -> str:
    body = {"name": "Ops", "rules": RULES, "players": players, "rounds": rounds, **options}
    league_id: str = ok(await http.post("/v1/leagues", json=body), 201)["league_id"]
    return league_id


class LeagueWatch:
    """Every league event the league's history gets from now on, as it is appended."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._arrived = asyncio.Condition()

    async def take(self, data: bytes) -> None:
        async with self._arrived:
            self.events += json.loads(data).get("events", [])
            self._arrived.notify_all()

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    async def until(self, *wanted: str) -> list[str]:
        """Wait until these event types have all been appended (in any commits)."""
        async with asyncio.timeout(WAIT_S), self._arrived:
            await self._arrived.wait_for(lambda: all(kind in self.types() for kind in wanted))
        return self.types()


async def watch_league(house: Client, league_id: str) -> tuple[LeagueWatch, Any]:
    watch = LeagueWatch()

    async def received(message: Any) -> None:
        await watch.take(message.data)

    subscription = await house.subscribe(league_subject(league_id), cb=received)
    await house.flush()
    return watch, subscription


# --------------------------------------------------------------------------- rounds


async def test_a_round_finishes_with_its_last_game_and_the_league_with_its_last_round(
    gateway: str, http: httpx.AsyncClient, house: Client
) -> None:
    players = [f"r{n}" for n in range(8)]
    league_id = await create_league(http, players, rounds=2, clock=CLOCK)
    url = f"/v1/leagues/{league_id}"
    assert ok(await http.get(url))["clock"] == CLOCK
    watch, subscription = await watch_league(house, league_id)
    try:
        first = ok(await http.post(f"{url}/rounds"), 201)
        # every table the league starts is on the league's clock
        for table in first["tables"]:
            (created,) = (await history(house, table["game_id"]))[0].commit.events
            assert isinstance(created, GameCreated)
            assert created.clock == Clock(**CLOCK)  # type: ignore[arg-type]
        one, other = first["tables"]
        await play_tables(gateway, [one])
        assert ok(await http.get(f"{url}/rounds/1"))["finished"] is False
        await play_tables(gateway, [other])
        # recorded by the service as the last game ended, before anyone schedules a round
        assert await watch.until("round_completed") == ["round_scheduled", "round_completed"]
        shown = ok(await http.get(f"{url}/rounds/1"))
        assert shown["finished"] is True
        league = ok(await http.get(url))
        assert (league["rounds_finished"], league["finished"], league["next_round"]) == (
            1,
            False,
            2,
        )

        second = ok(await http.post(f"{url}/rounds"), 201)
        assert second["round"] == 2
        await play_tables(gateway, second["tables"])
        types = await watch.until("league_finished")
    finally:
        await subscription.unsubscribe()
    # each round recorded over once, the league finished after its last round's end
    assert types == [
        "round_scheduled",
        "round_completed",
        "round_scheduled",
        "round_completed",
        "league_finished",
    ]
    league = ok(await http.get(url))
    assert (league["rounds_finished"], league["finished"], league["next_round"]) == (2, True, None)
    stored = await LeagueStream(house.jetstream()).read(league_id)
    completed = [e for s in stored for e in s.commit.events if isinstance(e, RoundCompleted)]
    assert [event.round for event in completed] == [1, 2]
    assert_problem(await http.post(f"{url}/rounds"), 409, "wrong_phase")
    standings = ok(await http.get(f"{url}/standings", params={"min_version": 4}))
    assert sorted(row["games"] for row in standings["players"]) == [2] * 8


async def test_a_forfeit_counts_as_a_loss_and_a_bye_as_a_win_in_the_standings(
    gateway: str, http: httpx.AsyncClient, house: Client
) -> None:
    players = [f"f{n}" for n in range(5)]  # one table of four, one bye a round
    league_id = await create_league(http, players, rounds=2, clock=CLOCK)
    url = f"/v1/leagues/{league_id}"
    watch, subscription = await watch_league(house, league_id)
    try:
        started = ok(await http.post(f"{url}/rounds"), 201)
        ((table,), (resting,)) = started["tables"], started["byes"]
        seated = [seat["player"] for seat in table["seats"]]
        await forfeit_on_time(house, table["game_id"], unit=2)
        await watch.until("round_completed")
    finally:
        await subscription.unsubscribe()
    standings = ok(await http.get(f"{url}/standings", params={"min_version": 1}))
    rows = {row["player"]: row for row in standings["players"]}
    loser = seated[2]  # solo: seat 2 is unit 2
    assert (rows[loser]["wins"], rows[loser]["forfeits"], rows[loser]["games"]) == (0, 1, 1)
    for winner in (p for p in seated if p != loser):
        assert (rows[winner]["wins"], rows[winner]["forfeits"]) == (1, 0)
    assert (rows[resting]["wins"], rows[resting]["byes"], rows[resting]["games"]) == (1, 1, 0)
    assert standings["players"][-1]["player"] == loser  # fewest wins, ranked last

    # the game was forfeited in its first hand: its cards stay hidden everywhere said of it
    shown = [
        ok(await http.get(path))
        for path in (url, f"{url}/rounds/1", f"{url}/standings", f"{url}/exports/results")
    ]
    assert not any(cards_shown(document) for document in shown)
    results = shown[-1]["results"]
    assert [(r["player"], r["result"]) for r in results] == [
        *((player, "forfeit" if player == loser else "win") for player in seated),
        (resting, "bye"),
    ]
    # the next round starts from the recorded round; the rested player is not rested again
    second = ok(await http.post(f"{url}/rounds"), 201)
    assert second["byes"] != [resting]


# --------------------------------------------------------------------------- operations


async def test_withdraw_and_substitute_round_trip(
    gateway: str, http: httpx.AsyncClient, house: Client
) -> None:
    players = [f"w{n}" for n in range(8)]
    league_id = await create_league(http, players, rounds=2)
    url = f"/v1/leagues/{league_id}"
    first = ok(await http.post(f"{url}/rounds"), 201)
    table = first["tables"][0]
    seat = table["seats"][1]
    game = f"/v1/games/{table['game_id']}"

    key = {"Idempotency-Key": "sub-1"}
    body = {"player": seat["player"], "substitute": "stand-in"}
    subbed = ok(await http.post(f"{url}/substitutions", json=body, headers=key), 201)
    assert (subbed["game_id"], subbed["seat"], subbed["player"], subbed["round"]) == (
        table["game_id"],
        1,
        seat["player"],
        1,
    )
    # a retry is the same substitution: the same issue of the seat's token, no new one
    retried = ok(await http.post(f"{url}/substitutions", json=body, headers=key), 201)
    assert {k: v for k, v in retried.items() if k not in ("token", "expires_at")} == {
        k: v for k, v in subbed.items() if k not in ("token", "expires_at")
    }
    assert retried["token"].split(".")[1:4] == subbed["token"].split(".")[1:4]
    # the substitute's token acts for the seat; the player's token is revoked
    view = ok(await http.get(f"{game}/view", headers=bearer(subbed["token"])))
    assert (view["seat"], view["seats"][1]["player"]) == (1, "stand-in")
    assert_problem(
        await http.get(f"{game}/view", headers=bearer(seat["token"])), 401, "unauthorized"
    )
    shown = ok(await http.get(f"{url}/rounds/1"))["tables"][0]
    assert shown["players"][1] == seat["player"]
    assert shown["sitting"][1] == "stand-in"
    assert not cards_shown(subbed)
    assert not cards_shown(ok(await http.get(url)))
    assert ok(await http.get(url))["substitutions"] == [
        {k: subbed[k] for k in ("round", "game_id", "seat", "player", "substitute")}
    ]
    refused = await http.post(
        f"{url}/substitutions", json={"player": seat["player"], "substitute": "stand-in"}
    )
    assert_problem(refused, 409, "seat_taken")

    leaving = first["tables"][1]["seats"][0]["player"]
    left = ok(await http.post(f"{url}/withdrawals", json={"player": leaving}), 201)
    assert left == {
        "league_id": league_id,
        "player": leaving,
        "after_round": 1,
        "running_game": first["tables"][1]["game_id"],
    }
    again = await http.post(f"{url}/withdrawals", json={"player": leaving})
    assert_problem(again, 409, "wrong_phase")
    unknown = await http.post(f"{url}/withdrawals", json={"player": "nobody"})
    assert_problem(unknown, 404, "not_found")  # well formed: a name the league does not have
    assert ok(await http.get(url))["withdrawn"] == [leaving]

    # the round is played out (the withdrawn seat too, as its clock will), the substitute
    # playing the seat with the new token
    await play_tables(gateway, first["tables"], {(table["game_id"], 1): subbed["token"]})
    late = await http.post(f"{url}/substitutions", json=body | {"substitute": "later"})
    assert_problem(late, 409, "wrong_phase")  # no round is being played once it is over
    standings = ok(await http.get(f"{url}/standings", params={"min_version": 2}))
    rows = {row["player"]: row for row in standings["players"]}
    assert "stand-in" not in rows  # the substitute played for the player's record
    assert rows[seat["player"]]["games"] == 1
    assert (rows[leaving]["withdrawn"], rows[leaving]["games"]) == (True, 1)
    assert sum(row["withdrawn"] for row in standings["players"]) == 1

    second = ok(await http.post(f"{url}/rounds"), 201)
    seated = {s["player"] for t in second["tables"] for s in t["seats"]}
    assert leaving not in seated
    assert leaving not in second["byes"]
    assert len(seated) + len(second["byes"]) == 7

    results_csv = await http.get(f"{url}/exports/results", params={"format": "csv"})
    assert results_csv.status_code == 200, results_csv.text
    assert results_csv.headers["content-type"].startswith("text/csv")
    rows_csv = list(csv.DictReader(io.StringIO(results_csv.text)))
    assert len(rows_csv) == 8
    subbed_row = next(r for r in rows_csv if r["player"] == seat["player"])
    assert (subbed_row["played_by"], subbed_row["game_id"], subbed_row["seat"]) == (
        "stand-in",
        table["game_id"],
        "1",
    )
    # the byes of round 2 count from its scheduling: the standings as they are now
    standings = ok(await http.get(f"{url}/standings"))
    assert sum(row["byes"] for row in standings["players"]) == len(second["byes"])
    standings_csv = await http.get(f"{url}/exports/standings", params={"format": "csv"})
    parsed = list(csv.DictReader(io.StringIO(standings_csv.text)))
    assert [r["player"] for r in parsed] == [r["player"] for r in standings["players"]]
    assert next(r for r in parsed if r["player"] == leaving)["withdrawn"] == "true"
    as_json = ok(await http.get(f"{url}/exports/standings"))
    assert [r["player"] for r in as_json["players"]] == [r["player"] for r in standings["players"]]
    assert_problem(
        await http.get(f"{url}/exports/results", params={"format": "xml"}), 400, "malformed"
    )


async def test_operations_on_no_league_are_404(http: httpx.AsyncClient) -> None:
    for path, body in (
        ("withdrawals", {"player": "a"}),
        ("substitutions", {"player": "a", "substitute": "b"}),
    ):
        assert_problem(
            await http.post(f"/v1/leagues/nope/{path}", json=body), 404, "league_not_found"
        )
        assert_problem(await http.post(f"/v1/leagues/nope/{path}", json={}), 400, "malformed")
    for what in ("standings", "results"):
        assert_problem(await http.get(f"/v1/leagues/nope/exports/{what}"), 404, "league_not_found")


async def test_a_withdrawn_players_running_seat_is_left_to_the_league_clock(
    http: httpx.AsyncClient,
) -> None:
    """On a league with a clock, withdrawing a player marks their seat of the table still being
    played away (the service acts for it at once from now on); the other seats are untouched,
    and a retried withdrawal changes nothing more."""
    players = [f"c{n}" for n in range(5)]  # one table of four and a bye
    clock = {"turn_s": 600, "on_timeout": "auto"}
    league_id = await create_league(http, players, rounds=2, clock=clock)
    url = f"/v1/leagues/{league_id}"
    table = ok(await http.post(f"{url}/rounds"), 201)["tables"][0]
    leaving = table["seats"][2]
    key = {"Idempotency-Key": "withdraw-c2"}
    left = ok(
        await http.post(f"{url}/withdrawals", json={"player": leaving["player"]}, headers=key), 201
    )
    assert left["running_game"] == table["game_id"]
    state = ok(await http.get(f"/v1/games/{table['game_id']}"))
    away = [seat["away"] for seat in state["clock"]["seats"]]
    assert away == [seat == 2 for seat in range(4)]
    version = state["version"]
    ok(await http.post(f"{url}/withdrawals", json={"player": leaving["player"]}, headers=key), 201)
    assert ok(await http.get(f"/v1/games/{table['game_id']}"))["version"] == version


async def test_the_cli_exports_withdraws_and_substitutes(
    gateway: str, http: httpx.AsyncClient, house: Client, tmp_path: Path
) -> None:
    players = [f"c{n}" for n in range(5)]
    league_id = await create_league(http, players, rounds=2)
    started = ok(await http.post(f"/v1/leagues/{league_id}/rounds"), 201)
    ((table,), (resting,)) = started["tables"], started["byes"]
    first, second, third = (seat["player"] for seat in table["seats"][:3])

    def spades(*args: str) -> Result:
        return CliRunner().invoke(cli, ["league", *args, "--url", gateway])

    def last_line(result: Result) -> Any:
        assert result.exit_code == 0, result.output
        # the gateway of this test runs in this process, and logs to stdout
        return json.loads(result.stdout.strip().splitlines()[-1])

    subbed = last_line(await asyncio.to_thread(spades, "substitute", league_id, first, "sub"))
    assert (subbed["player"], subbed["substitute"]) == (first, "sub")
    assert subbed["token"].startswith("st2.")
    tokens = {(table["game_id"], subbed["seat"]): subbed["token"]}
    watch, subscription = await watch_league(house, league_id)
    try:
        await play_tables(gateway, [table], tokens)
        await watch.until("round_completed")
    finally:
        await subscription.unsubscribe()

    out = tmp_path / "results.csv"
    exported = await asyncio.to_thread(spades, "export", league_id, "results", "-o", str(out))
    assert exported.exit_code == 0, exported.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {(r["player"], r["played_by"], r["result"] == "bye") for r in rows} == {
        (p, "" if p == resting else "sub" if p == first else p, p == resting) for p in players
    }
    standings = await asyncio.to_thread(
        spades, "export", league_id, "standings", "--format", "json", "-o", str(out)
    )
    assert standings.exit_code == 0, standings.output
    assert {r["player"] for r in json.loads(out.read_text())["players"]} == set(players)

    left = last_line(await asyncio.to_thread(spades, "withdraw", league_id, second))
    assert (left["player"], left["after_round"], left["running_game"]) == (second, 1, None)
    refused = await asyncio.to_thread(spades, "withdraw", league_id, third)
    assert refused.exit_code == 1  # three left could not seat a table of four
    assert "wrong_phase" in refused.output
    bad = await asyncio.to_thread(spades, "export", league_id, "cards")
    assert bad.exit_code != 0

    # the director's tools from the terminal
    adjusted = await asyncio.to_thread(
        spades,
        "adjust",
        league_id,
        third,
        "--points",
        "-15",
        "--reason",
        "late arrival",
        "--round",
        "1",
    )
    assert last_line(adjusted) == {
        "number": 1,
        "player": third,
        "points": -15,
        "reason": "late arrival",
        "round": 1,
    }
    voided = await asyncio.to_thread(
        spades, "void", league_id, table["game_id"], "--reason", "misdeal"
    )
    assert last_line(voided)["game_id"] == table["game_id"]
    again = await asyncio.to_thread(spades, "void", league_id, table["game_id"], "--reason", "x")
    assert again.exit_code == 1
    assert "wrong_phase" in again.output


# --------------------------------------------------------------------------- the director


async def test_the_director_voids_a_table_and_adjusts_a_score_in_the_history_and_standings(
    gateway: str, http: httpx.AsyncClient, house: Client
) -> None:
    players = [f"d{n}" for n in range(8)]  # two tables of four
    league_id = await create_league(http, players, rounds=2)
    url = f"/v1/leagues/{league_id}"
    first = ok(await http.post(f"{url}/rounds"), 201)
    one, other = first["tables"]
    # a table still being played cannot be voided
    body = {"game_id": one["game_id"], "reason": "marked cards"}
    assert_problem(await http.post(f"{url}/voids", json=body), 409, "wrong_phase")
    await play_tables(gateway, [one, other])
    before = ok(await http.get(f"{url}/standings", params={"min_version": 2}))
    records = {row["player"]: row for row in before["players"]}
    voided = ok(await http.post(f"{url}/voids", json=body, headers={"Idempotency-Key": "v1"}), 201)
    assert voided == {
        "round": 1,
        "table": 1,
        "game_id": one["game_id"],
        "reason": "marked cards",
        "board": None,
    }
    # a retry with the key records it once; a second void of the table is refused
    again = await http.post(f"{url}/voids", json=body, headers={"Idempotency-Key": "v1"})
    assert ok(again, 201) == voided
    assert_problem(await http.post(f"{url}/voids", json=body), 409, "wrong_phase")
    someone = other["seats"][0]["player"]
    adjustment = {"player": someone, "points": -25, "reason": "slow play, warned twice", "round": 1}
    keyed = {"Idempotency-Key": "a1"}
    made = ok(await http.post(f"{url}/adjustments", json=adjustment, headers=keyed), 201)
    assert made == {"number": 1, **adjustment}
    # a retry with the key records it once (the standings below list one adjustment)
    again = await http.post(f"{url}/adjustments", json=adjustment, headers=keyed)
    assert ok(again, 201) == made

    for wrong, status, code in [
        ({**adjustment, "points": 0}, 400, "malformed"),
        ({**adjustment, "reason": "tab\there"}, 400, "malformed"),
        ({**adjustment, "round": 9}, 409, "wrong_phase"),
        ({**adjustment, "player": "nobody"}, 404, "not_found"),
        ({**adjustment, "points": "5"}, 400, "malformed"),
    ]:
        response = await http.post(f"{url}/adjustments", json=wrong)
        assert response.status_code == status, (wrong, response.text)
        if code is not None:
            assert response.json()["code"] == code
    missing = {"game_id": f"{league_id}-1-9", "reason": "x"}
    assert_problem(await http.post(f"{url}/voids", json=missing), 404, "not_found")

    standings = ok(await http.get(f"{url}/standings"))
    rows = {row["player"]: row for row in standings["players"]}
    start = Standing()
    for seat in one["seats"]:  # the voided table counts for no one, its rating included
        assert (rows[seat["player"]]["games"], rows[seat["player"]]["points"]) == (0, 0)
        assert rows[seat["player"]]["wins"] == 0
        assert records[seat["player"]]["rating"]["mu"] != start.mu
        assert rows[seat["player"]]["rating"] == {
            "mu": start.mu,
            "sigma": start.sigma,
            "ordinal": start.ordinal,
        }
    for seat in other["seats"]:  # the other table's game is rated as it was
        assert rows[seat["player"]]["rating"] == records[seat["player"]]["rating"]
    mine = rows[someone]
    assert (mine["points"], mine["adjusted"]) == (records[someone]["points"] - 25, -25)
    assert standings["adjustments"] == [made]
    assert standings["voided"] == [voided]

    # the exports say so too: the results mark the voided table, the CSV has the column
    results = ok(await http.get(f"{url}/exports/results"))["results"]
    assert {r["game_id"] for r in results if r["voided"]} == {one["game_id"]}
    exported = await http.get(f"{url}/exports/standings", params={"format": "csv"})
    table = list(csv.DictReader(io.StringIO(exported.text)))
    assert {row["player"]: row["adjusted"] for row in table}[someone] == "-25"

    # both are events of the league's history, with their reasons
    stored = await LeagueStream(house.jetstream()).read(league_id)
    kinds = [
        (type(e).__name__, getattr(e, "reason", None)) for s in stored for e in s.commit.events
    ]
    assert ("TableVoided", "marked cards") in kinds
    assert ("ScoreAdjusted", "slow play, warned twice") in kinds
    assert sum(kind == "TableVoided" for kind, _ in kinds) == 1


# --------------------------------------------------------------------------- knockouts


async def test_a_knockout_is_played_through_the_service_to_its_champion(
    gateway: str, http: httpx.AsyncClient, house: Client
) -> None:
    ratings = {"k1": 40.0, "k2": 30.0, "k3": 20.0, "k4": 10.0, "k5": 5.0}
    body = {
        "name": "Cup",
        "rules": {"preset": "two-player"},
        "players": list(ratings),
        "knockout": {"deals": 1, "ratings": ratings, "tie_break": "higher_seed"},
    }
    created = ok(await http.post("/v1/leagues", json=body), 201)
    league_id, url = created["league_id"], f"/v1/leagues/{created['league_id']}"
    assert created["rounds"] == 3  # five entrants: a bracket of eight
    assert created["knockout"]["entrants"] == []  # seeded when its first round starts
    watch, subscription = await watch_league(house, league_id)
    try:
        first = ok(await http.post(f"{url}/rounds"), 201)
        (match,) = first["tables"]  # seeds 4 and 5 play; 1, 2 and 3 have byes
        assert [seat["player"] for seat in match["seats"]] == ["k4", "k5"]
        assert sorted(first["byes"]) == ["k1", "k2", "k3"]
        (made,) = (await history(house, match["game_id"]))[0].commit.events
        assert isinstance(made, GameCreated)
        assert made.rules.max_hands == 1  # a match of one deal
        assert made.ties == TieRule("higher_seed")  # level after it: the better seed goes on
        await play_tables(gateway, first["tables"])
        await watch.until("round_completed")
        semis = ok(await http.post(f"{url}/rounds"), 201)
        assert len(semis["tables"]) == 2
        assert semis["byes"] == []
        await play_tables(gateway, semis["tables"])
        final = ok(await http.post(f"{url}/rounds"), 201)
        (table,) = final["tables"]
        await play_tables(gateway, [table])
        await watch.until("league_finished")
    finally:
        await subscription.unsubscribe()
    league = ok(await http.get(url))
    bracket = league["knockout"]
    assert league["finished"] is True
    assert bracket["entrants"] == [["k1"], ["k2"], ["k3"], ["k4"], ["k5"]]
    assert bracket["seeding"] == "ratings"
    assert (bracket["tie_break"], bracket["extra_deals"]) == ("higher_seed", 3)
    assert [len(played["matches"]) for played in bracket["rounds"]] == [4, 2, 1]
    (decider,) = bracket["rounds"][-1]["matches"]
    assert decider["game_id"] == table["game_id"]
    assert bracket["champion"] == decider["winner"]
    assert bracket["champion"] in decider["sides"]
    # each winner is the one the game names
    finished = ok(await http.get(f"/v1/games/{table['game_id']}"))
    (winning_unit,) = finished["winners"]
    assert decider["sides"][winning_unit] == bracket["champion"]
    assert_problem(await http.post(f"{url}/rounds"), 409, "wrong_phase")


async def test_a_knockout_needs_head_to_head_games_and_a_match_length(
    http: httpx.AsyncClient,
) -> None:
    players = ["a1", "a2", "a3", "a4"]
    for rules, knockout, status, code in [
        ({"preset": "partnership"}, {"deals": 2}, 422, "invalid_rules"),
        ({"preset": "two-player"}, {}, 422, "invalid_rules"),
        ({"preset": "two-player"}, {"deals": 2, "target": 100}, 422, "invalid_rules"),
        ({"preset": "two-player"}, {"deals": 2, "top": 5}, 422, "invalid_rules"),
        ({"preset": "two-player"}, {"deals": 2, "ratings": {"a1": 1.0}}, 422, "invalid_rules"),
        ({"preset": "two-player"}, {"deals": 0}, 400, "malformed"),
        ({"preset": "two-player"}, {"deals": 2, "tie_break": "coin"}, 400, "malformed"),
        ({"preset": "two-player"}, {"deals": 2, "extra_deals": 101}, 400, "malformed"),
    ]:
        body = {"name": "Cup", "rules": rules, "players": players, "knockout": knockout}
        response = await http.post("/v1/leagues", json=body)
        assert response.status_code == status, (knockout, response.text)
        assert response.json()["code"] == code, (knockout, response.text)
