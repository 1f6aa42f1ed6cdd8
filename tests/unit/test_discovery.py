"""The record of a running stack: written whole, found only while its ``spades up`` holds the
lock, and the order a command takes its addresses in (flag, variable, record)."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import msgspec
import pytest
import typer
from typer.testing import CliRunner

from services.cli.discover import Url, stack_settings
from services.cli.main import app as spades
from services.cli.up import WORKERS, children
from services.runtime.discovery import (
    StackNotFound,
    StackRecord,
    StackRunning,
    connectable_url,
    find_stack,
    holding_stack_lock,
    record_for,
    record_path,
    remove_record,
    running_stack,
    with_stack,
    write_record,
)
from services.runtime.settings import Settings


def a_record(data_dir: Path) -> StackRecord:
    settings = Settings(data_dir=data_dir)
    return record_for(
        settings,
        nats_url="nats://127.0.0.1:4999",
        nats_credentials=data_dir / "nats" / "credentials",
        gateway_url="http://127.0.0.1:18999",
    )


def test_a_record_is_found_while_its_stack_holds_the_lock(tmp_path: Path) -> None:
    record = a_record(tmp_path)
    with holding_stack_lock(tmp_path):
        write_record(tmp_path, record)
        assert find_stack(tmp_path) == record
        assert record_path(tmp_path).stat().st_mode & 0o777 == 0o600, "it may hold a password"
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    with pytest.raises(StackNotFound, match=rf"pid {os.getpid()}\) is no longer running"):
        find_stack(tmp_path)  # the lock went with its holder: a record left behind is stale
    assert running_stack(tmp_path) is None


def test_a_record_without_its_lock_file_is_stale(tmp_path: Path) -> None:
    write_record(tmp_path, a_record(tmp_path))
    with pytest.raises(StackNotFound, match="no longer running"):
        find_stack(tmp_path)


def test_nothing_recorded_or_a_broken_record_says_why(tmp_path: Path) -> None:
    with pytest.raises(StackNotFound, match=r"no `spades up` runs on .*make run"):
        find_stack(tmp_path / "var")
    assert not (tmp_path / "var").exists(), "looking creates nothing"
    record_path(tmp_path).write_text("{not json")
    with pytest.raises(StackNotFound, match="is not a stack record"):
        find_stack(tmp_path)
    remove_record(tmp_path)
    remove_record(tmp_path)  # twice is fine
    assert not record_path(tmp_path).exists()


def _try_to_lock(data_dir: Path, answer: multiprocessing.Queue[str]) -> None:
    try:
        with holding_stack_lock(data_dir):
            answer.put("locked")
    except StackRunning as error:
        answer.put(str(error))


def test_a_second_stack_on_the_same_data_directory_is_refused(tmp_path: Path) -> None:
    answer: multiprocessing.Queue[str] = multiprocessing.Queue()
    with holding_stack_lock(tmp_path):
        other = multiprocessing.get_context("fork").Process(
            target=_try_to_lock, args=(tmp_path, answer)
        )
        other.start()
        other.join(30)
        assert answer.get(timeout=30) == (
            f"another `spades up` (pid {os.getpid()}) runs on the data directory {tmp_path}"
        )
    other = multiprocessing.get_context("fork").Process(
        target=_try_to_lock, args=(tmp_path, answer)
    )
    other.start()
    other.join(30)
    assert answer.get(timeout=30) == "locked"


def test_the_environment_wins_over_the_record(tmp_path: Path) -> None:
    record = a_record(tmp_path)
    seed = Path(str(record.nats_credentials)) / "admin.nk"
    seed.parent.mkdir(parents=True)
    seed.write_text("SU...\n")
    unset = with_stack(Settings(data_dir=tmp_path / "elsewhere"), record)
    assert unset.nats_url == record.nats_url
    assert unset.nats_credentials("admin") == seed, "the recorded server's own credentials"
    assert unset.read_model_database_url == record.database_url
    given = Settings(
        data_dir=tmp_path,
        nats_url="nats://elsewhere:4222",
        database_url="postgresql://postgres@db/test",
    )
    assert with_stack(given, record) == given, "its credentials go with its own server only"


def test_a_flag_wins_over_the_record_and_the_record_completes_the_rest(tmp_path: Path) -> None:
    record = a_record(tmp_path)
    with holding_stack_lock(tmp_path):
        write_record(tmp_path, record)
        found = stack_settings(Settings(data_dir=tmp_path))
        assert (found.nats_url, found.database_url) == (record.nats_url, record.database_url)
        flagged = stack_settings(Settings(data_dir=tmp_path), nats_url="nats://flag:4222")
        assert flagged.nats_url == "nats://flag:4222"
        assert flagged.database_url == record.database_url


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8080"),
        ("0.0.0.0", "http://127.0.0.1:8080"),
        ("::", "http://127.0.0.1:8080"),
        ("::1", "http://[::1]:8080"),
        ("spades.internal", "http://spades.internal:8080"),
    ],
)
def test_the_recorded_gateway_url_is_one_a_client_can_reach(host: str, url: str) -> None:
    assert connectable_url(host, 8080) == url


def _url_app() -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def show(url: Url = "http://unused.invalid") -> None:
        typer.echo(url)

    return app


def test_url_comes_from_the_flag_then_the_variable_then_the_stack(tmp_path: Path) -> None:
    runner = CliRunner()
    environment = {"SPADES_DATA_DIR": str(tmp_path), "SPADES_URL": None}
    with holding_stack_lock(tmp_path):
        write_record(tmp_path, a_record(tmp_path))
        found = runner.invoke(_url_app(), [], env=environment)
        assert found.stdout.strip() == "http://127.0.0.1:18999", found.output
        variable = runner.invoke(_url_app(), [], env={**environment, "SPADES_URL": "http://v:1"})
        assert variable.stdout.strip() == "http://v:1"
        flag = runner.invoke(_url_app(), ["--url", "http://f:1"], env=environment)
        assert flag.stdout.strip() == "http://f:1"


CLEAR = {
    "SPADES_DATA_DIR": None,
    "SPADES_URL": None,
    "SPADES_NATS_URL": None,
    "SPADES_NATS_CREDS": None,
    "SPADES_DATABASE_URL": None,
}


@pytest.mark.parametrize(
    ("command", "needs"),
    [
        (["audit", "g1"], "--nats-url"),
        (["projections", "lag"], "--nats-url"),
        (["projections", "rebuild", "--all", "--wait"], "--nats-url"),
        (["backup", "copy"], "--nats-url"),
        (["bots", "--games", "1"], "--url"),
        (["new-game"], "--url"),
        (["sit", "g1", "--player", "ann"], "--url"),
        (["watch", "g1"], "--url"),
        (["league", "standings", "l1"], "--url"),
        (["webhooks", "list"], "--url"),
        (["projections", "parked"], "SPADES_DATABASE_URL"),
        (["projections", "rebuild", "--all"], "SPADES_DATABASE_URL"),
    ],
)
def test_with_no_stack_a_command_says_so_in_one_line_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], needs: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(spades, command, env=CLEAR)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: no "), lines[0]
    assert needs in lines[0]
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == [], "a command that found nothing created nothing"


def test_the_record_says_where_each_kind_serves_its_metrics(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, host="0.0.0.0")
    record = record_for(
        settings,
        nats_url="nats://127.0.0.1:4999",
        nats_credentials=None,
        gateway_url="http://127.0.0.1:18999",
        metrics_ports={"engine": 19001, "timers": 19004},
    )
    assert record.metrics == {
        "engine": "http://127.0.0.1:19001/metrics",  # a wildcard bind is reached on loopback
        "timers": "http://127.0.0.1:19004/metrics",
        "gateway": "http://127.0.0.1:18999/metrics",
    }


def test_a_record_written_before_metrics_ports_is_still_read(tmp_path: Path) -> None:
    older = msgspec.structs.asdict(a_record(tmp_path))
    del older["metrics"]
    with holding_stack_lock(tmp_path):
        record_path(tmp_path).write_bytes(msgspec.json.encode(older))
        assert find_stack(tmp_path).metrics == {}


def test_spades_up_gives_each_worker_a_metrics_port_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPADES_METRICS_PORT", "9100")  # the machine's: not for four processes
    ports = {"engine": 19001, "projections": 19002, "webhooks": 19003, "timers": 19004}
    stack = children(Settings(data_dir=tmp_path), "nats://127.0.0.1:4999", None, ports)
    assert [child.name for child in stack] == [*WORKERS, "gateway"]
    given = {child.name: child.env.get("SPADES_METRICS_PORT") for child in stack}
    assert given == {**{kind: str(port) for kind, port in ports.items()}, "gateway": None}
    for child in stack:
        assert child.argv[3:5] == ["serve", child.name]
