"""The figures of ``spades bench history`` against N: slopes per 10,000 games."""

from __future__ import annotations

import pytest

from benchmarks.history import slope


def test_the_slope_is_least_squares_per_ten_thousand_games() -> None:
    assert slope([(0, 1.0), (10_000, 3.0), (100_000, 21.0)]) == pytest.approx(2.0)
    assert slope([(0, 5.0), (10_000, 4.0), (100_000, 5.5)]) == pytest.approx(0.0962, abs=1e-4)


def test_a_figure_known_at_one_size_has_no_slope() -> None:
    assert slope([(0, None), (10_000, 3.0)]) is None
    assert slope([(10_000, 3.0), (10_000, 4.0)]) is None
    assert slope([(0, None), (10_000, 3.0), (100_000, 3.0)]) == pytest.approx(0.0)
