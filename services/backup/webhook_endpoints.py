"""The platforms' webhook endpoints, as a backup carries them: kept in the read-model database,
which no stream holds (the deliveries' log is not kept: it is history, and a restored deployment
starts its own).

Restored, each endpoint hears of what is committed after the restored streams' last messages:
their history was delivered before the backup, and is not delivered again. A backup taken before
endpoints kept a starting point per stream holds ``games_after`` and ``leagues_after``: those of
the one games stream, ``SPADES_GAMES``, and of the leagues'.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import sqlalchemy as sa

from contracts.partitions import LEGACY_STREAM
from contracts.wire import ARCHIVE_STREAM, LEAGUES_STREAM
from services.backup.manifest import MANIFEST_FILE, BackupError, KeptCopy, Manifest
from services.runtime.settings import Settings
from services.store.database import Store, open_store, store_url
from services.store.migrations import migrate
from services.store.schema import webhook_endpoints
from services.store.webhook_endpoints import Endpoint, every_endpoint, set_starts


class SavedEndpoint(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    platform: str
    url: str
    events: list[str]
    secret: str
    created_at: float
    starts: dict[str, int] = {}
    games_after: int | None = None
    leagues_after: int | None = None
    """Where an endpoint backed up before ``starts`` started (see the module's docstring)."""
    disabled_at: float | None = None
    disabled_reason: str | None = None

    def starting_points(self) -> dict[str, int]:
        earlier = {LEGACY_STREAM: self.games_after, LEAGUES_STREAM: self.leagues_after}
        return {**{s: at for s, at in earlier.items() if at is not None}, **self.starts}

    def endpoint(self) -> Endpoint:
        return Endpoint(
            id=self.id,
            platform=self.platform,
            url=self.url,
            events=tuple(self.events),
            secret=self.secret,
            created_at=self.created_at,
            starts=self.starting_points(),
            disabled_at=self.disabled_at,
            disabled_reason=self.disabled_reason,
        )


def database_missing(settings: Settings) -> bool:
    """Whether the deployment's read-model database is a SQLite file not made yet (a backup
    then finds nothing in it, and makes nothing)."""
    where = store_url(settings.read_model_database_url)
    database = where.url.database
    return where.is_sqlite and database is not None and not Path(database).exists()


@asynccontextmanager
async def read_model_store(settings: Settings) -> AsyncIterator[Store]:
    """The deployment's read-model database, for one backup's or restore's work."""
    store = open_store(settings.read_model_database_url, pool_size=1)
    try:
        yield store
    finally:
        await store.close()


async def _saved(settings: Settings) -> list[SavedEndpoint]:
    """The deployment's endpoints, without creating its database or tables."""
    if database_missing(settings):
        return []
    async with read_model_store(settings) as store, store.reading() as conn:
        exists = await conn.run_sync(lambda sync: sa.inspect(sync).has_table("webhook_endpoints"))
        if not exists:
            return []
        found = await every_endpoint(conn)
    return [
        SavedEndpoint(**{**endpoint.row(), "events": list(endpoint.events)}) for endpoint in found
    ]


class WebhookEndpoints:
    """Every platform's webhook endpoints, secrets included (the backup folder is private)."""

    name = "webhook endpoints"
    file = "webhook_endpoints.json"
    before_streams = False

    async def save(self, settings: Settings, folder: Path) -> KeptCopy:
        from services.backup.outside import write_private

        content = msgspec.json.encode(await _saved(settings))
        write_private(folder / self.file, content)
        return KeptCopy(
            name=self.name,
            file=self.file,
            sha256=hashlib.sha256(content).hexdigest(),
            source="the read-model database",
        )

    async def check(self, settings: Settings, folder: Path, copy: KeptCopy) -> None:
        backed_up = _read(folder / copy.file)
        present = {saved.id: saved for saved in await _saved(settings)}
        for saved in backed_up:
            here = present.get(saved.id)
            if here is not None and (here.platform, here.url, here.secret) != (
                saved.platform,
                saved.url,
                saved.secret,
            ):
                raise BackupError(
                    f"webhook endpoint {saved.id} exists here with another platform, URL or "
                    "secret: restore into a deployment without it"
                )

    async def restore(self, settings: Settings, folder: Path, copy: KeptCopy) -> str:
        backed_up = _read(folder / copy.file)
        lasts = _last_sequences(folder)
        async with read_model_store(settings) as store:
            await migrate(store)
            async with store.writing() as conn:
                present = {e.id: e for e in await every_endpoint(conn)}
                for saved in backed_up:
                    endpoint = present.get(saved.id) or saved.endpoint()
                    if saved.id not in present:
                        await conn.execute(webhook_endpoints.insert().values(**endpoint.row()))
                    starts = dict(endpoint.starts)
                    for stream, last in lasts.items():
                        starts[stream] = max(starts.get(stream, 0), last)
                    await set_starts(conn, saved.id, starts)
        return (
            f"webhook endpoints: {len(backed_up)} restored; they hear of what is committed "
            "after the restored streams"
        )


def _read(path: Path) -> list[SavedEndpoint]:
    try:
        return msgspec.json.decode(path.read_bytes(), type=list[SavedEndpoint])
    except msgspec.DecodeError as error:
        raise BackupError(f"{path} is not a list of webhook endpoints: {error}") from None


def _last_sequences(folder: Path) -> dict[str, int]:
    """The last sequence of every restored stream webhooks follow, by name (not the archive:
    what it holds was heard of in the game streams)."""
    manifest = msgspec.json.decode((folder / MANIFEST_FILE).read_bytes(), type=Manifest)
    return {c.name: c.last_sequence for c in manifest.streams if c.name != ARCHIVE_STREAM}
