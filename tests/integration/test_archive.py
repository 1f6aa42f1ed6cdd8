"""The archive of finished games (``spades archive``) against a real nats-server: games moved out
of their partition streams read, audit and refuse commands as before, with one partition and
three, across a crash between the archive's write and the stream's purge, and through a backup
and its restore."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.commands import wait_for_engine
from benchmarks.nats_table import RandomTable
from benchmarks.timers import fill, finished_histories
from contracts.partitions import ONE, Partitions
from contracts.wire import ARCHIVE_STREAM, ActRequest, CreateGameRequest
from services.archive.moving import Pass, archive_games
from services.audit.replay import audit_game
from services.backup.deployment import restore_backup, take_backup
from services.backup.repartition import MigrationError, migrate_partitions
from services.engine.service import ensure_streams
from services.projections.rebuild import rebuild
from services.runtime.broker_users import ADMIN
from services.runtime.engine_client import EngineClient
from services.runtime.game_archive import (
    ArchivedCommit,
    ArchivedGame,
    history_digest,
    pack,
)
from services.runtime.game_stream import GameStream, StoredCommit, games_stream_config
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats
from services.runtime.settings import SIGNING_KEY_FILENAME, Settings
from services.store.database import open_store
from services.store.migrations import migrate
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.integration.test_gateway import ServedGateway, gateway_settings

pytestmark = pytest.mark.integration

FILLED = 4
"""Finished histories written straight into the streams (a hand each, 121 commits)."""


async def _admin(server: EmbeddedNats) -> Client:
    credentials = server.credentials_for(ADMIN)
    return await connect(server.url, "pytest", user=ADMIN, credentials=credentials)


def _engine(server: EmbeddedNats, tmp_path: Path, partitions: Partitions) -> EngineProcess:
    env = {
        "SPADES_PARTITIONS": str(partitions.count),
        "SPADES_NATS_CREDS": str(server.credentials_for("engine")),
    }
    engine = EngineProcess(server.url, tmp_path, env=env)
    engine.start()
    engine.wait_ready()
    return engine


async def _stream_totals(js: JetStreamContext, partitions: Partitions) -> tuple[int, int]:
    messages = size = 0
    for stream in partitions.streams:
        state = (await js.stream_info(stream)).state
        messages += int(state.messages)
        size += int(state.bytes)
    return messages, size


async def _subject_count(js: JetStreamContext, partitions: Partitions, game_id: str) -> int:
    stream = partitions.stream(partitions.of(game_id))
    subject = partitions.game_subject(game_id)
    info = await js.stream_info(stream, subjects_filter=subject)
    return int((info.state.subjects or {}).get(subject, 0))


def _as_stored(history: list[StoredCommit]) -> list[tuple[int, bytes]]:
    return [(stored.sequence, stored.data) for stored in history]


async def _play(client: EngineClient, stream: GameStream, game_id: str, seed: int) -> RandomTable:
    table = RandomTable(client, stream, game_id, random.Random(seed))
    await table.open({"preset": "two-player", "max_hands": 1})
    return table


@pytest.mark.parametrize("count", [1, 3], ids=["K=1", "K=3"])
async def test_finished_games_move_to_the_archive_and_read_as_before(
    count: int, tmp_path: Path
) -> None:
    partitions = Partitions(count)
    with EmbeddedNats(tmp_path / "nats", partitions=partitions) as server:
        engine = _engine(server, tmp_path, partitions)
        admin = await _admin(server)
        try:
            js = admin.jetstream()
            client = EngineClient(admin, timeout_s=10, partitions=partitions)
            await wait_for_engine(client)
            stream = GameStream(js, partitions)
            await fill(admin, partitions, finished_histories(FILLED, prefix=f"old{count}"))
            played = await _play(client, stream, f"played-{count}", 1)
            await played.play_out()
            assert played.finished
            going = await _play(client, stream, f"going-{count}", 2)
            for _ in range(6):
                await going.step()
            finished = [f"old{count}-{n:06d}" for n in range(FILLED)] + [played.game_id]
            before = {game: await stream.read(game) for game in [*finished, going.game_id]}
            totals = await _stream_totals(js, partitions)

            done = await archive_games(js, partitions, idle_since=time.time() + 1)

            # Every finished game moved, the one being played did not.
            assert sorted(moved.game_id for moved in done.moved) == sorted(finished)
            assert done.left == {}
            assert await _subject_count(js, partitions, going.game_id) == len(before[going.game_id])
            for game in finished:
                assert await _subject_count(js, partitions, game) == 1  # its last commit
            messages, size = await _stream_totals(js, partitions)
            purged = sum(len(before[game]) - 1 for game in finished)
            assert messages == totals[0] - purged
            archive = (await js.stream_info(ARCHIVE_STREAM)).state
            assert archive.messages == len(finished)
            assert int(archive.bytes) < (totals[1] - size) / 3
            _say_figures(count, done, totals, (messages, size), int(archive.bytes))

            # Read as before, by a reader that never saw them (a fresh store) and one that did.
            fresh = GameStream(js, partitions)
            for game in [*finished, going.game_id]:
                assert _as_stored(await fresh.read(game)) == _as_stored(before[game])
                assert _as_stored(await stream.read(game)) == _as_stored(before[game])
                middle = before[game][len(before[game]) // 2]
                page = await fresh.read(game, after=middle.sequence, limit=5)
                assert _as_stored(page) == _as_stored(
                    [s for s in before[game] if s.sequence > middle.sequence][:5]
                )
                until = await fresh.read(game, until=middle.sequence)
                assert _as_stored(until) == _as_stored(
                    [s for s in before[game] if s.sequence <= middle.sequence]
                )
                assert (await fresh.read_one(game, middle.sequence)).data == middle.data
            for game in finished:
                report = audit_game(await fresh.read(game))
                assert report.problems == []
                assert report.ok

            # A command to an archived game is refused as to any finished game, and recorded
            # after its last commit; its id is never free for a new game.
            reply = await client.send(
                played.game_id, ActRequest(seat=0, action={"type": "bid", "bid": 3})
            )
            assert (reply.ok, reply.code) == (False, "game_over")
            again = await client.send(played.game_id, CreateGameRequest(rules={"preset": "solo"}))
            assert (again.ok, again.code) == (False, "conflict")
            history = await fresh.read(played.game_id)
            assert _as_stored(history[: len(before[played.game_id])]) == _as_stored(
                before[played.game_id]
            )
            assert [s.commit.refusal.code for s in history[-2:] if s.commit.refusal] == [
                "game_over",
                "conflict",
            ]
            assert audit_game(history).ok

            # A second pass moves the refusals too, and nothing else.
            second = await archive_games(js, partitions, idle_since=time.time() + 1)
            assert [moved.game_id for moved in second.moved] == [played.game_id]
            assert _as_stored(await GameStream(js, partitions).read(played.game_id)) == (
                _as_stored(history)
            )
            assert await _subject_count(js, partitions, played.game_id) == 1

            # A backup and its restore keep the archived games.
            settings = Settings(data_dir=tmp_path / "data", secret_key=None, partitions=count)
            settings.data_dir.mkdir()
            (settings.data_dir / SIGNING_KEY_FILENAME).write_bytes(bytes(range(32)))
            await take_backup(settings, admin, tmp_path / "backup")
        finally:
            await admin.close()
            engine.stop()
    with EmbeddedNats(tmp_path / "restored", partitions=partitions) as server:
        admin = await _admin(server)
        try:
            target = Settings(data_dir=tmp_path / "target", secret_key=None, partitions=count)
            target.data_dir.mkdir()
            await restore_backup(target, admin, tmp_path / "backup")
            js = admin.jetstream()
            restored = GameStream(js, partitions)
            for game in [*finished, going.game_id]:
                expected = history if game == played.game_id else before[game]
                assert _as_stored(await restored.read(game)) == _as_stored(expected)
                assert await _subject_count(js, partitions, game) == (
                    len(expected) if game == going.game_id else 1
                )
            assert (await _stream_totals(js, partitions))[0] == messages
        finally:
            await admin.close()


def _say_figures(
    count: int, done: Pass, before: tuple[int, int], after: tuple[int, int], archive: int
) -> None:
    """The figures of docs/operations.md, "Archiving finished games" (``pytest -s`` shows them)."""
    games = len(done.moved)
    print(
        f"\nK={count}: {games} games archived; partition streams {before[0]} messages, "
        f"{before[1]} bytes -> {after[0]} messages, {after[1]} bytes "
        f"({(before[1] - after[1]) / games:.0f} bytes a game freed); archive {archive} bytes "
        f"({archive / games:.0f} a game); commits "
        f"{sum(m.history_bytes for m in done.moved) / games:.0f} bytes a game"
    )


async def test_a_pass_resumes_a_write_that_was_not_purged_and_never_purges_a_differing_one(
    nats_server: EmbeddedNats, nats_client: Client
) -> None:
    js = nats_client.jetstream()
    engine_less = GameStream(js, ONE)
    await ensure_streams(js)
    histories = dict(finished_histories(3, prefix="crash"))
    await fill(nats_client, ONE, histories.items())
    resumed, forged, untouched = sorted(histories)
    before = {game: await engine_less.read(game) for game in histories}

    # A pass that wrote the archive and stopped before purging: the stream is as it was.
    written = _archived(resumed, before[resumed])
    await engine_less.archive.store.append(
        resumed, pack(written), expected=0, command_id=f"{resumed}:{before[resumed][-1].sequence}"
    )
    # An archive message that is not the stream's history (a commit left out): never purged.
    wrong = [*before[forged][:-2], before[forged][-1]]
    await engine_less.archive.store.append(
        forged, pack(_archived(forged, wrong)), expected=0, command_id="forged"
    )
    for game in (resumed, forged):
        assert await _subject_count(js, ONE, game) == len(before[game])
        assert _as_stored(await GameStream(js, ONE).read(game)) == _as_stored(before[game])

    done = await archive_games(js, ONE, idle_since=time.time() + 1, limit=3)

    assert sorted(moved.game_id for moved in done.moved) == [resumed, untouched]
    assert "differs" in done.left[forged]
    assert await _subject_count(js, ONE, forged) == len(before[forged])
    for game in (resumed, untouched):
        assert await _subject_count(js, ONE, game) == 1
    archived = (await js.stream_info(ARCHIVE_STREAM)).state.messages
    assert archived == 3  # the resumed game's first write was used, not written again
    for game in histories:
        assert _as_stored(await GameStream(js, ONE).read(game)) == _as_stored(before[game])
    # Moving games into partitions would change the sequences their archive keeps: refused.
    with pytest.raises(MigrationError, match="archived"):
        await migrate_partitions(js, Partitions(3))


def _archived(game_id: str, history: list[StoredCommit]) -> ArchivedGame:
    commits = [ArchivedCommit(stored.sequence, stored.data) for stored in history]
    return ArchivedGame(
        game_id=game_id,
        stream=ONE.stream(0),
        stream_created="",
        subject=ONE.game_subject(game_id),
        archived_at="2026-12-01T00:00:00+00:00",
        digest=history_digest(commits),
        commits=commits,
    )


async def _answers(http: httpx.AsyncClient, game_id: str, version: int) -> dict[str, Any]:
    """What the gateway answers of a finished game: its state, events, hand record,
    scoreboard and audit (once the read models hold its last version)."""
    base = f"/v1/games/{game_id}"
    answers: dict[str, Any] = {}
    for name, path in {
        "state": base,
        "events": f"{base}/events?limit=1000",
        "hand": f"{base}/hands/1?min_version={version}",
        "scoreboard": f"{base}/scoreboard?min_version={version}",
        "audit": f"{base}/audit",
    }.items():
        answer = await http.get(path)
        assert answer.status_code == 200, (path, answer.text)
        answers[name] = answer.json()
    return answers


async def _replayed_events(http: httpx.AsyncClient, game_id: str, version: int) -> list[int]:
    """The versions an event stream resumed from ``Last-Event-ID: 0`` sends, up to ``version``."""
    seen: list[int] = []
    headers = {"Last-Event-ID": "0"}
    async with http.stream("GET", f"/v1/games/{game_id}/events/stream", headers=headers) as body:
        async for line in body.aiter_lines():
            if line.startswith("id:"):
                seen.append(int(line[3:]))
                if seen[-1] >= version:
                    break
    return seen


async def test_the_gateway_and_rebuilt_read_models_answer_an_archived_game_as_before(
    nats_server: EmbeddedNats, nats_client: Client, engine: EngineProcess, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    workers = ProjectionsProcess(nats_server.url, tmp_path, env={"SPADES_DATA_DIR": str(data_dir)})
    workers.start()
    settings = gateway_settings(nats_server.url, data_dir)
    try:
        client = EngineClient(nats_client, timeout_s=10)
        await wait_for_engine(client)
        table = await _play(client, GameStream(nats_client.jetstream()), "served-1", 3)
        await table.play_out()
        assert table.state is not None
        version = table.state.version
        with ServedGateway(settings, min_version_wait_s=20.0) as served:
            async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
                before = await _answers(http, table.game_id, version)
                assert before["audit"]["ok"]
                done = await archive_games(nats_client.jetstream(), ONE, idle_since=time.time() + 1)
                assert [moved.game_id for moved in done.moved] == [table.game_id]
                assert await _subject_count(nats_client.jetstream(), ONE, table.game_id) == 1
                warm = await _answers(http, table.game_id, version)  # its cache saw the game
        with ServedGateway(settings, min_version_wait_s=20.0) as served:  # one that never did
            async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
                cold = await _answers(http, table.game_id, version)
                replayed = await _replayed_events(http, table.game_id, version)
                assert warm == before
                assert cold == before
                assert replayed == [e["version"] for e in before["events"]["events"]]

                # The read models rebuilt from the streams hold the archived game again.
                store = open_store(settings.read_model_database_url)
                try:
                    await migrate(store)
                    assert await rebuild(store) != []
                finally:
                    await store.close()
                rebuilt = await _answers(http, table.game_id, version)
                assert rebuilt["hand"] == before["hand"]
                assert rebuilt["scoreboard"] == before["scoreboard"]
                listed = (await http.get("/v1/games")).json()
                assert table.game_id in json.dumps(listed)
    finally:
        workers.stop()


async def test_a_stream_made_before_archiving_still_starts_and_is_left_as_it_is(
    nats_server: EmbeddedNats, nats_client: Client
) -> None:
    js = nats_client.jetstream()
    earlier = games_stream_config()
    earlier.deny_purge = True  # as every version before archiving made it
    await js.add_stream(earlier)
    await fill(nats_client, ONE, finished_histories(1, prefix="kept"))

    await ensure_streams(js)  # what an engine of this version does at start-up

    assert (await js.stream_info(ONE.stream(0))).config.deny_purge
    done = await archive_games(js, ONE, idle_since=time.time() + 1)
    assert done.moved == []
    assert "denies purges" in done.left[ONE.stream(0)]
    assert await _subject_count(js, ONE, "kept-000000") == 121
