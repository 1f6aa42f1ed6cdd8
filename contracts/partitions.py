"""Where a game's history lives: the game stream split into K partitions.

A deployment chooses K, the number of partitions, once (``SPADES_PARTITIONS``; 1 on one machine).
Each partition is a JetStream stream of its own, with its own Raft group and leader, so the
writes and the leader reads of many games spread over the nodes of a cluster. A game's partition
is a fixed function of its id, :func:`partition_of`: the hash NATS subject mapping's
``partition(K, 1)`` uses (FNV-1a, 32 bits, of the id, modulo K), so the server and this code
agree on it (``tests/integration/test_partitions.py`` checks it against a real server's mapping).

A deployment of one partition is laid out as the service always was, before partitions: the
stream ``SPADES_GAMES``, subjects ``spades.games.<game_id>``, commands on
``spades.commands.<game_id>`` (and a timer's timeouts on ``spades.timeouts.<game_id>``). So a
deployment made by an earlier version is a deployment of one partition, unchanged. With K > 1,
partition ``p`` is the stream ``SPADES_GAMES_<p>`` with the subjects
``spades.part.<p>.games.<game_id>``, the commands ``spades.part.<p>.commands.<id>`` and the
timeouts ``spades.part.<p>.timeouts.<id>``: subjects that no other layout's stream claims, so a
one-partition deployment's stream and the partitions it is moved into can live side by side
during the move (``spades partitions migrate``). Each partition stream records its place in its
metadata (:data:`PARTITION_KEY`, :data:`PARTITIONS_KEY`), so a process started with another K
than the streams were made with refuses to start instead of looking for games in the wrong
stream.

Leagues are not partitioned: a league commits once when it is made and about twice a round,
thousands of times fewer than its games, so its one stream is never what limits a deployment.
"""

from __future__ import annotations

from dataclasses import dataclass

LEGACY_STREAM = "SPADES_GAMES"
"""The one stream of a deployment of one partition (and of every deployment before partitions)."""
PARTITION_KEY = "spades_partition"
PARTITIONS_KEY = "spades_partitions"
"""The stream metadata keys naming a partition stream's index and the deployment's K."""
MAX_PARTITIONS = 1024
ANY_ENGINE_SUBJECTS = "spades.engines.*"
"""Where a game's command goes when no engine serves its partition right now (the one that did
has just ended, and its lease has not run out yet): every engine answers there, in one queue
group, and optimistic concurrency keeps the game's history one line whichever answers."""
ANY_ENGINE_TIMEOUT_SUBJECTS = "spades.engines.timeouts.*"
"""The same for a timer's timeout (:meth:`Partitions.timeout_subject`)."""

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a_32(data: bytes) -> int:
    """The 32-bit FNV-1a hash, as Go's ``hash/fnv.New32a`` (which NATS's ``partition()`` uses).

    >>> fnv1a_32(b"")
    2166136261
    >>> fnv1a_32(b"a")
    3826002220
    """
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def partition_of(key: str, count: int) -> int:
    """The partition of ``key`` (a game id) among ``count`` partitions.

    >>> partition_of("c66b4a1393d821f7", 1)
    0
    >>> [partition_of(game, 3) for game in ("c66b4a1393d821f7", "0000000000000000")]
    [1, 0]
    """
    return fnv1a_32(key.encode()) % count


