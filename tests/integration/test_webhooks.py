"""Webhooks against real receivers: an engine process and a webhooks worker process on a real
nats-server, a real gateway, and HTTP receivers started by each test on free ports (private
addresses allowed, as ``SPADES_WEBHOOK_ALLOW_PRIVATE=1`` does).

What the receivers get is checked against the truth: the webhooks the game's history in
JetStream makes (:func:`services.webhooks.events.game_webhooks` over its commits), byte for byte,
in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from nats.aio.client import Client
from typer.testing import CliRunner, Result

from benchmarks.webhook_receiver import ACKNOWLEDGE, HANG, Received, Receiver, always
from contracts.answers import CreatedWebhook
from contracts.webhooks import EVENT_TYPES, encode_webhook, read_webhook
from services.bots.runner import GameOutcome, play_game, play_games
from services.bots.strategy import Bot
from services.cli.main import app as cli
from services.client import SpadesClient, verify_webhook
from services.client.leagues import LeagueClient
from services.client.webhooks import WebhookClient, WebhookVerificationError
from services.runtime.nats_server import EmbeddedNats, free_port
from services.runtime.webhook_signing import new_secret
from services.transparency.note import Signer, Verifier
from services.webhooks.events import Seen, game_webhooks
from tests.integration import stack
from tests.integration.support import (
    EngineProcess,
    ProjectionsProcess,
    ServiceProcess,
    history,
)
from tests.integration.test_gateway import (
    SIGNING_KEY,
    ServedGateway,
    assert_problem,
    gateway_settings,
)

pytest.register_assert_rewrite("tests.integration.test_gateway_log")
from tests.integration.test_gateway_log import check_offline  # noqa: E402

pytestmark = pytest.mark.integration

ACME, RIVAL = "acme-webhooks-key", "rival-webhooks-key"
KEYS = f"acme:{ACME},rival:{RIVAL}"
SHORT_GAME = {"preset": "two-player", "max_hands": 1}
QUICK = "0.2s,0.2s,0.2s,0.2s,0.2s,0.2s"
"""Retries within a second or so, and enough of them not to give up in a test."""
PATIENT = ",".join(["1s"] * 30)
"""Retries a second apart at most, for about fifteen seconds."""
WAIT_S = 60.0

engine = stack.engine
house = stack.house


class WebhooksProcess(ServiceProcess):
    """``spades serve webhooks``."""

    service = "webhooks"


@dataclass
class Deployment:
    """A gateway and a webhooks worker sharing the read-model database of ``data_dir``."""

    nats_url: str
    data_dir: Path
    gateway: str
    workers: list[WebhooksProcess] = field(default_factory=list)

    def start_worker(
        self, schedule: str = QUICK, *, allow_private: bool = True, timeout_s: float = 10.0
    ) -> WebhooksProcess:
        worker = WebhooksProcess(
            self.nats_url,
            self.data_dir,
            name=f"webhooks-{len(self.workers)}",
            env={
                "SPADES_DATA_DIR": str(self.data_dir),
                # The gateway's key: the endpoints' secrets are sealed with it.
                "SPADES_SECRET_KEY": SIGNING_KEY,
                "SPADES_WEBHOOK_ALLOW_PRIVATE": "1" if allow_private else "0",
                "SPADES_WEBHOOK_SCHEDULE": schedule,
                "SPADES_WEBHOOK_TIMEOUT_S": str(timeout_s),
            },
        )
        worker.start()
        worker.wait_ready("webhooks ready")
        self.workers.append(worker)
        return worker

    def client(self, key: str | None = ACME) -> SpadesClient:
        return SpadesClient(self.gateway, api_key=key)


@pytest.fixture
def deployment(
    shared_nats: EmbeddedNats, engine: EngineProcess, tmp_path: Path
) -> Iterator[Deployment]:
    settings = gateway_settings(
        shared_nats.url, tmp_path, api_keys=KEYS, webhook_allow_private=True
    )
    with ServedGateway(settings) as served:
        deployed = Deployment(shared_nats.url, tmp_path, served.url)
        try:
            yield deployed
        finally:
            for worker in deployed.workers:
                worker.stop()


async def register(
    deployment: Deployment, url: str, key: str = ACME, events: tuple[str, ...] = EVENT_TYPES
) -> CreatedWebhook:
    async with deployment.client(key) as client:
        return await WebhookClient(client).create(url, events)


async def play(deployment: Deployment, games: int = 1, key: str = ACME) -> list[GameOutcome]:
    async with deployment.client(key) as client:
        return await play_games(client, SHORT_GAME, games, Bot, concurrency=games)


async def truth(house: Client, game_id: str) -> list[bytes]:
    """The bodies the game's history makes, in order: what its platform must receive."""
    seen: Seen | None = None
    bodies: list[bytes] = []
    for stored in await history(house, game_id):
        seen, made = game_webhooks(seen, stored.commit)
        bodies += [encode_webhook(one.webhook) for one in made]
    return bodies


