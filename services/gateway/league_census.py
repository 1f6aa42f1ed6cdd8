"""A platform's leagues not finished, counted from the league stream (the quota
``SPADES_MAX_LEAGUES_GOING_ON``, :mod:`services.gateway.quotas`).

No read model lists leagues: the league stream is their one record, one subject per league. The
stream's state names every subject with its count of commits (one request); a league this
gateway has not seen, or whose count has grown since it last read it, is read (its history is
a few commits: its creation, then one a round) for its platform and whether it has finished.
Neither changes back, so a league of another platform, or a finished one, is read once per
gateway; a league of the platform still going on is read again only when it has a new commit.
A league of no planned end never finishes: it counts as long as it exists.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from nats.js import JetStreamContext

from contracts.wire import LEAGUE_SUBJECTS, LEAGUES_STREAM, league_subject
from services.runtime.league_cache import LeagueCache

_PREFIX = league_subject("")


@dataclass
class LeagueCensus:
    """What one gateway knows of each league, for counting a platform's leagues going on."""

    owners: dict[str, str | None] = field(default_factory=dict)
    """Each league's platform, once read."""
    commits: dict[str, int] = field(default_factory=dict)
    """How many commits each league had when it was last read."""
    finished: set[str] = field(default_factory=set)
    locks: dict[str | None, asyncio.Lock] = field(default_factory=dict)
    """One platform's league creations, one at a time (count, then create)."""

    def lock(self, platform: str | None) -> asyncio.Lock:
        return self.locks.setdefault(platform, asyncio.Lock())

    async def going_on(
        self, js: JetStreamContext, leagues: LeagueCache, platform: str | None
    ) -> int:
        """How many of the platform's leagues have not finished (``None``: those of no
        platform), as the league stream holds them now."""
        info = await js.stream_info(LEAGUES_STREAM, subjects_filter=LEAGUE_SUBJECTS)
        count = 0
        for subject, commits in (info.state.subjects or {}).items():
            league_id = subject.removeprefix(_PREFIX)
            if league_id in self.finished:
                continue
            known = league_id in self.owners
            if known and self.owners[league_id] != platform:
                continue
            if not known or self.commits.get(league_id) != commits:
                state = (await leagues.latest(league_id)).state
                if state is None:
                    continue
                self.owners[league_id] = state.platform
                self.commits[league_id] = commits
                if state.finished:
                    self.finished.add(league_id)
                    continue
            count += self.owners[league_id] == platform
        return count
