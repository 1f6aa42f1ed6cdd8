"""The tests the signals rest on, written out with the standard library (scipy is not a
dependency): Fisher's exact test, the binomial tail, the normal tail, and Benjamini-Hochberg.

    >>> round(fisher_greater(3, 0, 0, 3), 4)  # all three "within", none outside: 1 / C(6, 3)
    0.05
    >>> benjamini_hochberg([0.01, 0.02, 0.03, 0.2])
    [0.04, 0.04, 0.04, 0.2]
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact test of the 2x2 table ``[[a, b], [c, d]]``: the chance, with the
    margins fixed, of a top-left count of ``a`` or more (the first row's rate exceeds the
    second's). Exact at every size: the hypergeometric tail summed term by term."""
    row, column, total = a + b, a + c, a + b + c + d
    if row == 0 or column == 0 or row == total:
        return 1.0
    top = min(row, column)
    base = _log_choose(total, column)
    tail = sum(
        math.exp(_log_choose(row, k) + _log_choose(total - row, column - k) - base)
        for k in range(a, top + 1)
    )
    return min(1.0, tail)


def binomial_greater(successes: int, trials: int, chance: float) -> float:
    """The chance of ``successes`` or more in ``trials`` draws of probability ``chance``."""
    if successes <= 0:
        return 1.0
    if chance <= 0.0:
        return 0.0
    if chance >= 1.0 or successes > trials:
        return 1.0 if chance >= 1.0 else 0.0
    log_p, log_q = math.log(chance), math.log1p(-chance)
    tail = sum(
        math.exp(_log_choose(trials, k) + k * log_p + (trials - k) * log_q)
        for k in range(successes, trials + 1)
    )
    return min(1.0, tail)


def normal_greater(z: float) -> float:
    """The upper tail of the standard normal at ``z``."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mean_above_zero(values: Sequence[float]) -> tuple[float, float]:
    """(The mean, the one-sided p-value that the true mean exceeds zero): a z-test on the
    sample's own spread, sound for the tens of hands and more it is used on."""
    n = len(values)
    if n < 2:
        return (values[0] if values else 0.0), 1.0
    mean = math.fsum(values) / n
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    if variance == 0.0:
        return mean, 0.0 if mean > 0 else 1.0
    return mean, normal_greater(mean / math.sqrt(variance / n))


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the order given: a test is declared
    at false discovery rate ``q`` when its adjusted value is ``q`` or less. Over every pair and
    signal of a league at once, so that many honest pairs do not flag one by chance."""
    count = len(p_values)
    order = sorted(range(count), key=lambda i: p_values[i])
    adjusted = [1.0] * count
    running = 1.0
    for rank in range(count, 0, -1):
        index = order[rank - 1]
        running = min(running, p_values[index] * count / rank)
        adjusted[index] = round(min(1.0, running), 12)
    return adjusted