def of_game(received: list[Received], game_id: str) -> list[Received]:
    return [r for r in received if r.json["data"].get("game_id") == game_id]


def finished(game_ids: list[str]) -> Callable[[list[Received]], bool]:
    """Every one of the games' ``game.finished`` acknowledged."""

    def done(received: list[Received]) -> bool:
        ended = {
            r.json["data"]["game_id"]
            for r in received
            if r.type == "game.finished" and 200 <= r.answered < 300
        }
        return set(game_ids) <= ended

    return done


async def until(receiver: Receiver, done: Callable[[list[Received]], bool]) -> list[Received]:
    return await asyncio.to_thread(receiver.wait_for, done, WAIT_S)


async def test_every_event_of_a_game_arrives_once_signed_in_the_order_it_happened(
    deployment: Deployment, house: Client
) -> None:
    deployment.start_worker()
    with Receiver() as receiver:
        endpoint = await register(deployment, receiver.url)
        assert endpoint.secret.startswith("whsec_")
        games = await play(deployment, games=4)  # at once: chains start and end all the time
        received = await until(receiver, finished([game.game_id for game in games]))

    for game in games:
        assert [r.body for r in of_game(received, game.game_id)] == await truth(house, game.game_id)
    for request in received:
        event = verify_webhook(endpoint.secret, request.headers, request.body)
        assert event["type"] in EVENT_TYPES
        assert request.headers["content-type"] == "application/json"
        assert abs(int(request.headers["webhook-timestamp"]) - request.at) < 5
    ids = [r.id for r in received]
    assert len(set(ids)) == len(ids), "one webhook-id per event, each sent once"
    kinds = {r.type for r in received}
    assert {"game.created", "game.turn", "hand.scored", "game.finished"} <= kinds
    with pytest.raises(WebhookVerificationError, match="no v1 signature matches"):
        verify_webhook(new_secret(), received[0].headers, received[0].body)


async def test_a_receiver_answering_503_then_200_gets_the_same_webhook_id_again(
    deployment: Deployment, house: Client
) -> None:
    deployment.start_worker(QUICK)
    tried: set[str] = set()

    def first_503(request: Received) -> int:
        if request.id in tried:
            return 200
        tried.add(request.id)
        return 503

    with Receiver(first_503) as receiver:
        endpoint = await register(
            deployment, receiver.url, events=("game.created", "game.finished")
        )
        [game] = await play(deployment)
        received = await until(receiver, finished([game.game_id]))
        async with deployment.client() as client:
            log = await WebhookClient(client).deliveries(endpoint.id)

    assert [r.answered for r in received] == [503, 200, 503, 200]
    assert received[0].id == received[1].id
    assert received[2].id == received[3].id
    assert received[0].id != received[2].id
    assert received[0].body == received[1].body
    assert [r.body for r in received if r.answered == 200] == [
        body for body in await truth(house, game.game_id)
        if type_of_body(body) in ("game.created", "game.finished")
    ]  # fmt: skip
    assert [(d.id, d.status, d.attempts, d.last_status) for d in reversed(log.deliveries)] == [
        (received[0].id, "delivered", 2, 200),
        (received[2].id, "delivered", 2, 200),
    ]


def type_of_body(body: bytes) -> str:
    return str(msgspec.json.decode(body)["type"])


