"""One archiving pass over every partition (see :mod:`services.archive`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from nats.js import JetStreamContext

from contracts.partitions import Partitions
from contracts.wire import commit_seconds
from domain.events import GameEnded
from services.runtime.event_store import AppendConflict, DuplicateCommand
from services.runtime.game_archive import (
    MAX_ARCHIVE_BYTES,
    ArchivedCommit,
    ArchivedGame,
    archive_stream_config,
    history_digest,
    pack,
)
from services.runtime.game_stream import GameStream, StoredCommit
from services.runtime.nats import ensure_stream
from services.runtime.stream_identity import StreamIdentity

Report = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True, slots=True)
class Moved:
    """One game a pass archived (or, in a dry run, would archive)."""

    game_id: str
    partition: int
    commits: int
    """Commits of its history (its archived message holds them all)."""
    purged: int
    """Commits purged from its partition stream (all but the last one)."""
    history_bytes: int
    """The bytes of its commits, as its partition stream stored them."""
    archive_bytes: int
    """The bytes of its archive message."""


@dataclass
class Pass:
    """What a pass did: the games moved, what it left and why, each partition stream's
    messages and bytes before and after."""

    moved: list[Moved] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)
    """A game id, or a stream's name, that the pass left where it is: why."""
    streams: dict[str, tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=dict)
    """Stream name -> ((messages, bytes) before, (messages, bytes) after)."""


def over(history: list[StoredCommit]) -> bool:
    """Whether a history holds its game's end."""
    return any(type(event) is GameEnded for stored in history for event in stored.commit.events)


async def archive_games(
    js: JetStreamContext,
    partitions: Partitions,
    *,
    idle_since: float,
    limit: int | None = None,
    dry_run: bool = False,
    replicas: int = 1,
    report: Report = _quiet,
) -> Pass:
    """Move to the archive every finished game whose last commit is older than ``idle_since``
    (seconds since the epoch), at most ``limit`` of them; with ``dry_run``, only say which."""
    if not dry_run:
        await ensure_stream(js, archive_stream_config(replicas))
    games = GameStream(js, partitions)
    done = Pass()
    for partition, part in enumerate(games.parts):
        info = await js.stream_info(part.name)
        before = (int(info.state.messages), int(info.state.bytes))
        if info.config.deny_purge:
            done.left[part.name] = (
                "the stream denies purges (it was made before archiving, and JetStream never "
                "lets a stream stop denying them): restore it from a backup to make it anew"
            )
            report(f"{part.name}: left, {done.left[part.name]}")
            continue
        created = StreamIdentity.of(info).created
        for subject, count in sorted((await stream_subjects(js, part.name)).items()):
            if limit is not None and len(done.moved) >= limit:
                break
            game_id = part.key_of(subject)
            if game_id is None or count < 2:  # one commit: archived already, or just created
                continue
            last = await part.last(game_id)
            if last is None or commit_seconds(last.commit.time) >= idle_since:
                continue
            if not _may_be_over(last):
                continue
            moved = await _move(js, games, partition, created, game_id, done, dry_run=dry_run)
            if moved is not None:
                done.moved.append(moved)
                report(
                    f"{game_id}: {'would move' if dry_run else 'moved'} {moved.commits} commits "
                    f"({moved.history_bytes} bytes in {part.name}) into "
                    f"{moved.archive_bytes} bytes of archive"
                )
            elif game_id in done.left:
                report(f"{game_id}: left, {done.left[game_id]}")
        after_info = await js.stream_info(part.name)
        after = (int(after_info.state.messages), int(after_info.state.bytes))
        done.streams[part.name] = (before, after)
        report(
            f"{part.name}: {before[0]} messages, {before[1]} bytes before; "
            f"{after[0]} messages, {after[1]} bytes after"
        )
    return done


def _may_be_over(last: StoredCommit) -> bool:
    """Whether a game whose last commit is this may be over (its end, or a refusal after it):
    only those are read whole."""
    commit = last.commit
    return commit.refusal is not None or any(type(e) is GameEnded for e in commit.events)


async def _move(
    js: JetStreamContext,
    games: GameStream,
    partition: int,
    created: str,
    game_id: str,
    done: Pass,
    *,
    dry_run: bool,
) -> Moved | None:
    """Archive one game, verify, purge (see :mod:`services.archive`); None when it is left."""
    part = games.parts[partition]
    history = await games.read(game_id)
    if not history or not over(history):
        return None
    last = history[-1]
    commits = [ArchivedCommit(stored.sequence, stored.data) for stored in history]
    archived = ArchivedGame(
        game_id=game_id,
        stream=part.name,
        stream_created=created,
        subject=part.subject(game_id),
        archived_at=datetime.now(UTC).isoformat(timespec="seconds"),
        digest=history_digest(commits),
        commits=commits,
    )
    message = pack(archived)
    first = await part.first_sequence(game_id)
    moved = Moved(
        game_id=game_id,
        partition=partition,
        commits=len(commits),
        purged=sum(1 for c in commits if first <= c.sequence < last.sequence),
        history_bytes=sum(len(c.data) for c in commits),
        archive_bytes=len(message),
    )
    if len(message) > MAX_ARCHIVE_BYTES:
        done.left[game_id] = (
            f"its archive message would be {len(message)} bytes (at most {MAX_ARCHIVE_BYTES})"
        )
        return None
    if dry_run:
        return moved
    found = await games.archive.find(game_id)
    if found is None or found.commit.last_sequence != last.sequence:
        try:
            await games.archive.store.append(
                game_id,
                message,
                expected=found.sequence if found is not None else 0,
                command_id=f"{game_id}:{last.sequence}",
            )
        except AppendConflict:
            done.left[game_id] = "another pass archived it meanwhile"
            return None
        except DuplicateCommand:
            pass  # this very history, written by a pass that stopped before it purged
    again = await games.archive.find(game_id)
    if again is None or again.commit.commits != commits:
        done.left[game_id] = "the archive read back differs from the stream: nothing purged"
        return None
    await js.purge_stream(part.name, subject=part.subject(game_id), seq=last.sequence)
    return moved


async def stream_subjects(js: JetStreamContext, stream: str) -> dict[str, int]:
    """Every subject of a stream with its messages, page by page (the server answers at most
    100,000 a time; nats-py's ``stream_info`` reads the first page only)."""
    subjects: dict[str, int] = {}
    while True:
        request = json.dumps({"subjects_filter": ">", "offset": len(subjects)}).encode()
        answer = await js._nc.request(
            f"{js._prefix}.STREAM.INFO.{stream}", request, timeout=js._timeout
        )
        info = json.loads(answer.data)
        if "error" in info:
            raise RuntimeError(f"stream {stream}: {info['error'].get('description')}")
        page = info.get("state", {}).get("subjects") or {}
        subjects.update(page)
        if not page or len(subjects) >= int(info.get("total", 0)):
            return subjects
