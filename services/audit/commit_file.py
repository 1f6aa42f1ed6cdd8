"""A copy of a game's record: its stored commits, one per line, byte for byte.

Each line is a commit's stored bytes exactly as the stream holds them (a commit's JSON never
holds a raw newline), so the hash chain can be checked on the copy, and a tampered copy is
caught like a tampered stream.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from contracts.wire import read_commit
from services.runtime.game_stream import StoredCommit


class UnreadableCommits(Exception):
    """A line that is not a stored commit; ``line`` is 1-based."""

    def __init__(self, line: int, why: str) -> None:
        super().__init__(f"line {line}: {why}")
        self.line = line
        self.why = why


def commit_lines(commits: Iterable[StoredCommit]) -> bytes:
    """The copy: each commit's stored bytes, then a newline."""
    return b"".join(stored.data + b"\n" for stored in commits)


def read_commit_lines(data: bytes) -> list[StoredCommit]:
    """The commits of a copy, numbered by line. Empty lines are skipped; the bytes of a line
    are taken as they are (a line that was re-encoded no longer hashes the same, which is the
    point)."""
    commits: list[StoredCommit] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            commit = read_commit(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise UnreadableCommits(number, f"not a stored commit ({error})") from None
        commits.append(StoredCommit(number, line, commit))
    return commits
