"""Positions kept in a NATS key-value bucket, for workers that have no database of their own
(the round watch, the timers).

A checkpoint is a worker's position in one stream (with the stream's identity, so that a
position is never read against another stream) and whatever the worker needs to resume from it
without reading the stream from its start. It is written only at the revision its writer read:
a member that lost its partition to another cannot overwrite the newer one's checkpoint
(:class:`Fenced`).
"""

from __future__ import annotations

import msgspec
import nats.js.errors
from nats.js import JetStreamContext, api
from nats.js.kv import KeyValue

from services.runtime.broker_users import CHECKPOINTS_BUCKET
from services.runtime.stream_identity import StreamIdentity

MAX_CHECKPOINT_BYTES = 8 * 1024 * 1024


class Fenced(Exception):
    """Another member wrote the checkpoint since this one read it: the partition is not this
    member's any more."""


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    position: int = 0
    stream: str = ""
    stream_created: str = ""
    state: msgspec.Raw = msgspec.Raw(b"null")
    """What the worker resumes from, as it wrote it (JSON)."""

    def belongs_to(self, identity: StreamIdentity) -> bool:
        return self.stream == identity.name and self.stream_created == identity.created


_decode = msgspec.json.Decoder(Checkpoint).decode
_encode = msgspec.json.Encoder().encode


def bucket_config(replicas: int = 1) -> api.KeyValueConfig:
    return api.KeyValueConfig(
        bucket=CHECKPOINTS_BUCKET,
        description="spades: positions and state of workers that keep no database",
        history=1,
        max_value_size=MAX_CHECKPOINT_BYTES,
        storage=api.StorageType.FILE,
        replicas=replicas,
    )


async def checkpoints_bucket(js: JetStreamContext, replicas: int = 1) -> KeyValue:
    """The bucket, made if it is not there yet."""
    try:
        return await js.key_value(CHECKPOINTS_BUCKET)
    except nats.js.errors.BucketNotFoundError:
        pass
    try:
        return await js.create_key_value(bucket_config(replicas))
    except nats.js.errors.BadRequestError:
        return await js.key_value(CHECKPOINTS_BUCKET)


class Checkpoints:
    """One worker kind's checkpoints, one per stream it follows."""

    def __init__(self, js: JetStreamContext, kind: str, replicas: int = 1) -> None:
        self.js = js
        self.kind = kind
        self.replicas = replicas
        self._kv: KeyValue | None = None
        self._revisions: dict[str, int] = {}

    def _key(self, stream: str) -> str:
        return f"{self.kind}.{stream}"

    async def _bucket(self) -> KeyValue:
        if self._kv is None:
            self._kv = await checkpoints_bucket(self.js, self.replicas)
        return self._kv

    async def read(self, stream: str) -> Checkpoint:
        """The stream's checkpoint (an empty one at 0 if none was written); writes after this
        are fenced against it."""
        kv = await self._bucket()
        try:
            entry = await kv.get(self._key(stream))
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
            self._revisions[stream] = 0
            return Checkpoint()
        self._revisions[stream] = entry.revision or 0
        return _decode(entry.value or b"{}")

    async def write(self, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` of its stream, unless another member wrote since this one read
        (:class:`Fenced`)."""
        kv = await self._bucket()
        stream = checkpoint.stream
        try:
            self._revisions[stream] = await kv.update(
                self._key(stream), _encode(checkpoint), last=self._revisions.get(stream, 0)
            )
        except nats.js.errors.KeyWrongLastSequenceError:
            raise Fenced(
                f"the {self.kind} checkpoint of {stream} was written by another member"
            ) from None
