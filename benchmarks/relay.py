"""The floor of the command path: a relay that does on NATS what an engine does, and nothing else.

An engine answers a command by appending a commit to the game's subject with optimistic
concurrency and replying once the append is acknowledged: a request in, an append out, its
acknowledgement in, a reply out. The relay does exactly that for every request it gets on
``spades.relay-bench.requests.<table>``: it appends a commit-sized message to its table's subject
of a file stream, with the engine's headers (the subject's expected last sequence, a message id for
deduplication, the expected stream), through the engine's own request path
(:class:`services.runtime.replies.Replies`), and replies with the acknowledged sequence. It reads
nothing, decides nothing and watches nothing.

``spades bench commands`` runs it in its own process on the engine's event loop (uvloop), as it
runs the engine, and drives it with the same concurrency: what the relay reaches is what any
engine built this way could reach on this machine, before a single rule is checked. Run as
``python -m benchmarks.relay URL [CREDENTIALS]``; it prints ``ready`` once it listens.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import msgspec
import nats
from nats.aio.msg import Msg
from nats.js import api

from services.runtime import loop
from services.runtime.credentials import connect_options
from services.runtime.replies import Replies

STREAM = "SPADES_BENCH_RELAY"
STORED = "spades.relay-bench.commits"
REQUESTS = "spades.relay-bench.requests"
REPLY_BYTES = 256
"""About an accepted action's reply: its version, sequence and the acting seat's events."""


def request_subject(table: int) -> str:
    return f"{REQUESTS}.{table}"


def stream_config() -> api.StreamConfig:
    """A file stream like the game stream, deduplicating by message id."""
    return api.StreamConfig(
        name=STREAM,
        subjects=[f"{STORED}.>"],
        storage=api.StorageType.FILE,
        duplicate_window=120,
    )


class _Ack(msgspec.Struct):
    seq: int = 0
    error: dict[str, object] | None = None


_ack = msgspec.json.Decoder(_Ack)


async def serve(url: str, credentials: Path | None, commit_bytes: int) -> None:
    connection = await nats.connect(url, **connect_options(credentials))
    replies = Replies(connection)
    commit = os.urandom(commit_bytes)
    answer = os.urandom(REPLY_BYTES)
    last: dict[str, int] = {}
    appended = 0
    tasks: set[asyncio.Task[None]] = set()

    async def relay(message: Msg) -> None:
        nonlocal appended
        table = message.subject.rpartition(".")[2]
        subject = f"{STORED}.{table}"
        appended += 1
        headers = {
            api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(last.get(subject, 0)),
            api.Header.MSG_ID.value: f"{table}:{appended}",
            api.Header.EXPECTED_STREAM.value: STREAM,
        }
        reply = await replies.request(subject, commit, timeout_s=10.0, headers=headers)
        ack = _ack.decode(reply.data)
        if ack.error is None:
            last[subject] = ack.seq
        await connection.publish(message.reply, b"%d:" % ack.seq + answer)

    async def dispatch(message: Msg) -> None:  # each request a task, as the engine does
        task = asyncio.create_task(relay(message))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    await connection.subscribe(f"{REQUESTS}.*", queue="relay", cb=dispatch)
    await connection.flush()
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    path = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    loop.run(serve(sys.argv[1], path, int(sys.argv[2])))  # the engine's loop
