"""``spades backup`` and ``spades restore`` against real nats-servers: every message comes back
at its sequence with its subject, headers and bytes; a restore that would overwrite anything is
refused before it changes anything."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext
from typer.testing import CliRunner, Result

from contracts.wire import ARCHIVE_STREAM, GAMES_STREAM, LEAGUES_STREAM, league_subject
from services.backup.deployment import STREAMS, restore_backup, take_backup
from services.backup.manifest import FULL, MANIFEST_FILE, BackupError
from services.backup.outside import NOT_KEPT
from services.cli.main import app as spades
from services.projections.audit_log import LogModel
from services.projections.registry import sign_log
from services.runtime.broker_users import ADMIN
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats
from services.runtime.settings import SIGNING_KEY_FILENAME, Settings
from services.store.database import Store, open_store
from services.store.migrations import migrate
from services.store.schema import log_checkpoints
from services.transparency.note import Signer, Verifier

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    append_games,
    publish_raw,
    random_logs,
    wait_for_positions,
    workers,
)

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.integration.conftest_projections"]

KEY = bytes(range(32))


def deployment(data_dir: Path, nats_url: str | None = None) -> Settings:
    """Settings of a deployment that keeps its signing key in ``data_dir``."""
    return Settings(data_dir=data_dir, nats_url=nats_url, secret_key=None, stream_replicas=1)


async def fill(js: JetStreamContext) -> dict[str, int]:
    """Games, a message no commit (a backup copies what is stored, not what is valid) and a
    few league messages with headers of their own; return each stream's last sequence."""
    await append_games(js, random_logs(5, seed=51))
    await publish_raw(js, "junk", b"\x00\xff not a commit")
    games_last = await append_games(js, random_logs(2, seed=52, prefix="later"))
    for n in range(3):
        ack = await js.publish(
            league_subject(f"league{n % 2}"),
            json.dumps({"n": n}).encode(),
            stream=LEAGUES_STREAM,
            headers={"Nats-Msg-Id": f"league-{n}", "X-Spades-Note": f"note {n}"},
        )
    return {GAMES_STREAM: games_last, LEAGUES_STREAM: ack.seq, ARCHIVE_STREAM: 0}


async def every_message(js: JetStreamContext, stream: str, last: int) -> list[tuple[object, ...]]:
    messages: list[tuple[object, ...]] = []
    for sequence in range(1, last + 1):
        message = await js.get_msg(stream, sequence)
        messages.append((message.seq, message.subject, message.headers, message.data))
    return messages


async def test_a_restored_stream_holds_every_message_at_its_sequence(
    js: JetStreamContext, nats_client: Client, tmp_path: Path
) -> None:
    lasts = await fill(js)
    source = deployment(tmp_path / "source")
    source.data_dir.mkdir()
    (source.data_dir / SIGNING_KEY_FILENAME).write_bytes(KEY)
    folder = tmp_path / "backup"

    manifest = await take_backup(source, nats_client, folder)

    assert manifest.format == FULL
    assert [(s.name, s.messages, s.last_sequence) for s in manifest.streams] == [
        (GAMES_STREAM, lasts[GAMES_STREAM], lasts[GAMES_STREAM]),
        (LEAGUES_STREAM, lasts[LEAGUES_STREAM], lasts[LEAGUES_STREAM]),
        (ARCHIVE_STREAM, 0, 0),
    ]
    assert [(k.name, k.file) for k in manifest.outside] == [
        ("signing key", "secret.key"),
        ("webhook endpoints", "webhook_endpoints.json"),
        ("audit log", "audit_log.json"),
    ]
    assert manifest.not_kept == NOT_KEPT
    assert (folder / "secret.key").read_bytes() == KEY
    assert (folder / "secret.key").stat().st_mode & 0o077 == 0
    assert json.loads((folder / MANIFEST_FILE).read_text())["streams"][0]["name"] == GAMES_STREAM

    async with EmbeddedNats(tmp_path / "fresh-nats") as fresh:
        client = await connect(
            fresh.url, "pytest-restore", credentials=fresh.credentials_for(ADMIN)
        )
        try:
            target = deployment(tmp_path / "target")
            restored = await restore_backup(target, client, folder)
            assert restored.messages == lasts
            assert (target.data_dir / SIGNING_KEY_FILENAME).read_bytes() == KEY
            assert target.signing_key() == KEY
            again = client.jetstream()
            for stream, last in lasts.items():
                assert await every_message(again, stream, last) == await every_message(
                    js, stream, last
                )
                info = await again.stream_info(stream)
                expected = STREAMS[stream](1)
                assert info.config.deny_delete
                assert info.config.deny_purge == expected.deny_purge
                assert info.config.subjects == expected.subjects
                assert info.created != (await js.stream_info(stream)).created, "made anew"
        finally:
            await client.close()


