"""Event stores: one stream, one subject per aggregate, one message per commit.

:class:`EventStore` is what every user of a history relies on (the command handlers, the caches,
the gateway's reads, the webhooks' folds); :class:`JetStreamEventStore` keeps it on JetStream
and :class:`services.runtime.memory_store.MemoryEventStore` in memory, for fast tests of what is
built on it. Both pass one contract suite (``tests/integration/test_event_store_contract.py``).
Games and leagues are both kept this way (:mod:`services.runtime.game_stream`,
:mod:`services.runtime.league_stream`).

On JetStream, appends use optimistic concurrency
(``Nats-Expected-Last-Subject-Sequence``, the *stream* sequence of the subject's last message,
0 for none), deduplication (``Nats-Msg-Id``, the command id, within the stream's duplicate
window) and the stream's identity (``Nats-Expected-Stream``), each a request answered by the
stream's acknowledgement (:mod:`services.runtime.replies`). Reads replay one subject from a
sequence on: a few commits with gets of the subject's next message, a long history with a
short-lived, in-memory pull consumer.

A get is JetStream's direct get (``$JS.API.DIRECT.GET``) where that is exact: a stream of one
replica, which allows it, answers from its only copy, which holds every acknowledged commit.
With replicas any of them may answer, possibly behind its leader, so those streams do not allow
it and their gets are the leader's ``STREAM.MSG.GET``, as are all gets until the stream is known
(:meth:`JetStreamEventStore._reads_directly`). On one server, the direct get of a view's usual
question ("anything after?") costs the server about a third of the CPU of the other.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import msgspec
import nats.errors
import nats.js.errors
from nats.js import JetStreamContext, api

from services.runtime.replies import Replies

WRONG_LAST_SEQUENCE = 10071
"""JetStream's API error code for a failed ``Nats-Expected-Last-Subject-Sequence`` check."""
NO_MESSAGE_FOUND = 10037
"""JetStream's API error code for a "get a message" that names no stored message."""
NOT_FOUND = "404"
"""The status of a direct get's answer that names no stored message."""
SEQUENCE_HEADER = "Nats-Sequence"
"""The header of a direct get's answer that gives the message's stream sequence."""

FETCH_BATCH = 512
DIRECT_READS = 24
"""Commits read one request each before a read switches to a consumer."""
INACTIVE_CONSUMER_S = 2.0
"""A read's consumer is gone this long after its last fetch, so reads leave none behind."""
STREAM_CHECK_S = 30.0
"""How often a store looks again at whether its stream allows exact direct gets (a stream's
replicas may be changed while it runs)."""
APPEND_TIMEOUT_S = 5.0
"""How long an append waits for its acknowledgement (nats-py's JetStream default)."""

C = TypeVar("C")
"""The commit type of a stream."""


class AppendConflict(Exception):
    """Another commit reached the subject first: reload and decide again."""


class DuplicateCommand(Exception):
    """JetStream already holds a commit with this command id (within its duplicate window)."""

    def __init__(self, sequence: int) -> None:
        super().__init__(f"duplicate of stream sequence {sequence}")
        self.sequence = sequence


