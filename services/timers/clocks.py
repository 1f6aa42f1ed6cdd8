"""The running clocks of one partition: its clocked games in play, folded from their commits,
and the deadlines they give, in a heap.

Each clocked game is folded as the engine folds it (:func:`domain.timing.apply_commit`: the
events, then the clocks run to the commit's time), so a deadline always derives from the commit
that gave the turn, never from when this process heard of it. Only running clocked games are
held: a commit of any other game is skipped by a look at its bytes, undecoded, unless it may
start a game (only a game's first commit holds a ``game_created`` event), and a finished game
is forgotten. So what is held stays as small as the games on the clock, however many games
come and go, and :meth:`Clocks.running` (each held game's id and the stream sequence of its last
commit) is all a new holder of the partition needs to hold them again: it reads those games,
not the stream.

The deadlines wait in a heap, one entry per seat on the clock and game version, so that the
next one due is found without looking at every game; entries whose game has since moved on are
dropped as they reach the top. Nothing here does I/O or reads a clock: times are given.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import msgspec
import structlog

from contracts.wire import Commit, commit_seconds, read_commit
from domain.events import TimedOut
from domain.game import evolve
from domain.state import Game
from domain.timing import apply_commit, deadlines

log = structlog.get_logger("spades.timers")

_CREATED = b'"game_created"'
"""In the bytes of every game's first commit (and of few others: those are decoded to tell)."""

Entry = tuple[float, str, int, int]
"""A deadline in the heap: when, the game, the seat, the game's version it was learnt at."""
Turn = tuple[str, int, int]
"""A seat's turn that may time out: the game, the seat, the game's version."""
UNANSWERED_S = 1.0
"""A timeout sent this long ago and not answered yet counts as overdue again (the engine is
slow, unavailable, or finds it early): one just sent does not, however many are in flight."""


class RunningClocks(msgspec.Struct, frozen=True, kw_only=True):
    """What a partition's checkpoint keeps of its clocks: each running clocked game by the
    stream sequence of its last commit learnt (its history up to there is what was folded)."""

    games: dict[str, int] = {}


@dataclass(slots=True)
class Held:
    """A running clocked game: its state, and the sequence of its last commit learnt."""

    state: Game
    sequence: int


def _no_timeout(lateness: float | None) -> None:
    return None


class Clocks:
    """One partition's running clocked games and their deadlines."""

    def __init__(self, timed_out: Callable[[float | None], None] = _no_timeout) -> None:
        self.games: dict[str, Held] = {}
        self._heap: list[Entry] = []
        self.firing: dict[Turn, float] = {}
        """Turns whose timeout has been taken from the heap and not answered yet, and when."""
        self._timed_out = timed_out
        """Told of each timeout learnt from the stream: seconds past its deadline it was
        decided at (None when the deadline is not known)."""

    def __len__(self) -> int:
        return len(self.games)

    # ----------------------------------------------------------------------- learning

    def learn(self, game_id: str, sequence: int, data: bytes, *, seen: bool = True) -> None:
        """Take one commit of a game, as stored: fold it and push the deadlines it gives.
        ``seen``: a timeout it holds is told (not when the commit is learnt again)."""
        before = self.games.get(game_id)
        if before is None and _CREATED not in data:
            return  # neither a clocked game running nor the start of one
        try:
            commit = read_commit(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            self._untimed(game_id, error)
            return
        self.take(game_id, sequence, commit, seen=seen)

    def take(self, game_id: str, sequence: int, commit: Commit, *, seen: bool = True) -> None:
        """:meth:`learn` for a commit already decoded."""
        held = self.games.get(game_id)
        if held is not None and sequence <= held.sequence:
            return  # learnt already
        before = held.state if held is not None else None
        if not commit.events or (before is None and commit.first_version != 1):
            if held is not None:
                held.sequence = sequence  # a refusal: the history goes on
            return  # or a game this partition does not hold from its start
        try:
            at = commit_seconds(commit.time)
            first = commit.events[0]
            if seen and before is not None and isinstance(first, TimedOut):
                timing = before.timing
                due = timing.deadline(first.seat) if timing is not None else None
                self._timed_out(None if due is None else at - due)
            state = apply_commit(before, commit.events, at, evolve)
        except Exception as error:  # a history it cannot fold is not this worker's to judge
            self._untimed(game_id, error)
            return
        if state is None or state.timing is None or state.status == "finished":
            self.games.pop(game_id, None)
            return
        if held is None:
            self.games[game_id] = Held(state, sequence)
        else:
            held.state, held.sequence = state, sequence
        for seat, deadline in deadlines(state).items():
            heapq.heappush(self._heap, (deadline, game_id, seat, state.version))

    def resume(self, game_id: str, history: Iterable[tuple[int, Commit]]) -> None:
        """Hold a game again from its history (sequences and commits, in order, from its
        first), as a checkpoint named it; its timeouts were seen before. Its commits learnt
        later again are passed over."""
        self.games.pop(game_id, None)
        for sequence, commit in history:
            self.take(game_id, sequence, commit, seen=False)

    def _untimed(self, game_id: str, error: Exception) -> None:
        log.warning("game not timed: unreadable history", game_id=game_id, error=repr(error))
        self.games.pop(game_id, None)

    def running(self) -> RunningClocks:
        """The games held, as a checkpoint keeps them."""
        return RunningClocks(games={game_id: held.sequence for game_id, held in self.games.items()})

    # ----------------------------------------------------------------------- deadlines

    def current(self, turn: Turn) -> bool:
        """Whether the turn still stands: the game held is at that version, the seat on the
        clock."""
        game_id, seat, version = turn
        held = self.games.get(game_id)
        return held is not None and held.state.version == version and seat in deadlines(held.state)

    def _stands(self, entry: Entry) -> bool:
        turn = entry[1:]
        return turn not in self.firing and self.current(turn)

    def next_due(self, now: float) -> Entry | None:
        """Take the next deadline reached by ``now`` (its turn counts as firing until
        :meth:`answered`), dropping the entries passed over on the way; None when none is."""
        heap = self._heap
        while heap:
            entry = heap[0]
            if not self._stands(entry):
                heapq.heappop(heap)
                continue
            if entry[0] > now:
                return None
            heapq.heappop(heap)
            self.firing[entry[1:]] = now
            return entry
        return None

    def earliest(self) -> float | None:
        """The next deadline that stands (entries passed over are dropped)."""
        heap = self._heap
        while heap and not self._stands(heap[0]):
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def answered(self, turn: Turn) -> None:
        """The turn's timeout is no longer being fired (answered, or given up)."""
        self.firing.pop(turn, None)

    def overdue(self, now: float) -> int:
        """Timeouts due by ``now`` and not taken by the engine: those still waiting in the heap
        (found without looking past the entries due: the heap's order), and those sent
        :data:`UNANSWERED_S` or longer ago and not answered."""
        heap = self._heap
        waiting: set[Turn] = set()
        below = [0] if heap else []
        while below:
            index = below.pop()
            entry = heap[index]
            if entry[0] > now:
                continue  # its children are later still
            if self._stands(entry):
                waiting.add(entry[1:])
            below.extend(child for child in (2 * index + 1, 2 * index + 2) if child < len(heap))
        unanswered = sum(sent <= now - UNANSWERED_S for sent in self.firing.values())
        return unanswered + len(waiting)
