"""Which stream a read model's position belongs to, and when the stream found must not be
followed.

A position is a stream sequence, and a sequence means something only in the stream that gave
it. Each model's position row records that stream: its name and its creation time, as the server
reports it in ``StreamInfo.created``, and the SHA-256 of the message at the position.

Why the creation time rather than a hash of the stream's first message: the server sets it once,
when the stream is made, and keeps it across restarts, configuration updates and leader changes
(every replica reports the one the meta leader assigned), while a stream made anew gets a new
one, whatever it holds. A stream reset, another deployment's stream and a stream restored from a
backup are all new streams, never trusted on the strength of similar contents: a rebuild is
always right, where a matching first message would not show that the rest matches. It also
exists before the first message does, and comes with the ``stream_info`` the workers and
``/readyz`` ask for anyway.

The creation time cannot tell a stream whose history changed under it and grew back. So a
position beyond the stream's last sequence is refused too (the stream was rewound), and so is a
position whose message is not the one applied there.

A worker that refuses the stream stops: it applies nothing, skips nothing, records why in its
position row (``/readyz`` reports it) and says in its log what fixes it: a rebuild from the
stream (:data:`REBUILD_COMMAND`), or :data:`AUTO_REBUILD_VARIABLE` set to 1 to let the workers
rebuild by themselves.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC

from nats.js import api

REBUILD_COMMAND = "spades projections rebuild --all"
"""What brings read models that refuse their stream back from the stream."""
AUTO_REBUILD_VARIABLE = "SPADES_PROJECTIONS_AUTO_REBUILD"
"""The setting that lets the workers rebuild by themselves instead."""


@dataclass(frozen=True, slots=True)
class StreamIdentity:
    """A stream as positions know it: its name and when the server made it."""

    name: str
    created: str
    """ISO 8601, UTC, to the microsecond (as far as the client reads the server's time)."""

    @classmethod
    def of(cls, info: api.StreamInfo) -> StreamIdentity:
        if info.created is None:
            raise ValueError(f"the server reports no creation time of stream {info.config.name}")
        created = info.created.astimezone(UTC).isoformat(timespec="microseconds")
        return cls(str(info.config.name), created)

    def __str__(self) -> str:
        return f"{self.name} (created {self.created})"


def message_digest(data: bytes) -> str:
    """What a position row keeps of the message at its position."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Followed:
    """What a model's position row says of the stream it follows."""

    position: int
    stream: StreamIdentity | None
    """None when the position was stored before streams were recorded, or nothing is applied."""
    digest: str | None


def refusal(
    followed: Followed,
    found: StreamIdentity,
    last_sequence: int,
    digest_at_position: str | None = None,
) -> str | None:
    """Why a model that stands at ``followed`` must not follow the stream ``found`` (whose last
    sequence is ``last_sequence``), or None when it may. ``digest_at_position`` is the digest of
    the message the stream holds at the position, when the caller read it.

    A model that has applied nothing may follow any stream.
    """
    if followed.position == 0:
        return None
    if followed.stream is not None and followed.stream != found:
        return (
            f"positions up to {followed.position} belong to stream {followed.stream}, "
            f"not to {found}"
        )
    if followed.position > last_sequence:
        return (
            f"position {followed.position} is beyond the last message of stream {found.name}, "
            f"{last_sequence}: the stream was rewound"
        )
    if (
        followed.digest is not None
        and digest_at_position is not None
        and followed.digest != digest_at_position
    ):
        return (
            f"the message at position {followed.position} of stream {found.name} is not the "
            "one applied there: the stream was rewound and written again"
        )
    return None