async def test_a_receiver_down_for_a_while_then_up_receives_everything_in_order_per_game(
    deployment: Deployment, house: Client
) -> None:
    deployment.start_worker(PATIENT)
    port = free_port()
    receiver = Receiver(port=port)  # not listening yet: every try finds nothing there
    endpoint = await register(deployment, receiver.url)
    games = await play(deployment, games=2)
    async with deployment.client() as client:
        webhooks = WebhookClient(client)
        for _ in range(200):  # the worker has tried, and failed, while the receiver was down
            log = await webhooks.deliveries(endpoint.id, limit=500)
            if sum(d.attempts >= 2 for d in log.deliveries) == 2:
                break
            await asyncio.sleep(0.05)  # polling another process's progress
        failed = [d for d in log.deliveries if d.attempts]
        assert [d.event for d in failed] == ["game.created", "game.created"], (
            "only the first of each game's deliveries is tried: the others wait their turn"
        )
        assert all(d.status == "pending" and d.last_status is None for d in failed)
        assert all("ConnectError" in (d.last_error or "") for d in failed)
    with receiver:
        received = await until(receiver, finished([g.game_id for g in games]))
    for game in games:
        assert [r.body for r in of_game(received, game.game_id)] == await truth(house, game.game_id)


async def test_a_webhook_worker_killed_mid_delivery_loses_nothing_when_it_starts_again(
    deployment: Deployment, house: Client
) -> None:
    worker = deployment.start_worker(QUICK, timeout_s=120)
    answers: dict[str, int] = {"next": HANG}

    def hang_first(_request: Received) -> int:
        answer, answers["next"] = answers["next"], 200
        return answer

    with Receiver(hang_first) as receiver:
        await register(deployment, receiver.url)
        playing = asyncio.create_task(play(deployment))
        hung = (await until(receiver, lambda got: len(got) == 1))[0]
        worker.kill()  # SIGKILL while the first delivery waits for its answer
        [game] = await playing  # the game goes on without the worker
        receiver.release()
        deployment.start_worker(QUICK)
        received = await until(receiver, finished([game.game_id]))

    expected = await truth(house, game.game_id)
    again = [r for r in received[1:] if r.id == hung.id]
    assert len(again) == 1, "the delivery in flight is sent again, with the same webhook-id"
    assert [r.body for r in received[1:]] == expected, "and everything else, once, in order"
    assert hung.body == expected[0]