async def test_a_restore_that_would_overwrite_anything_changes_nothing(
    js: JetStreamContext, nats_client: Client, tmp_path: Path
) -> None:
    lasts = await fill(js)
    source = deployment(tmp_path / "source")
    source.data_dir.mkdir()
    (source.data_dir / SIGNING_KEY_FILENAME).write_bytes(KEY)
    folder = tmp_path / "backup"
    await take_backup(source, nats_client, folder)

    with pytest.raises(BackupError, match="not an empty folder"):
        await take_backup(source, nats_client, folder)
    with pytest.raises(BackupError, match=f"stream {GAMES_STREAM} already holds messages"):
        await restore_backup(deployment(tmp_path / "elsewhere"), nats_client, folder)
    assert int((await js.stream_info(GAMES_STREAM)).state.last_seq or 0) == lasts[GAMES_STREAM]

    async with EmbeddedNats(tmp_path / "fresh-nats") as fresh:
        client = await connect(
            fresh.url, "pytest-restore", credentials=fresh.credentials_for(ADMIN)
        )
        try:
            other_key = deployment(tmp_path / "other-key")
            other_key.data_dir.mkdir()
            (other_key.data_dir / SIGNING_KEY_FILENAME).write_bytes(bytes(32))
            with pytest.raises(BackupError, match="holds another signing key"):
                await restore_backup(other_key, client, folder)
            with_env_key = Settings(data_dir=tmp_path / "env", secret_key="another key")
            with pytest.raises(BackupError, match="SPADES_SECRET_KEY here is not"):
                await restore_backup(with_env_key, client, folder)

            damaged = folder / "streams" / f"{LEAGUES_STREAM}.jsonl"
            damaged.write_bytes(damaged.read_bytes().replace(b'"n', b'"N', 1))
            with pytest.raises(BackupError, match="does not match its digest"):
                await restore_backup(deployment(tmp_path / "target"), client, folder)

            assert await client.jetstream().streams_info() == [], "nothing was created"
            assert not (tmp_path / "target" / SIGNING_KEY_FILENAME).exists()
        finally:
            await client.close()


async def test_the_commands_back_up_and_restore_into_an_empty_data_directory(
    js: JetStreamContext, nats_server: EmbeddedNats, tmp_path: Path
) -> None:
    """``spades restore`` without a NATS URL starts the data directory's own embedded server,
    restores into it and stops it: the next ``spades up`` finds the streams there."""
    lasts = await fill(js)
    source, target = tmp_path / "source", tmp_path / "target"
    source.mkdir()
    (source / SIGNING_KEY_FILENAME).write_bytes(KEY)
    folder = tmp_path / "backup"

    def run(*args: str, nats_url: str | None) -> Result:
        environment = {
            "SPADES_NATS_URL": nats_url,
            "SPADES_LOG_FORMAT": "json",
            # the fixture's server keeps its users' seeds with its own store
            "SPADES_NATS_CREDS": str(nats_server.credentials.directory) if nats_url else None,
        }
        return CliRunner().invoke(spades, list(args), env=environment)

    taken = await asyncio.to_thread(
        run, "backup", str(folder), "--data-dir", str(source), nats_url=nats_server.url
    )
    assert taken.exit_code == 0, taken.output
    assert f"{GAMES_STREAM}: {lasts[GAMES_STREAM]} messages" in taken.stdout
    refused = await asyncio.to_thread(run, "backup", str(folder), nats_url=nats_server.url)
    assert refused.exit_code == 1
    assert "not an empty folder" in refused.stderr

    restored = await asyncio.to_thread(
        run, "restore", str(folder), "--data-dir", str(target), nats_url=None
    )
    assert restored.exit_code == 0, restored.output
    assert "restore complete" in restored.stdout
    assert (target / SIGNING_KEY_FILENAME).read_bytes() == KEY
    again = await asyncio.to_thread(
        run, "restore", str(folder), "--data-dir", str(target), nats_url=None
    )
    assert again.exit_code == 1
    assert "is not empty" in again.stderr

    async with EmbeddedNats(target / "nats") as server:
        client = await connect(server.url, "pytest", credentials=server.credentials_for(ADMIN))
        try:
            for stream, last in lasts.items():
                restored_js = client.jetstream()
                assert await every_message(restored_js, stream, last) == await every_message(
                    js, stream, last
                )
        finally:
            await client.close()