@dataclass(frozen=True, slots=True)
class Partitions:
    """The layout of a deployment's game streams: K partitions, their streams and subjects."""

    count: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_PARTITIONS:
            raise ValueError(f"partitions must be 1 to {MAX_PARTITIONS}, not {self.count}")

    @property
    def legacy(self) -> bool:
        """Laid out as before partitions: one stream, ``SPADES_GAMES``."""
        return self.count == 1

    @property
    def indexes(self) -> range:
        """Every partition, by index."""
        return range(self.count)

    def of(self, game_id: str) -> int:
        """The partition of a game."""
        return 0 if self.count == 1 else partition_of(game_id, self.count)

    def stream(self, partition: int) -> str:
        """The name of a partition's stream."""
        self._check(partition)
        return LEGACY_STREAM if self.legacy else f"{LEGACY_STREAM}_{partition}"

    @property
    def streams(self) -> tuple[str, ...]:
        """Every partition's stream, in partition order."""
        return tuple(self.stream(partition) for partition in range(self.count))

    def partition_of_stream(self, stream: str) -> int | None:
        """The partition whose stream is ``stream`` (None: no partition's)."""
        try:
            return self.streams.index(stream)
        except ValueError:
            return None

    def subject_prefix(self, partition: int) -> str:
        """What comes before a game's id in the subjects of a partition's stream."""
        self._check(partition)
        return "spades.games." if self.legacy else f"spades.part.{partition}.games."

    def subjects(self, partition: int) -> str:
        """Every game subject of a partition, as one wildcard (the stream's subjects)."""
        return f"{self.subject_prefix(partition)}*"

    def game_subject(self, game_id: str) -> str:
        """The stream subject that holds one game's commits."""
        return f"{self.subject_prefix(self.of(game_id))}{game_id}"

    def command_prefix(self, partition: int) -> str:
        self._check(partition)
        return "spades.commands." if self.legacy else f"spades.part.{partition}.commands."

    def command_subjects(self, partition: int) -> str:
        """The subjects the engine serving a partition answers its games' commands on."""
        return f"{self.command_prefix(partition)}*"

    def command_subject(self, game_id: str) -> str:
        """Where a game's commands go: to the engine that serves its partition."""
        return f"{self.command_prefix(self.of(game_id))}{game_id}"

    @staticmethod
    def any_engine_subject(game_id: str) -> str:
        """The subject of :data:`ANY_ENGINE_SUBJECTS` for a game's command."""
        return f"spades.engines.{game_id}"

    def timeout_prefix(self, partition: int) -> str:
        self._check(partition)
        return "spades.timeouts." if self.legacy else f"spades.part.{partition}.timeouts."

    def timeout_subjects(self, partition: int) -> str:
        """The subjects the engine serving a partition answers its games' timeouts on."""
        return f"{self.timeout_prefix(partition)}*"

    def timeout_subject(self, game_id: str) -> str:
        """Where a timer's timeout for a game goes: a subject of its own, so the timers' broker
        user may send a timeout and nothing else (the engine answers a timeout nowhere else,
        and nothing but a timeout there)."""
        return f"{self.timeout_prefix(self.of(game_id))}{game_id}"

    @staticmethod
    def any_engine_timeout_subject(game_id: str) -> str:
        """The subject of :data:`ANY_ENGINE_TIMEOUT_SUBJECTS` for a game's timeout."""
        return f"spades.engines.timeouts.{game_id}"

    def metadata(self, partition: int) -> dict[str, str]:
        """What a partition's stream records of its place (see the module's docstring)."""
        return {PARTITION_KEY: str(partition), PARTITIONS_KEY: str(self.count)}

    def mismatch(self, partition: int, metadata: dict[str, str] | None) -> str | None:
        """Why a stream found as ``partition``'s, with ``metadata``, is not of this layout
        (None: it is). A one-partition stream made before partitions has no metadata."""
        found = dict(metadata or {})
        if PARTITIONS_KEY not in found:
            return None if self.legacy else f"{self.stream(partition)} names no partitions"
        expected = self.metadata(partition)
        if found.get(PARTITIONS_KEY) != expected[PARTITIONS_KEY]:
            return (
                f"stream {self.stream(partition)} belongs to a deployment of "
                f"{found.get(PARTITIONS_KEY)} partitions, not {self.count}"
            )
        if found.get(PARTITION_KEY) != expected[PARTITION_KEY]:
            return (
                f"stream {self.stream(partition)} says it is partition {found.get(PARTITION_KEY)}"
            )
        return None

    def _check(self, partition: int) -> None:
        if not 0 <= partition < self.count:
            raise ValueError(f"no partition {partition} of {self.count}")


ONE = Partitions(1)
"""The layout of one machine, and of every deployment made before partitions."""