async def test_another_platforms_receiver_gets_nothing_of_a_game_and_cannot_see_its_endpoint(
    deployment: Deployment, house: Client
) -> None:
    deployment.start_worker()
    with Receiver() as acme, Receiver() as rival:
        acme_endpoint = await register(deployment, acme.url, key=ACME)
        rival_endpoint = await register(deployment, rival.url, key=RIVAL)
        [acme_game] = await play(deployment, key=ACME)
        [rival_game] = await play(deployment, key=RIVAL)
        got_acme = await until(acme, finished([acme_game.game_id]))
        got_rival = await until(rival, finished([rival_game.game_id]))

    assert [r.body for r in got_acme] == await truth(house, acme_game.game_id)
    assert [r.body for r in got_rival] == await truth(house, rival_game.game_id)

    async with httpx.AsyncClient(base_url=deployment.gateway) as http:
        as_rival = {"Authorization": f"Bearer {RIVAL}"}
        listed = (await http.get("/v1/webhooks", headers=as_rival)).json()["webhooks"]
        assert [w["id"] for w in listed] == [rival_endpoint.id]
        for method, path, body in (
            ("GET", f"/v1/webhooks/{acme_endpoint.id}/deliveries", None),
            ("POST", f"/v1/webhooks/{acme_endpoint.id}/replay", {"since": "2020-01-01T00:00:00Z"}),
            ("DELETE", f"/v1/webhooks/{acme_endpoint.id}", None),
            ("DELETE", "/v1/webhooks/ep_000000000000000000000000", None),
        ):
            answer = await http.request(method, path, json=body, headers=as_rival)
            assert_problem(answer, 404, "webhook_not_found")
        anonymous = await http.get("/v1/webhooks")
        assert_problem(anonymous, 401, "unauthorized")
        still = await http.get(
            f"/v1/webhooks/{acme_endpoint.id}/deliveries",
            headers={"Authorization": f"Bearer {ACME}"},
        )
        assert still.status_code == 200, "the attempts changed nothing"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hooks",
        "http://localhost/hooks",
        "http://[::1]:8080/hooks",
        "https://10.0.0.7/hooks",
        "http://192.168.1.20/hooks",
        "http://169.254.169.254/latest/meta-data",
        "http://0.0.0.0/",
        "http://[::ffff:127.0.0.1]/",
    ],
)
async def test_private_urls_are_refused_without_the_setting(
    shared_nats: EmbeddedNats, engine: EngineProcess, tmp_path: Path, url: str
) -> None:
    settings = gateway_settings(shared_nats.url, tmp_path, api_keys=KEYS)
    with ServedGateway(settings) as served:
        async with httpx.AsyncClient(base_url=served.url) as http:
            headers = {"Authorization": f"Bearer {ACME}"}
            answer = await http.post(
                "/v1/webhooks", json={"url": url, "events": ["game.turn"]}, headers=headers
            )
            assert_problem(answer, 403, "forbidden")
            assert "SPADES_WEBHOOK_ALLOW_PRIVATE" in answer.json()["detail"]
            for bad, code in (
                ({"url": "ftp://example.com/", "events": ["game.turn"]}, "malformed"),
                ({"url": "https://example.com/", "events": ["game.tuRn"]}, "malformed"),
                ({"url": "https://example.com/", "events": []}, "malformed"),
                ({"url": "https://example.com/?a=b", "events": ["game.turn"]}, "malformed"),
            ):
                refused = await http.post("/v1/webhooks", json=bad, headers=headers)
                assert_problem(refused, 400, code)
            unresolvable = {"url": "https://no-such-host.invalid/", "events": ["game.turn"]}
            refused = await http.post("/v1/webhooks", json=unresolvable, headers=headers)
            assert_problem(refused, 403, "forbidden")
            listed = await http.get("/v1/webhooks", headers=headers)
            assert listed.json() == {"webhooks": []}


async def test_a_worker_without_the_setting_refuses_a_private_address_at_delivery(
    deployment: Deployment,
) -> None:
    """The address is checked again at every delivery (DNS can change): an endpoint that got in
    reaches nothing private through a worker that does not allow it."""
    deployment.start_worker(PATIENT, allow_private=False)
    with Receiver() as receiver:
        endpoint = await register(deployment, receiver.url, events=("game.created",))
        await play(deployment)
        async with deployment.client() as client:
            webhooks = WebhookClient(client)
            for _ in range(200):
                log = await webhooks.deliveries(endpoint.id)
                if log.deliveries and log.deliveries[0].attempts >= 2:
                    break
                await asyncio.sleep(0.05)  # polling another process's progress
        assert log.deliveries[0].status == "pending"
        assert "not a public one" in (log.deliveries[0].last_error or "")  # no address told
        assert receiver.received == []


async def test_an_endpoint_failing_every_try_is_disabled_with_the_reason_and_a_replay_revives_it(
    deployment: Deployment, house: Client
) -> None:
    deployment.start_worker("0.1s,0.1s")
    receiver = Receiver(always(500)).start()
    try:
        since = datetime.now(UTC)
        endpoint = await register(
            deployment, receiver.url, events=("game.created", "game.finished")
        )
        [game] = await play(deployment)
        await until(receiver, lambda got: len(got) >= 3)
        async with deployment.client() as client:
            webhooks = WebhookClient(client)
            for _ in range(200):
                log = await webhooks.deliveries(endpoint.id)
                if log.webhook.disabled and len(log.deliveries) == 2:
                    break
                await asyncio.sleep(0.05)  # polling another process's progress
            assert log.webhook.disabled
            assert "every one of 3 tries" in (log.webhook.disabled_reason or "")
            assert "answered 500" in (log.webhook.disabled_reason or "")
            assert [(d.event, d.status, d.attempts) for d in reversed(log.deliveries)] == [
                ("game.created", "failed", 3),
                ("game.finished", "skipped", 0),
            ]
            assert len(receiver.received) == 3
            listed = await webhooks.list()
            assert listed[0].disabled

            receiver.answer = ACKNOWLEDGE
            assert await webhooks.replay(endpoint.id, since) == 2
            received = await until(receiver, finished([game.game_id]))
            assert not (await webhooks.list())[0].disabled
    finally:
        receiver.stop()
    replayed = received[3:]
    assert [r.body for r in replayed] == [
        body for body in await truth(house, game.game_id)
        if type_of_body(body) in ("game.created", "game.finished")
    ]  # fmt: skip
    assert [r.id for r in replayed] == [d.id for d in reversed(log.deliveries)]


