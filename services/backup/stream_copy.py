"""One stream's messages to a file and back, each exactly as it was stored.

The file has one JSON line per message, in stream order: its sequence, subject, headers, bytes
(base64) and the time the stream stored it. Reading goes through a short-lived consumer of the
stream, from its start (a full backup) or from the sequence after a base's last (an increment),
up to the last sequence seen when the backup began; writing publishes each message with its own
headers and checks that it lands at its own sequence, so an increment's file continues the
stream that its base's files restored.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
from collections import deque
from collections.abc import AsyncGenerator, Callable
from datetime import UTC
from pathlib import Path

import msgspec
from nats.js import JetStreamContext, api

from services.backup.manifest import BackupError, StreamCopy

FETCH_BATCH = 1000
FETCH_TIMEOUT_S = 5.0
IN_FLIGHT = 1000
"""Publishes awaiting their acknowledgement during a restore."""
ACK_TIMEOUT_S = 30.0
INACTIVE_CONSUMER_S = 60.0
"""The backup's consumer goes away this long after its last fetch, should the backup die."""


class StoredMessage(msgspec.Struct, frozen=True, kw_only=True):
    sequence: int
    subject: str
    data: bytes
    headers: dict[str, str] | None = None
    stored_at: str | None = None
    """When the stream stored it: kept for the record, not restored (a stream stores a message
    when it is published)."""


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(StoredMessage).decode

Progress = Callable[[int], None]
"""Called with the number of messages copied so far, now and then."""


def stream_created(info: api.StreamInfo) -> str:
    """When NATS made the stream, as a backup records it ("" if the server does not say)."""
    if info.created is None:
        return ""
    return info.created.astimezone(UTC).isoformat(timespec="microseconds")


async def export_stream(
    js: JetStreamContext,
    info: api.StreamInfo,
    folder: Path,
    progress: Progress | None = None,
    *,
    after: int = 0,
) -> StreamCopy:
    """Write every message of the stream ``info`` describes after sequence ``after`` (0: all),
    up to its last sequence then, to ``streams/<name>.jsonl`` under ``folder``."""
    name = str(info.config.name)
    last = int(info.state.last_seq or 0)
    if info.state.num_deleted or (last and info.state.first_seq != 1):
        raise BackupError(
            f"stream {name} has deleted messages (it starts at {info.state.first_seq}): its "
            "sequences could not be restored as they are"
        )
    relative = f"streams/{name}.jsonl"
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = count = 0
    with path.open("wb") as out:
        async with contextlib.aclosing(stored_messages(js, name, last, after=after)) as messages:
            async for message in messages:
                count += 1
                if message.sequence != after + count:
                    raise BackupError(f"stream {name}: message {after + count} was not delivered")
                line = _encode(message) + b"\n"
                out.write(line)
                digest.update(line)
                size += len(line)
                if progress is not None and count % FETCH_BATCH == 0:
                    progress(count)
    if after + count != last:
        raise BackupError(f"stream {name}: {count} messages copied of {last - after}")
    return StreamCopy(
        name=name,
        file=relative,
        subjects=list(info.config.subjects or []),
        messages=count,
        first_sequence=after + 1,
        last_sequence=last,
        created=stream_created(info),
        sha256=digest.hexdigest(),
        bytes=size,
    )


async def stored_messages(
    js: JetStreamContext, stream: str, last: int, *, after: int = 0
) -> AsyncGenerator[StoredMessage, None]:
    """The messages of ``stream`` after sequence ``after`` up to ``last``, in order."""
    if last <= after:
        return
    consumer = f"spades-backup-{secrets.token_hex(4)}"
    config = api.ConsumerConfig(
        name=consumer,
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=after + 1,
        ack_policy=api.AckPolicy.NONE,
        mem_storage=True,
        num_replicas=1,
        inactive_threshold=INACTIVE_CONSUMER_S,
    )
    await js.add_consumer(stream, config=config)
    subscription = await js.pull_subscribe_bind(consumer, stream=stream)
    try:
        sequence = after
        while sequence < last:
            wanted = min(FETCH_BATCH, last - sequence)
            for msg in await subscription.fetch(wanted, timeout=FETCH_TIMEOUT_S):
                metadata = msg.metadata
                sequence = metadata.sequence.stream
                if sequence > last:
                    return
                yield StoredMessage(
                    sequence=sequence,
                    subject=msg.subject,
                    data=msg.data,
                    headers=dict(msg.headers) if msg.headers else None,
                    stored_at=metadata.timestamp.isoformat() if metadata.timestamp else None,
                )
    finally:
        await subscription.unsubscribe()
        with contextlib.suppress(Exception):
            await js.delete_consumer(stream, consumer)


async def import_stream(
    js: JetStreamContext, copy: StreamCopy, folder: Path, progress: Progress | None = None
) -> int:
    """Publish the messages of ``copy`` into its stream, which must end just before them
    (empty, for a full backup's), in order; return how many. Each must land at its own sequence:
    anything else (another writer, a message the stream refuses or deduplicates) stops the
    restore with the reason."""
    pending: deque[tuple[int, asyncio.Future[api.PubAck]]] = deque()
    try:
        count = await _publish(js, copy, folder, pending, progress)
        while pending:
            await _landed(copy.name, *pending.popleft())
    finally:
        for _, future in pending:  # after a failure: those acknowledgements no longer matter
            future.cancel()
    if count != copy.messages:
        raise BackupError(f"{copy.file} holds {count} messages; the manifest says {copy.messages}")
    return count


async def _publish(
    js: JetStreamContext,
    copy: StreamCopy,
    folder: Path,
    pending: deque[tuple[int, asyncio.Future[api.PubAck]]],
    progress: Progress | None,
) -> int:
    count = 0
    with (folder / copy.file).open("rb") as source:
        for line in source:
            message = _decode(line)
            expected = copy.first_sequence + count
            count += 1
            if message.sequence != expected:
                raise BackupError(f"{copy.file}: message {expected} is missing")
            future = await js.publish_async(message.subject, message.data, headers=message.headers)
            pending.append((message.sequence, future))
            if len(pending) >= IN_FLIGHT:
                await _landed(copy.name, *pending.popleft())
            if progress is not None and count % FETCH_BATCH == 0:
                progress(count)
    return count


async def _landed(stream: str, sequence: int, future: asyncio.Future[api.PubAck]) -> None:
    try:
        async with asyncio.timeout(ACK_TIMEOUT_S):
            ack = await future
    except TimeoutError:
        raise BackupError(f"stream {stream}: message {sequence} was not acknowledged") from None
    except Exception as error:
        raise BackupError(f"stream {stream} refused message {sequence}: {error}") from None
    if ack.stream != stream or ack.seq != sequence or ack.duplicate:
        raise BackupError(
            f"message {sequence} of stream {stream} landed at {ack.stream} {ack.seq}"
            f"{' as a duplicate' if ack.duplicate else ''}: is something else writing to it?"
        )
