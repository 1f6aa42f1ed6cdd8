"""The store names the read models for its readers (readyz, the lag report) without importing
the workers; the workers' models must answer to the same names."""

from __future__ import annotations

from services.projections.registry import READ_MODELS as WORKERS
from services.store.positions import READ_MODELS


def test_the_store_names_every_read_model_the_workers_keep_in_their_order() -> None:
    assert list(WORKERS) == list(READ_MODELS)