async def test_a_league_round_is_delivered_to_the_leagues_platform(
    deployment: Deployment,
) -> None:
    deployment.start_worker()
    with Receiver() as receiver:
        await register(deployment, receiver.url, events=("league.round_started", "game.created"))
        async with httpx.AsyncClient(base_url=deployment.gateway) as http:
            headers = {"Authorization": f"Bearer {ACME}"}
            created = await http.post(
                "/v1/leagues",
                json={"name": "Hooks", "rules": {"preset": "two-player"}, "players": ["a", "b"]},
                headers=headers,
            )
            assert created.status_code == 201, created.text
            league_id = created.json()["league_id"]
            started = await http.post(f"/v1/leagues/{league_id}/rounds", headers=headers)
            assert started.status_code == 201, started.text
        [table] = started.json()["tables"]
        received = await until(
            receiver, lambda got: {r.type for r in got} >= {"league.round_started", "game.created"}
        )
    [round_started] = [r for r in received if r.type == "league.round_started"]
    data: dict[str, Any] = round_started.json["data"]
    assert data["league_id"] == league_id
    players = [seat["player"] for seat in table["seats"]]
    assert data["tables"] == [{"table": 1, "game_id": table["game_id"], "players": players}]
    assert data["round"] == 1
    assert "token" not in round_started.body.decode()
    [game_created] = [r for r in received if r.type == "game.created"]
    assert game_created.json["data"]["league"] == league_id


async def test_a_leagues_last_round_ending_tells_its_platform_the_round_and_the_league_ended(
    deployment: Deployment,
) -> None:
    deployment.start_worker()
    wanted = ("league.round_finished", "league.finished")
    with Receiver() as receiver:
        await register(deployment, receiver.url, events=wanted)
        async with deployment.client() as client:
            leagues = LeagueClient(client)
            league = await leagues.create_league("Ends", SHORT_GAME, ["a", "b"], rounds=1)
            started = await leagues.start_round(league.league_id)
            (table,) = started.tables
            tokens = {seat.seat: seat.token for seat in table.seats}
            outcome = await play_game(client, table.game_id, tokens, Bot)
        # nobody schedules anything more: the round's end is the service's own doing
        received = await until(receiver, lambda got: [r.type for r in got] == list(wanted))
    round_finished, league_finished = received
    data: dict[str, Any] = round_finished.json["data"]
    assert (data["league_id"], data["round"]) == (league.league_id, 1)
    won = [unit in outcome.winners for unit in range(2)]
    assert data["results"] == [
        {
            "table": 1,
            "game_id": table.game_id,
            "points": outcome.scores,
            "won": won,
            "forfeited": [],
        }
    ]
    assert league_finished.json["data"] == {
        "league_id": league.league_id,
        "rounds": 1,
        "champion": None,
    }


async def test_a_deleted_endpoint_is_sent_nothing_more(deployment: Deployment) -> None:
    deployment.start_worker()
    with Receiver() as deleted, Receiver() as kept:
        endpoint = await register(deployment, deleted.url, events=("game.created",))
        [first] = await play(deployment)
        await until(deleted, lambda got: len(got) == 1)
        async with deployment.client() as client:
            webhooks = WebhookClient(client)
            await webhooks.delete(endpoint.id)
            assert [w.id for w in await webhooks.list()] == []
        await register(deployment, kept.url, events=("game.created", "game.finished"))
        [second] = await play(deployment)
        # Recorded with the same commits as the deleted endpoint's would have been, and sent
        # after a game.created that would have gone to both.
        await until(kept, finished([second.game_id]))
    assert [r.json["data"]["game_id"] for r in deleted.received] == [first.game_id]


