"""When a failed delivery is tried again: a schedule of waits, each drawn with full jitter.

``SPADES_WEBHOOK_SCHEDULE`` lists the waits after the first try, the second, ... (``5s``,
``5m``, ``2h``; a bare number is seconds). Each wait is drawn uniformly between 0 and the listed
one ("full jitter"), so that receivers coming back from an outage are not hit by every retry at
the same instant. The default, ``5s,5m,30m,2h,5h,10h,10h``, spreads eight tries over up to a
day and a few hours; when the last one fails the delivery has failed, and its endpoint is
disabled.

>>> Schedule.parse("5s,5m,2h").waits
(5.0, 300.0, 7200.0)
>>> Schedule.parse("1,1").tries
3
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

_STEP = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
MAX_STEPS = 32


@dataclass(frozen=True, slots=True)
class Schedule:
    waits: tuple[float, ...]
    """The longest wait after each failed try, in seconds."""

    @classmethod
    def parse(cls, text: str) -> Schedule:
        steps = [part.strip() for part in text.split(",") if part.strip()]
        if not steps or len(steps) > MAX_STEPS:
            raise ValueError(f"a webhook schedule lists 1 to {MAX_STEPS} waits, e.g. 5s,5m,2h")
        waits = []
        for step in steps:
            found = _STEP.match(step)
            if found is None:
                raise ValueError(f"{step!r} is not a wait: write it as 5s, 5m or 2h")
            waits.append(float(found.group(1)) * _UNIT_S[found.group(2)])
        return cls(tuple(waits))

    @property
    def tries(self) -> int:
        """Tries in all: the first, and one after each wait."""
        return len(self.waits) + 1

    @property
    def span_s(self) -> float:
        """The longest time from the first try to the last."""
        return sum(self.waits)

    def wait_after(self, failures: int, draw: random.Random) -> float | None:
        """How long to wait after the ``failures``-th failed try (1-based); None once the
        schedule is over."""
        if failures > len(self.waits):
            return None
        return draw.uniform(0.0, self.waits[failures - 1])
