"""Which games of a partition may be on the clock, found without reading its history: for a
partition no checkpoint describes (the first start, a restored or reset stream).

JetStream keeps each subject's last message at hand: one consumer delivering the last message
of each game (``DeliverPolicy.LAST_PER_SUBJECT``) costs one message a game, where reading the
history costs every commit of every game ever played. A game whose last commit ends it is
over; the others are looked at by their first commit (is there a clock?), and only the clocked
ones are read and folded, as a checkpoint's games are.
"""

from __future__ import annotations

import nats.errors
from nats.js import JetStreamContext, api

from domain.events import GameCreated
from services.runtime.follower import Partition
from services.runtime.game_stream import StoredCommit

FETCH = 1024
FETCH_TIMEOUT_S = 5.0
INACTIVE_S = 5.0
"""The survey's consumer is gone this long after its last fetch (it never leaves one behind)."""
_ENDED = b'"game_ended"'
"""In the bytes of every commit that ends a game (and of no other: names are escaped)."""


async def unended_games(js: JetStreamContext, partition: Partition) -> list[str]:
    """The games of ``partition`` whose last commit does not end them, in the order of their
    last commits. (A game refused a command after its end is among them: read, it is seen to
    be over.)"""
    config = api.ConsumerConfig(
        deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT,
        ack_policy=api.AckPolicy.NONE,
        mem_storage=True,
        inactive_threshold=INACTIVE_S,
        num_replicas=1,
    )
    subscription = await js.pull_subscribe(
        partition.subjects, stream=partition.stream, config=config
    )
    games: list[str] = []
    try:
        while True:
            try:
                messages = await subscription.fetch(FETCH, timeout=FETCH_TIMEOUT_S)
            except (TimeoutError, nats.errors.TimeoutError):
                return games  # an empty stream
            for message in messages:
                if _ENDED not in message.data:
                    subject = message.subject
                    games.append(subject[subject.rfind(".") + 1 :])
            if messages[-1].metadata.num_pending == 0:
                return games
    finally:
        await subscription.unsubscribe()


def clocked(first: StoredCommit) -> bool:
    """Whether a game's first commit creates it with a clock."""
    events = first.commit.events
    created = events[0] if events else None
    return isinstance(created, GameCreated) and created.clock is not None