async def test_the_cli_lists_a_platforms_endpoints_and_an_endpoints_deliveries(
    deployment: Deployment,
) -> None:
    deployment.start_worker()
    with Receiver() as receiver:
        endpoint = await register(deployment, receiver.url, events=("game.created",))
        await play(deployment)
        await until(receiver, lambda got: len(got) == 1)

    def spades(*args: str) -> Result:
        options = ["--url", deployment.gateway, "--api-key", ACME]
        return CliRunner().invoke(cli, ["webhooks", *args, *options])

    def answer(result: Result) -> Any:
        # The last line: the gateway of this test runs in this process, and logs to stdout.
        return msgspec.json.decode(result.stdout.strip().splitlines()[-1])

    listed = await asyncio.to_thread(spades, "list", "--json")
    assert listed.exit_code == 0, listed.output
    [shown] = answer(listed)["webhooks"]
    assert (shown["id"], shown["url"], shown["disabled"]) == (endpoint.id, receiver.url, False)
    assert "secret" not in shown

    log = await asyncio.to_thread(spades, "deliveries", endpoint.id, "--json")
    assert log.exit_code == 0, log.output
    [delivery] = answer(log)["deliveries"]
    assert (delivery["id"], delivery["status"]) == (receiver.received[0].id, "delivered")

    table = await asyncio.to_thread(spades, "deliveries", endpoint.id)
    assert table.exit_code == 0, table.output
    assert endpoint.id in table.stdout
    assert "delivered" in table.stdout

    unknown = await asyncio.to_thread(spades, "deliveries", "ep_000000000000000000000000")
    assert unknown.exit_code == 1
    assert "webhook_not_found" in unknown.stderr


async def test_hand_scored_carries_the_hands_receipt_once_the_log_holds_it(
    deployment: Deployment, house: Client
) -> None:
    """With projection workers keeping the audit log beside the webhooks worker, the
    ``hand.scored`` webhook carries the hand's receipt, which the platform checks offline with
    the log's public key alone; the rest of the body is the history's, byte for byte."""
    key = Signer.generate("spades.test/webhook-log")
    projections = ProjectionsProcess(
        deployment.nats_url,
        deployment.data_dir,
        env={
            "SPADES_DATA_DIR": str(deployment.data_dir),
            "SPADES_SECRET_KEY": SIGNING_KEY,
            "SPADES_LOG_KEY": key.text(),
            "SPADES_LOG_ORIGIN": "spades.test/webhook-log",
        },
    )
    projections.start()
    try:
        deployment.start_worker()
        with Receiver() as receiver:
            await register(deployment, receiver.url)
            games = await play(deployment, games=2)
            received = await until(receiver, finished([game.game_id for game in games]))
    finally:
        projections.stop()

    for game in games:
        arrived = of_game(received, game.game_id)
        scored = [r.json for r in arrived if r.type == "hand.scored"]
        assert scored
        for webhook in scored:
            receipt = webhook["data"]["receipt"]
            assert receipt is not None, "the log held the hand within the wait"
            assert (receipt["game_id"], receipt["hand"]) == (
                game.game_id,
                webhook["data"]["hand"],
            )
            assert receipt["signed"]
            partition = receipt["partition"]
            check_offline(receipt, key_of(key, partition))
        # Without its receipts, each body is the one the game's history makes.
        plain = [encode_webhook(read_webhook(without_receipt(r.body))) for r in arrived]
        assert plain == await truth(house, game.game_id)


def key_of(key: Signer, partition: int) -> Verifier:
    """The log key's verifier under a partition's log name, as ``GET /v1/log`` shows it."""
    return Verifier(f"spades.test/webhook-log/{partition}", key.kind, key.verifier.public)


def without_receipt(body: bytes) -> bytes:
    webhook = msgspec.json.decode(body)
    if webhook["type"] == "hand.scored":
        webhook["data"]["receipt"] = None
    return msgspec.json.encode(webhook)
