"""A platform's quotas: what one platform's requests may make the service do for it. (Its
engine commands a minute are the engine's to count: :mod:`services.engine.budget`.)

* Games going on at once (``SPADES_MAX_GAMES_GOING_ON``): a new game,
  or a league round's tables, past the platform's quota of games not finished is refused with
  429 ``rate_limited``, naming the quota. Counted from the game list (the read model), so the
  count lags the engine by the projections' lag: a platform creating games faster than they
  are projected may go past its quota by what it creates within that lag (and by the requests
  in flight at once); the next request after that is refused.
* Leagues going on at once (``SPADES_MAX_LEAGUES_GOING_ON``): a new league past the platform's
  quota of leagues not finished is refused with 429 ``rate_limited``, naming the quota. Counted
  from the league stream (:mod:`services.gateway.league_census`), so it is current; a
  gateway makes one league of a platform at a time, so only creations on several gateways
  at once may pass it together (the next is refused).
* The shortest turn: a clock whose ``turn_s`` is under ``SPADES_MIN_TURN_S`` is refused with
  422 ``invalid_rules``. Every timeout is a command the service makes itself (under ``auto``,
  the bot's move): a clock of a millisecond turned 15 requests into thousands of commits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from domain.clock import Clock
from services.gateway.deps import Gateway
from services.gateway.problems import ProblemError


async def check_games_quota(services: Gateway, platform: str | None, adding: int = 1) -> None:
    """429 ``rate_limited`` when ``adding`` more games would take the platform past its quota
    of games going on."""
    quota = services.caps.games_going_on
    going_on = await services.read_models.games_going_on(platform)
    if going_on + adding > quota:
        raise ProblemError(
            "rate_limited",
            f"quota: a platform has at most {quota} games going on at once here "
            f"(SPADES_MAX_GAMES_GOING_ON); it has {going_on}, and this would add {adding}",
        )


def check_turn(services: Gateway, clock: Clock | None) -> None:
    """422 ``invalid_rules`` for a clock whose turn is shorter than the server allows."""
    least = services.caps.min_turn_s
    if clock is not None and clock.turn_s < least:
        raise ProblemError(
            "invalid_rules",
            f"quota: a turn is at least {least:g} s here (SPADES_MIN_TURN_S), not {clock.turn_s:g}",
        )


@asynccontextmanager
async def leagues_quota(services: Gateway, platform: str | None) -> AsyncIterator[None]:
    """429 ``rate_limited`` when one more league would take the platform past its quota of
    leagues going on; else the league is made inside, one of the platform's at a time on this
    gateway (the count it checked is then the count it adds to)."""
    quota = services.caps.leagues_going_on
    census = services.league_census
    async with census.lock(platform):
        going_on = await census.going_on(services.js, services.leagues, platform)
        if going_on + 1 > quota:
            raise ProblemError(
                "rate_limited",
                f"quota: a platform has at most {quota} leagues going on at once here "
                f"(SPADES_MAX_LEAGUES_GOING_ON); it has {going_on}",
            )
        yield
