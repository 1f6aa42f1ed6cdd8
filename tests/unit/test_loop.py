"""services/runtime/loop.py: a started service's heap is frozen once per process."""

from __future__ import annotations

import gc

from services.runtime.loop import freeze_started_heap


def test_a_started_heap_is_frozen_once_per_process() -> None:
    freeze_started_heap()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    made_since = [[n] for n in range(1_000)]  # tracked by the collector, not frozen
    freeze_started_heap()  # a second service of the same process freezes nothing more
    assert gc.get_freeze_count() == frozen
    assert made_since
