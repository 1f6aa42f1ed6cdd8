"""One contract for every handler of the shared follower (:mod:`services.runtime.follower`), as
``eventsourcing`` runs one suite on every recorder: the projections, the webhooks' ingests (the
games, and the leagues), the engines' round watch and the timers each run the same tests, on a
real nats-server, with the stores they keep their positions in (``follower_handlers.py`` says
how each is made, and what its effects and its stored position are).

Each handler, as processes that hold its partition run it (``Following``, as claims start and
stop it):

- follows the stream once and in order, and a new process resumes at the stored position;
- skips a batch delivered again (acknowledged after ``ack_wait``: as after a crash before the
  acknowledgement);
- waits out store trouble (``transient``) batch by batch, without opening the stream again
  and without losing a message;
- never follows a stream its position does not belong to (another stream of the name, or a
  position beyond the stream's end) from that position: it refuses it, replays it from its
  start or surveys it, as its kind does;
- takes a position that a former holder moved beyond the end the follower read before it for
  what it is, not for a rewound stream;
- follows past what archiving purged from a games' partition, as past nothing;
- while two processes hold the partition at once, applies only what follows its position: a
  batch after a gap (the other holder was delivered what comes before) is not applied.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import ClassVar

import pytest
from nats.aio.client import Client

from services.runtime.follower import Following, Handler, Message, Opened, Pace

pytest.register_assert_rewrite("tests.integration.follower_handlers")
from tests.integration.follower_handlers import (  # noqa: E402
    GAMES,
    Games,
    Harness,
    LeagueWebhooksHarness,
    ProjectionsHarness,
    RoundWatchHarness,
    TimersHarness,
    Trouble,
    WebhooksHarness,
    migrate_once,
)

pytestmark = pytest.mark.integration

PACE = Pace(batch_size=100, idle_s=0.1, gather_s=0.0, ack_wait_s=30.0)
"""Quick to find the stream idle: the round watch and the timers store their positions then."""
ACK_WAIT_S = 0.2
WAIT_S = 10.0

Hook = Callable[[list[int]], Awaitable[None]]


class Watched:
    """A handler as the suite watches it: where each opening of the stream put it, and the
    sequences of each batch it was handed; with hooks that run before it opens (once), before
    it applies a batch, and after."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.openings: list[int | None] = []
        self.batches: list[list[int]] = []
        self.before_open: Callable[[Opened], Awaitable[None]] | None = None
        self.before_apply: Hook | None = None
        self.after_apply: Hook | None = None

    @property
    def kind(self) -> str:
        return self.handler.kind

    async def open(self, opened: Opened) -> int | None:
        hook, self.before_open = self.before_open, None
        if hook is not None:
            await hook(opened)
        at = await self.handler.open(opened)
        self.openings.append(at)
        return at

    async def apply(self, opened: Opened, batch: Sequence[Message]) -> bool:
        sequences = [message.sequence for message in batch]
        self.batches.append(sequences)
        if self.before_apply is not None:
            await self.before_apply(sequences)
        try:
            return await self.handler.apply(opened, batch)
        finally:
            if self.after_apply is not None:
                await self.after_apply(sequences)

    async def idle(self, opened: Opened) -> bool:
        return await self.handler.idle(opened)

    def transient(self, error: BaseException) -> bool:
        return self.handler.transient(error)

    @property
    def given(self) -> list[int]:
        """Every sequence handed to the handler, batch after batch."""
        return [sequence for batch in self.batches for sequence in batch]


class Life:
    """One process's hold of the partition: a handler of its own on a follower, started and
    stopped through :class:`Following` as claims start and stop it."""

    def __init__(self, harness: Harness, handler: Handler, pace: Pace = PACE) -> None:
        self.harness = harness
        self.watched = Watched(handler)
        self.following = Following(harness.client, self.watched, [harness.partition], pace)
        self.stopped = False

    async def start(self) -> Watched:
        await self.following.gain(0)
        return self.watched

    async def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            await self.following.stop()
            await self.harness.close(self.watched.handler)

    async def __aenter__(self) -> Watched:
        return await self.start()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()