@dataclass(frozen=True)  # no slots: ``Stored[Commit](...)`` must be able to try its note
class Stored(Generic[C]):
    """A commit as stored: its stream sequence, its exact bytes and its decoded form."""

    sequence: int
    data: bytes
    commit: C

    @property
    def digest(self) -> str:
        """SHA-256 of the stored bytes: what the next commit names as ``previous``."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True, slots=True)
class History(Generic[C]):
    """One kind of aggregate's history, wherever it is kept: the stream's name, each
    aggregate's subject in it, and how its commits are read. Games and leagues differ only by
    this (:data:`services.runtime.game_stream.GAMES`,
    :data:`services.runtime.league_stream.LEAGUES`)."""

    stream: str
    subject_of: Callable[[str], str]
    decode: Callable[[bytes], C]


class EventStore(Protocol[C]):
    """The histories of one kind of aggregate: one subject per aggregate (its key), one commit
    per message, each at a sequence of the whole stream (ascending, never reused).

    - :meth:`append` stores a commit only if the subject's last commit is still ``expected``
      (0: it has none), else raises :class:`AppendConflict`; then a ``command_id`` already
      stored anywhere in the stream raises :class:`DuplicateCommand` with the first one's
      sequence (so a retry from a stale position is a conflict: reload, and find the answer).
    - :meth:`read` returns a subject's commits above ``after`` in order (at most ``limit``, none
      past ``until``); :meth:`read_one` one of its commits, by its sequence.
    """

    @property
    def name(self) -> str:
        """The stream's name."""
        ...

    def subject(self, key: str) -> str:
        """The subject of an aggregate's commits."""
        ...

    def key_of(self, subject: str) -> str | None:
        """The aggregate a subject belongs to (None: not a subject of this stream)."""
        ...

    def stored(self, sequence: int, data: bytes) -> Stored[C]:
        """A message of this stream, decoded."""
        ...

    async def last_sequence(self, key: str) -> int:
        """The sequence of the subject's last commit, 0 when it has none."""
        ...

    async def read(
        self, key: str, after: int = 0, *, limit: int | None = None, until: int | None = None
    ) -> list[Stored[C]]: ...

    async def read_one(self, key: str, sequence: int) -> Stored[C]: ...

    async def append(self, key: str, data: bytes, *, expected: int, command_id: str) -> int:
        """Store one commit; its sequence."""
        ...


def history_stream_config(
    name: str, subjects: str, replicas: int = 1, duplicate_window_s: float = 120.0
) -> api.StreamConfig:
    """A stream of histories: file storage, kept forever (no limits: a history is its truth),
    no per-subject limit, and neither deletes nor purges, so an acknowledged commit cannot be
    taken back through the API. ``duplicate_window`` bounds ``Nats-Msg-Id`` deduplication;
    command ids are also kept in each history, so a retry after the window still finds its
    first answer."""
    return api.StreamConfig(
        name=name,
        subjects=[subjects],
        storage=api.StorageType.FILE,
        retention=api.RetentionPolicy.LIMITS,
        discard=api.DiscardPolicy.OLD,
        num_replicas=replicas,
        duplicate_window=duplicate_window_s,
        deny_delete=True,
        deny_purge=True,
        # Direct gets answered by its only copy are exact; a replica's answer may lag behind.
        allow_direct=replicas == 1,
        max_msg_size=1024 * 1024,
    )


class PubAck(msgspec.Struct):
    """JetStream's answer to a publish: the stream sequence it stored it at (and whether it
    was a duplicate of an earlier one), or its error."""

    seq: int = 0
    duplicate: bool = False
    error: dict[str, Any] | None = None


_pub_ack = msgspec.json.Decoder(PubAck)


class _Message(msgspec.Struct):
    """A message as JetStream's "get a message" answers it (its data in base64, which msgspec
    reads as bytes); its headers are not read."""

    seq: int
    data: bytes = b""


class _MessageGot(msgspec.Struct):
    """JetStream's answer to "get a message": the message, or its error."""

    message: _Message | None = None
    error: dict[str, Any] | None = None


_message_got = msgspec.json.Decoder(_MessageGot)
_encode = msgspec.json.encode


def stream_sequence(reply: str) -> int:
    """The stream sequence of a JetStream message, read from its acknowledgement subject.

    ``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>``,
    or with a domain and an account hash after ``$JS.ACK`` (ADR-15). Cheaper than
    ``msg.metadata``, which parses every field.
    """
    tokens = reply.split(".")
    return int(tokens[5] if len(tokens) == 9 else tokens[7])


def _no_message() -> nats.js.errors.NotFoundError:
    """What nats-py raises for a "get a message" that finds none."""
    return nats.js.errors.NotFoundError(
        code=404, err_code=NO_MESSAGE_FOUND, description="no message found"
    )