LOG_ORIGIN = "spades.test/backed-up-log"


async def log_rows(store: Store) -> dict[str, list[tuple[object, ...]]]:
    async with store.reading() as conn:
        return {
            table.name: [
                tuple(row)
                for row in await conn.execute(sa.select(table).order_by(*table.primary_key.columns))
            ]
            for table in LogModel.tables
        }


async def test_a_backup_carries_the_audit_log_and_puts_it_back_over_no_other(
    js: JetStreamContext, nats_client: Client, tmp_path: Path
) -> None:
    """The log is a record the workers may not recompute: the backup carries its rows and its
    key, the restore puts them back as they were, and refuses to put them over a log of
    another key (or other leaves) in the read-model database."""
    key = Signer.generate(LOG_ORIGIN)
    lasts = await fill(js)
    source = deployment(tmp_path / "source")
    source.data_dir.mkdir()
    (source.data_dir / SIGNING_KEY_FILENAME).write_bytes(KEY)
    store = open_store(source.read_model_database_url)
    sign_log(LOG_ORIGIN, key)
    try:
        async with workers(store, nats_client):
            await wait_for_positions(store, {0: lasts[GAMES_STREAM]}, ["log"])
        original = await log_rows(store)
    finally:
        sign_log(LOG_ORIGIN, None)
        await store.close()
    assert original["log_leaves"], "the games' hands are in the log"
    folder = tmp_path / "backup"
    await take_backup(source, nats_client, folder)
    saved = json.loads((folder / "audit_log.json").read_bytes())
    assert saved["keys"] == [Verifier(f"{LOG_ORIGIN}/0", key.kind, key.verifier.public).text()]

    async with EmbeddedNats(tmp_path / "fresh-nats") as fresh:
        client = await connect(
            fresh.url, "pytest-restore", credentials=fresh.credentials_for(ADMIN)
        )
        try:
            # Another log in the target's read-model database: the same rows, another key.
            other = deployment(tmp_path / "other-log")
            other.data_dir.mkdir()
            other_store = open_store(other.read_model_database_url)
            try:
                await migrate(other_store)
                async with other_store.writing() as conn:
                    for table in LogModel.tables:
                        await conn.execute(
                            table.insert(),
                            [
                                dict(zip(table.c.keys(), row, strict=True))
                                for row in original[table.name]
                            ],
                        )
                    another = Signer.generate(f"{LOG_ORIGIN}/0").verifier.text()
                    await conn.execute(log_checkpoints.update().values(verifier=another))
            finally:
                await other_store.close()
            with pytest.raises(BackupError, match="audit log signed with another key"):
                await restore_backup(other, client, folder)
            assert (await client.jetstream().account_info()).streams == 0, "nothing restored"

            target = deployment(tmp_path / "target")
            restored = await restore_backup(target, client, folder)
            assert any(line.startswith("audit log:") for line in restored.outside)
            restored_store = open_store(target.read_model_database_url)
            try:
                assert await log_rows(restored_store) == original
            finally:
                await restored_store.close()
        finally:
            await client.close()