async def until(done: Callable[[], Awaitable[bool]], what: str) -> None:
    """Return once ``done()`` holds: a handler's progress, which it signals to no one."""
    try:
        async with asyncio.timeout(WAIT_S):
            while not await done():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"not within {WAIT_S} s: {what}") from None


def stored_at(harness: Harness, position: int) -> Callable[[], Awaitable[bool]]:
    async def done() -> bool:
        return await harness.position() == position

    return done


def opened(watched: Watched, times: int = 1) -> Callable[[], Awaitable[bool]]:
    async def done() -> bool:
        return len(watched.openings) >= times

    return done


def named(prefix: str, count: int) -> list[str]:
    """Names for the messages to append (game ids, league ids), in the order appended."""
    return [f"{prefix}{number:02d}" for number in range(count)]


async def follow(harness: Harness, names: Sequence[str]) -> int:
    """A process that holds the partition until it has applied ``names`` (appended now) and
    stored its position at the stream's end; that end."""
    async with Life(harness, harness.handler()):
        await harness.prepare(names)
        await harness.append(names)
        last = await harness.last()
        await until(stored_at(harness, last), f"stored at {last}")
    return last


@pytest.fixture(scope="session")
def read_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A read-model database migrated once, which each test copies."""
    path = tmp_path_factory.mktemp("contract") / "read_models.db"
    return asyncio.run(migrate_once(path))


class FollowerContract:
    """What every handler of the follower does; a subclass names the harness of one."""

    harness_class: ClassVar[type[Harness]]

    @pytest.fixture
    async def harness(
        self, nats_client: Client, tmp_path: Path, read_models: Path
    ) -> AsyncIterator[Harness]:
        harness = self.harness_class(nats_client, tmp_path, read_models)
        await harness.setup()
        yield harness
        await harness.teardown()

    async def test_every_message_is_applied_once_and_in_order(self, harness: Harness) -> None:
        names = named("a", 6)
        async with Life(harness, harness.handler()) as watched:
            await harness.prepare(names)
            last = (await harness.append(names))[-1]
            await until(stored_at(harness, last), f"stored at {last}")

        # One opening, at the start: from nothing stored (None or 0), or from the first message
        # when the timers' harness stored its position before a loaded machine opened the stream
        # (2 of 3 full runs here). What matters is each message's effect, once and in order.
        assert watched.openings in ([None], [0], [1]), watched.openings
        assert await harness.effects() == names

    async def test_a_new_holder_resumes_at_the_stored_position(self, harness: Harness) -> None:
        first, then = named("a", 4), named("b", 4)
        end = await follow(harness, first)
        await harness.prepare(then)
        last = (await harness.append(then))[-1]

        async with Life(harness, harness.handler()) as watched:
            await until(stored_at(harness, last), f"stored at {last}")

        assert watched.openings == [end]
        assert await harness.effects() == first + then

    async def test_a_batch_delivered_again_is_skipped(self, harness: Harness) -> None:
        """The first batch is acknowledged after ``ack_wait``, and the rest is appended
        meanwhile: the server delivers the first again, and the rest twice (to the pull still
        open), as it does after a crash between a commit and its acknowledgement. The next
        batch holds the rest and copies of everything."""
        first, rest = named("a", 1), named("b", 4)
        pace = Pace(batch_size=100, idle_s=10 * ACK_WAIT_S, gather_s=0.0, ack_wait_s=ACK_WAIT_S)
        async with Life(harness, harness.handler(every_batch=True), pace) as watched:
            await harness.prepare(first + rest)
            await until(stored_at(harness, await harness.last()), "the preparations stored")

            appended: list[int] = []
            rest_appended = asyncio.Event()

            async def slowly(sequences: list[int]) -> None:
                watched.after_apply = None
                appended.extend(await harness.append(rest))
                rest_appended.set()
                await asyncio.sleep(4 * ACK_WAIT_S)

            watched.after_apply = slowly
            await harness.append(first)
            await asyncio.wait_for(rest_appended.wait(), WAIT_S)
            await until(stored_at(harness, appended[-1]), f"stored at {appended[-1]}")

        assert len(watched.given) > len(set(watched.given)), "delivered again"
        assert await harness.effects() == first + rest

    async def test_store_trouble_is_waited_out_batch_by_batch(self, harness: Harness) -> None:
        names = named("a", 5)
        trouble = Trouble(times=2)
        async with Life(harness, harness.handler(trouble)) as watched:
            await harness.prepare(names)
            await until(stored_at(harness, await harness.last()), "the preparations stored")
            trouble.armed = True
            last = (await harness.append(names))[-1]
            await until(stored_at(harness, last), f"stored at {last}")

        assert trouble.met == 2
        assert len(watched.openings) == 1, "the batch was tried again, the stream not reopened"
        assert await harness.effects() == names

    async def test_another_stream_of_the_name_is_not_followed_from_the_position(
        self, harness: Harness
    ) -> None:
        """The stream is deleted and made again (a reset of NATS, a restore), with a history
        of its own, before the handler opens it."""
        first, history, later = named("a", 3), named("b", 3), named("c", 3)
        await follow(harness, first)
        before = await harness.position()
        await harness.replace_stream()
        await harness.prepare(history)
        await harness.append(history)
        end = await harness.last()

        async with Life(harness, harness.handler()) as watched:
            await until(opened(watched), "opened")
            await harness.prepare(later)
            last = (await harness.append(later))[-1]
            await self._settled(harness, watched, last)

        made = [name for name in await harness.effects() if name in history + later]
        if harness.on_another_stream == "refuses":
            assert set(watched.openings) == {None}
            assert made == []
            assert await harness.position() == before
            assert "belong to stream" in (await harness.refusal() or "")
            return
        assert watched.openings == [0 if harness.on_another_stream == "replays" else end]
        assert made == history + later

    async def test_a_position_beyond_the_stream_s_end_is_not_followed_from(
        self, harness: Harness
    ) -> None:
        """The stored position is past the stream's last message, as if the stream had been
        rewound under it."""
        first, later = named("a", 3), named("c", 3)
        end = await follow(harness, first)
        await harness.place(end + 5)

        async with Life(harness, harness.handler()) as watched:
            await until(opened(watched), "opened")
            await harness.prepare(later)
            last = (await harness.append(later))[-1]
            await self._settled(harness, watched, last)

        made = [name for name in await harness.effects() if name in later]
        if harness.on_another_stream == "refuses":
            assert set(watched.openings) == {None}
            assert made == []
            assert await harness.position() == end + 5
            assert "rewound" in (await harness.refusal() or "")
            return
        assert watched.openings == [0 if harness.on_another_stream == "replays" else end]
        assert made == later

    async def _settled(self, harness: Harness, watched: Watched, last: int) -> None:
        """Until the handler follows on to ``last``, or, refusing, has looked at the stream
        again since ``last`` was appended."""
        if harness.on_another_stream == "refuses":
            seen = len(watched.openings)
            await until(opened(watched, seen + 2), "looked at again")
        else:
            await until(stored_at(harness, last), f"stored at {last}")

    async def test_a_position_moved_past_the_end_read_before_it_is_followed_on(
        self, harness: Harness
    ) -> None:
        """The follower reads the stream's end, then the handler its position: a former
        holder of the partition, still following it in between, stored a position past that
        end. It stands in the stream; the stream was not rewound."""
        first, moved, later = named("a", 3), named("b", 3), named("c", 3)
        former = Life(harness, harness.handler())
        await former.start()
        ends: list[int] = []
        try:
            await harness.prepare(first)
            end = (await harness.append(first))[-1]
            await until(stored_at(harness, end), f"stored at {end}")

            async def meanwhile(opened: Opened) -> None:
                await harness.prepare(moved)
                ends.append((await harness.append(moved))[-1])
                await until(stored_at(harness, ends[0]), f"the former holder at {ends[0]}")
                await former.stop()

            async with Life(harness, harness.handler()) as watched:
                watched.before_open = meanwhile
                await until(opened(watched), "opened")
                await harness.prepare(later)
                last = (await harness.append(later))[-1]
                await until(stored_at(harness, last), f"stored at {last}")
        finally:
            await former.stop()

        assert watched.openings == ends
        assert await harness.effects() == first + moved + later

    async def test_what_archiving_purged_from_the_stream_is_no_gap(self, harness: Harness) -> None:
        """Finished games archived between the handler's messages leave sequences the stream
        no longer holds: a new holder follows past them, as past nothing, without opening the
        stream again (it is not what another holder was delivered)."""
        if harness.partition != GAMES:
            pytest.skip("only the games' partitions are archived (purged)")
        first, then = named("a", 2), named("b", 4)
        end = await follow(harness, first)
        await harness.prepare(then)
        archived = Games(harness.client)
        last = 0
        for name in then:
            await archived.create(f"archived-{name}")
            last = (await harness.append([name]))[-1]
        for game_id in archived.sequences:
            subject = archived.stream.subject(game_id)
            await harness.js.purge_stream(harness.partition.stream, subject=subject)

        async with Life(harness, harness.handler()) as watched:
            await until(stored_at(harness, last), f"stored at {last}")

        assert watched.openings == [end]
        assert await harness.effects() == first + then

    async def test_two_holders_apply_only_what_follows_their_position(
        self, harness: Harness
    ) -> None:
        """Two processes hold the partition at once (a lease handed over), on its one consumer:
        the server shares the messages between their pulls. The one that pulled first is
        delivered the first message and applies it last; the other's first batch comes after
        a gap, and must not be applied past it. Then both give the partition up, and a third
        process follows it on from where they left it."""
        first, names = named("a", 1), named("b", 6)
        await harness.prepare(names)
        start = await follow(harness, first)
        pace = Pace(batch_size=3, idle_s=5.0, gather_s=0.0, ack_wait_s=30.0)
        one = Life(harness, harness.handler(every_batch=True), pace)
        other = Life(harness, harness.handler(every_batch=True), pace)
        others_first = asyncio.Event()
        ones_first = asyncio.Event()

        async def behind(sequences: list[int]) -> None:
            one.watched.before_apply = None
            await asyncio.wait_for(others_first.wait(), 5.0)

        async def others(sequences: list[int]) -> None:
            others_first.set()

        async def ones(sequences: list[int]) -> None:
            ones_first.set()

        one.watched.before_apply = behind
        one.watched.after_apply = ones
        other.watched.after_apply = others
        try:
            await one.start()
            await until(opened(one.watched), "the first holder opened")
            await asyncio.sleep(0.2)  # its pull waits on the server first
            await other.start()
            await until(opened(other.watched), "the second holder opened")
            await asyncio.sleep(0.2)
            await harness.append(names)
            await asyncio.wait_for(ones_first.wait(), WAIT_S)
        finally:
            await one.stop()
            await other.stop()
        await follow(harness, [])  # a third process holds the partition alone, and goes on

        assert one.watched.batches[0][0] == start + 1, "the first holder had the first message"
        assert other.watched.batches[0][0] > start + 1, "the other's first batch after a gap"
        made = await harness.effects()
        if harness.repeats_when_shared:
            assert list(dict.fromkeys(made)) == first + names
        else:
            assert made == first + names


class TestProjections(FollowerContract):
    harness_class = ProjectionsHarness


class TestWebhooks(FollowerContract):
    harness_class = WebhooksHarness


class TestLeagueWebhooks(FollowerContract):
    harness_class = LeagueWebhooksHarness


class TestRoundWatch(FollowerContract):
    harness_class = RoundWatchHarness


class TestTimers(FollowerContract):
    harness_class = TimersHarness