class JetStreamEventStore(Generic[C]):
    """An :class:`EventStore` on a JetStream stream."""

    def __init__(self, js: JetStreamContext, history: History[C], stream: str = "") -> None:
        self._js = js
        self._replies = Replies(js._nc)  # the context's own connection
        self._stream = stream or history.stream
        self._subject_of = history.subject_of
        self._decode = history.decode
        self._prefix = history.subject_of("")
        self._get_subject = f"{js._prefix}.STREAM.MSG.GET.{self._stream}"
        self._direct_get_subject = f"{js._prefix}.DIRECT.GET.{self._stream}"
        self._api_timeout_s: float = js._timeout
        self._direct = False
        """Whether the stream, when last looked at, answered exact direct gets."""
        self._checked_at = float("-inf")

    @property
    def name(self) -> str:
        return self._stream

    @property
    def subjects(self) -> str:
        """Every aggregate's subject, as one wildcard."""
        return f"{self._prefix}>"

    def subject(self, key: str) -> str:
        """The subject of ``key``'s commits in this stream."""
        return self._subject_of(key)

    def key_of(self, subject: str) -> str | None:
        """The aggregate a subject of this stream belongs to."""
        return subject[len(self._prefix) :] if subject.startswith(self._prefix) else None

    def stored(self, sequence: int, data: bytes) -> Stored[C]:
        """A message of this stream, decoded."""
        return Stored(sequence, data, self._decode(data))

    async def last_sequence(self, key: str) -> int:
        """The stream sequence of the subject's last commit, 0 when it has none."""
        try:
            message = await self._get(b'{"last_by_subj":%s}' % _encode(self._subject_of(key)))
        except nats.js.errors.NotFoundError:
            return 0
        return message.seq

    async def first_sequence(self, key: str) -> int:
        """The stream sequence of the first commit of the subject the stream still holds, 0
        when it holds none (an archived game's first is its last commit at the archiving)."""
        stored = await self._next(_encode(self._subject_of(key)), 1)
        return 0 if stored is None else stored.sequence

    async def last(self, key: str) -> Stored[C] | None:
        """The subject's last commit, None when it has none."""
        message = await self._find(b'{"last_by_subj":%s}' % _encode(self._subject_of(key)))
        return None if message is None else self.stored(message.seq, message.data)

    async def _next(self, subject: bytes, cursor: int) -> Stored[C] | None:
        """The subject's first commit at or after stream sequence ``cursor``, None when it has
        none (``subject`` JSON-encoded)."""
        message = await self._find(b'{"seq":%d,"next_by_subj":%s}' % (cursor, subject))
        return None if message is None else self.stored(message.seq, message.data)

    async def _get(self, request: bytes) -> _Message:
        """:meth:`_find`'s message; :class:`nats.js.errors.NotFoundError` when there is none."""
        message = await self._find(request)
        if message is None:
            raise _no_message()
        return message

    async def _find(self, request: bytes) -> _Message | None:
        """JetStream's "get a message" (``request`` as ``js.get_msg`` asks it), asked through
        the connection's reply inbox: nats-py's made an inbox, a JSON request and a header parse
        each time. None for "no message found" (a view's usual answer: nothing was appended
        since), any other error raised as nats-py does. A direct get where the stream allows an
        exact one; any answer of it but a message or "not found" is asked again of the leader,
        whose answer says what is wrong."""
        if await self._reads_directly():
            try:
                reply = await self._replies.request(
                    self._direct_get_subject, request, timeout_s=self._api_timeout_s
                )
            except nats.errors.NoRespondersError:  # direct gets were turned off since
                self._direct = False
            else:
                headers = reply.headers or {}
                status, sequence = headers.get(api.Header.STATUS), headers.get(SEQUENCE_HEADER)
                if status is None and sequence is not None and sequence.isdigit():
                    return _Message(int(sequence), reply.data)
                if status == NOT_FOUND:
                    return None
        try:
            answer = await self._replies.request(
                self._get_subject, request, timeout_s=self._api_timeout_s
            )
        except nats.errors.NoRespondersError:
            raise nats.js.errors.ServiceUnavailableError from None
        got = _message_got.decode(answer.data)
        if got.error is not None:
            if got.error.get("err_code") == NO_MESSAGE_FOUND:
                return None
            nats.js.errors.APIError.from_error(got.error)  # raises the error's own class
        if got.message is None:
            raise nats.js.errors.APIError(description="no message in the answer")
        return got.message

    async def _reads_directly(self) -> bool:
        """Whether gets may be direct: the stream (looked at every :data:`STREAM_CHECK_S`) has
        one replica and allows them. Until the stream can be looked at, they may not."""
        now = time.monotonic()
        if now - self._checked_at >= STREAM_CHECK_S:
            self._checked_at = now
            try:
                info = await self._js.stream_info(self._stream)
            except (nats.errors.Error, nats.js.errors.Error):
                self._direct = False
            else:
                config = info.config
                self._direct = bool(config.allow_direct) and config.num_replicas == 1
        return self._direct

    async def read(
        self, key: str, after: int = 0, *, limit: int | None = None, until: int | None = None
    ) -> list[Stored[C]]:
        """The commits of ``key`` with a stream sequence above ``after``, in order; with
        ``limit``, the first ``limit`` of them; with ``until`` (the sequence of one of its
        commits), none past it, and no question to the server of where the history ends."""
        if until is None and limit is None:
            return await self._read_to_end(key, after)
        last = until if until is not None else await self.last_sequence(key)
        if last <= after:
            return []
        wanted = limit if limit is not None else last
        commits: list[Stored[C]] = []
        cursor = after + 1
        subject = _encode(self._subject_of(key))
        for _ in range(DIRECT_READS):
            stored = await self._next(subject, cursor)
            if stored is None:
                raise _no_message()
            commits.append(stored)
            if stored.sequence >= last or len(commits) >= wanted:
                return commits
            cursor = stored.sequence + 1
        commits.extend(await self._consume(key, cursor, last, wanted - len(commits)))
        return commits

    async def _read_to_end(self, key: str, after: int) -> list[Stored[C]]:
        """Every commit of ``key`` above ``after``. The next one is asked for directly, until
        the server has none: a history already read through costs one short "no message"
        answer, where asking first where it ends cost a whole message (and, with a commit to
        read, a second request)."""
        commits: list[Stored[C]] = []
        cursor = after + 1
        subject = _encode(self._subject_of(key))
        for _ in range(DIRECT_READS):
            try:
                stored = await self._next(subject, cursor)
            except nats.js.errors.NotFoundError:  # the stream itself, say
                return commits
            if stored is None:
                return commits
            commits.append(stored)
            cursor = stored.sequence + 1
        last = await self.last_sequence(key)  # a long history: a consumer reads the rest
        if last >= cursor:
            commits.extend(await self._consume(key, cursor, last, last))
        return commits

    async def _consume(self, key: str, start: int, last: int, wanted: int) -> list[Stored[C]]:
        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
            ack_policy=api.AckPolicy.NONE,
            mem_storage=True,
            inactive_threshold=INACTIVE_CONSUMER_S,
            num_replicas=1,
        )
        subscription = await self._js.pull_subscribe(
            self._subject_of(key), stream=self._stream, config=config
        )
        commits: list[Stored[C]] = []
        try:
            while len(commits) < wanted and (not commits or commits[-1].sequence < last):
                batch = min(FETCH_BATCH, wanted - len(commits))
                for message in await subscription.fetch(batch, timeout=5.0):
                    commits.append(self.stored(message.metadata.sequence.stream, message.data))
        finally:
            await subscription.unsubscribe()
        return commits[:wanted]

    async def read_one(self, key: str, sequence: int) -> Stored[C]:
        """The commit of ``key`` at one stream sequence (the key names no stream here: each
        aggregate kind has one)."""
        message = await self._get(b'{"seq":%d}' % sequence)
        return self.stored(sequence, message.data)

    async def append(self, key: str, data: bytes, *, expected: int, command_id: str) -> int:
        """Append one commit if the subject's last commit is still ``expected``; return its
        sequence. Raises :class:`AppendConflict` or :class:`DuplicateCommand`."""
        headers = {
            api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(expected),
            api.Header.MSG_ID.value: command_id,
            api.Header.EXPECTED_STREAM.value: self._stream,
        }
        try:
            reply = await self._replies.request(
                self._subject_of(key), data, timeout_s=APPEND_TIMEOUT_S, headers=headers
            )
        except nats.errors.NoRespondersError:
            raise nats.js.errors.NoStreamResponseError from None
        ack = _pub_ack.decode(reply.data)
        if ack.error is not None:
            if ack.error.get("err_code") == WRONG_LAST_SEQUENCE:
                raise AppendConflict(ack.error.get("description", ""))
            nats.js.errors.APIError.from_error(ack.error)  # raises the error's own class
        if ack.duplicate:
            raise DuplicateCommand(ack.seq)
        return ack.seq
