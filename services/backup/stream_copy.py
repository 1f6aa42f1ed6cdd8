"""One stream's messages to a file and back, each exactly as it was stored.

The file has one JSON line per message, in stream order: its sequence, subject, headers, bytes
(base64) and the time the stream stored it. Reading goes through a short-lived consumer of the
stream, from its start (a full backup) or from the sequence after a base's last (an increment),
up to the last sequence seen when the backup began; writing publishes each message with its own
headers and checks that it lands at its own sequence, so an increment's file continues the
stream that its base's files restored.

A game stream may skip sequences: the commits of finished games that archiving purged
(:mod:`services.runtime.game_archive`; the archive stream is backed up with the others). A
restore keeps every message at its own sequence all the same: each sequence skipped is taken by
a message on a subject no game has (:func:`gap_subject`), and those are purged once the file is
published.
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
    relative = f"streams/{name}.jsonl"
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = count = 0
    with path.open("wb") as out:
        async with contextlib.aclosing(stored_messages(js, name, last, after=after)) as messages:
            previous = after
            async for message in messages:
                count += 1
                if message.sequence <= previous:
                    raise BackupError(f"stream {name}: message {message.sequence} came twice")
                previous = message.sequence
                line = _encode(message) + b"\n"
                out.write(line)
                digest.update(line)
                size += len(line)
                if progress is not None and count % FETCH_BATCH == 0:
                    progress(count)
    if last > after and previous != last:
        raise BackupError(f"stream {name}: copied up to {previous}, not {last}")
    if not after and count != int(info.state.messages or 0):
        raise BackupError(
            f"stream {name}: {count} messages copied of the {info.state.messages} it held "
            "(was a pass of `spades archive` running? take the backup again)"
        )
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
        count, gaps = await _publish(js, copy, folder, pending, progress)
        while pending:
            await _landed(copy.name, *pending.popleft())
    finally:
        for _, future in pending:  # after a failure: those acknowledgements no longer matter
            future.cancel()
    if count != copy.messages:
        raise BackupError(f"{copy.file} holds {count} messages; the manifest says {copy.messages}")
    if gaps:
        await js.purge_stream(copy.name, subject=gap_subject(copy))
    return count


def gap_subject(copy: StreamCopy) -> str:
    """The subject a restore fills a stream's skipped sequences on: one of the stream's own
    (its first wildcard's last token made ``~gap``), which no game or league id can be."""
    tokens = copy.subjects[0].split(".")
    return ".".join([*tokens[:-1], "~gap"])


async def _publish(
    js: JetStreamContext,
    copy: StreamCopy,
    folder: Path,
    pending: deque[tuple[int, asyncio.Future[api.PubAck]]],
    progress: Progress | None,
) -> tuple[int, int]:
    """Publish the file's messages, each at its own sequence; how many, and how many skipped
    sequences were filled."""
    count = gaps = 0
    expected = copy.first_sequence
    lasts: dict[str, int] = {}
    """Each subject's last sequence published, where the file skips sequences."""
    with (folder / copy.file).open("rb") as source:
        for line in source:
            message = _decode(line)
            count += 1
            if message.sequence < expected or message.sequence > copy.last_sequence:
                raise BackupError(f"{copy.file}: message {message.sequence} is out of order")
            while expected < message.sequence:  # purged by archiving: filled, purged after
                gaps += 1
                await _in_flight(js, copy, pending, expected, gap_subject(copy), b"", None)
                expected += 1
            headers = message.headers
            if gaps:
                headers = _unpurged(headers, lasts.get(message.subject, 0))
                lasts[message.subject] = message.sequence
            await _in_flight(
                js, copy, pending, message.sequence, message.subject, message.data, headers
            )
            expected += 1
            if progress is not None and count % FETCH_BATCH == 0:
                progress(count)
    if count and expected != copy.last_sequence + 1:
        raise BackupError(f"{copy.file} ends at {expected - 1}, not {copy.last_sequence}")
    return count, gaps


def _unpurged(headers: dict[str, str] | None, last: int) -> dict[str, str] | None:
    """A message's headers without the subject sequence it expected to follow when that one
    was purged (a commit archived since: the subject's last published message is older): the
    rest is checked as it was."""
    key = api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value
    if headers is None or key not in headers or not headers[key].isdigit():
        return headers
    if int(headers[key]) <= last:
        return headers
    return {name: value for name, value in headers.items() if name != key}


async def _in_flight(
    js: JetStreamContext,
    copy: StreamCopy,
    pending: deque[tuple[int, asyncio.Future[api.PubAck]]],
    sequence: int,
    subject: str,
    data: bytes,
    headers: dict[str, str] | None,
) -> None:
    future = await js.publish_async(subject, data, headers=headers)
    pending.append((sequence, future))
    if len(pending) >= IN_FLIGHT:
        await _landed(copy.name, *pending.popleft())


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
