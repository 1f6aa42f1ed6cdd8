"""The audit log, as a backup carries it: its rows (each partition's leaves, tree nodes and
latest checkpoint, and how far it has read each game) and the public keys its checkpoints were
signed with.

The log is a record, not a read model the workers may recompute in another order
(``ReadModel.kept``): a restore puts it back as it was, and the
projection workers append to it what the restored streams hold beyond it. It is saved before the
streams are copied, so every leaf it holds is of a commit the copy holds too (a leaf of a commit
copied after it would stand for a hand the restored games may play otherwise).

The log's private key is not in the backup: it stays with the operator (``SPADES_LOG_KEY`` or
``<data dir>/log.key``), and the restored deployment needs it to go on signing under the key its
players and platforms hold. A restore refuses to put a log back over another one in the
read-model database: one signed with another key is another log, and one with other leaves
would be overwritten.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import msgspec
import sqlalchemy as sa

from services.backup.manifest import BackupError, KeptCopy
from services.backup.webhook_endpoints import database_missing, read_model_store
from services.runtime.settings import Settings
from services.store.audit_log import LOG_TABLES
from services.store.database import Statements
from services.store.migrations import migrate
from services.store.schema import log_checkpoints
from services.transparency.note import NoteError, Verifier

Rows = dict[str, list[dict[str, Any]]]
"""Each log table's rows, by table name, in key order."""


class SavedLog(msgspec.Struct, frozen=True, kw_only=True):
    keys: list[str]
    """The verifier keys (``<origin>/<partition>+<key id>+<public key>``) of its checkpoints."""
    tables: Rows


def _encoded(value: Any) -> Any:
    return base64.b64encode(value).decode() if isinstance(value, bytes | memoryview) else value


async def _rows(conn: Statements) -> Rows:
    rows: Rows = {}
    for table in LOG_TABLES:
        result = await conn.execute(sa.select(table).order_by(*table.primary_key.columns))
        rows[table.name] = [
            {key: _encoded(value) for key, value in row.items()} for row in result.mappings()
        ]
    return rows


def _decoded(rows: Rows) -> Rows:
    """The rows as the tables take them back: binary columns from base64."""
    decoded: Rows = {}
    for table in LOG_TABLES:
        binary = {c.name for c in table.columns if isinstance(c.type, sa.LargeBinary)}
        decoded[table.name] = [
            {k: base64.b64decode(v) if k in binary and v is not None else v for k, v in row.items()}
            for row in rows.get(table.name, [])
        ]
    return decoded


def _keys(rows: Rows) -> list[str]:
    return sorted({row["verifier"] for row in rows[log_checkpoints.name] if row["verifier"]})


def _public_keys(keys: list[str]) -> set[bytes]:
    try:
        return {Verifier.parse(key).public for key in keys}
    except NoteError as error:
        raise BackupError(f"the backed-up log names a key that is not one: {error}") from None


async def _present(settings: Settings) -> Rows | None:
    """The log in the deployment's read-model database (None: no database or no log tables)."""
    if database_missing(settings):
        return None
    async with read_model_store(settings) as store, store.reading() as conn:
        tables = [table.name for table in LOG_TABLES]
        exists = await conn.run_sync(
            lambda sync: all(sa.inspect(sync).has_table(t) for t in tables)
        )
        if not exists:
            return None
        return await _rows(conn)


def _read(path: Path) -> SavedLog:
    try:
        return msgspec.json.decode(path.read_bytes(), type=SavedLog)
    except msgspec.DecodeError as error:
        raise BackupError(f"{path} is not an audit log: {error}") from None


class AuditLog:
    """Every partition's audit log, with the public keys of its checkpoints."""

    name = "audit log"
    file = "audit_log.json"
    before_streams = True
    """Saved before the streams are copied (see the module's docstring)."""

    async def save(self, settings: Settings, folder: Path) -> KeptCopy:
        from services.backup.outside import write_private

        rows = await _present(settings) or {table.name: [] for table in LOG_TABLES}
        content = msgspec.json.encode(SavedLog(keys=_keys(rows), tables=rows))
        write_private(folder / self.file, content)
        return KeptCopy(
            name=self.name,
            file=self.file,
            sha256=hashlib.sha256(content).hexdigest(),
            source="the read-model database",
        )

    async def check(self, settings: Settings, folder: Path, copy: KeptCopy) -> None:
        backed_up = _read(folder / copy.file)
        present = await _present(settings)
        if present is None or not any(present.values()):
            return
        if _public_keys(_keys(present)) != _public_keys(backed_up.keys):
            raise BackupError(
                "the read-model database here holds an audit log signed with another key: it "
                "is another log, and a restore never puts one over it. Restore into an empty "
                "read-model database (SPADES_DATABASE_URL)"
            )
        if present != backed_up.tables:
            raise BackupError(
                "the read-model database here holds an audit log with other leaves than the "
                "backup's: restore into an empty read-model database (SPADES_DATABASE_URL)"
            )

    async def restore(self, settings: Settings, folder: Path, copy: KeptCopy) -> str:
        backed_up = _read(folder / copy.file)
        rows = _decoded(backed_up.tables)
        async with read_model_store(settings) as store:
            await migrate(store)  # the log's tables are a step apart: they need no key
            async with store.writing() as conn:
                if not any(rows.values()):
                    return "audit log: empty in the backup, nothing to restore"
                if await _rows(conn) == backed_up.tables:  # checked: this very log, restored
                    return "audit log: the read-model database holds it already"
                for table in LOG_TABLES:
                    if rows[table.name]:
                        await conn.execute(table.insert(), rows[table.name])
        sizes = ", ".join(
            f"{row['size']} in log {row['partition']}" for row in rows["log_checkpoints"]
        )
        keys = ", ".join(backed_up.keys) or "none (it was unsigned)"
        return (
            f"audit log: {len(rows['log_leaves'])} leaves restored ({sizes or 'empty'});"
            f" its key: {keys}. Give the restored deployment that key (SPADES_LOG_KEY or"
            " log.key in its data directory) before it starts, or its checkpoints change key"
        )
