"""How far a measured count or percentile can be trusted: the binomial tail both rest on, and a
distribution-free confidence interval for a percentile from a sample's order statistics.

A benchmark's p99.9 over 3,200 requests is about the fourth-slowest of them: one stall of the
machine moves it, and two runs of one commit here gave 12.6 and 19.1 ms. The interval says
what the sample can show. Whatever the distribution, the number of samples above the true
percentile q is Binomial(n, 1 - q), so the k-th slowest sample lies above it with a probability
that binomial gives; the interval is the pair of order statistics that bound the percentile with
the confidence asked. With too few samples there is no upper bound at all: at 95%, a p99.9 needs
at least 3,688 samples before even the slowest one bounds it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space (n runs to tens of thousands)."""
    if k < 0:
        return 0.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    last = 0.0
    for at_most in _cumulative(n, p, min(k, n)):
        last = at_most
    return last


def _cumulative(n: int, p: float, last: int) -> Iterator[float]:
    """P(X <= i) for i = 0, 1, ..., last, X ~ Binomial(n, p) with 0 < p < 1, each term in log
    space."""
    log_p, log_q, log_n = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    total = 0.0
    for i in range(last + 1):
        total += math.exp(
            log_n - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        )
        yield min(total, 1.0)


def percentile_interval(
    values: Sequence[float], quantile: float, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """A two-sided confidence interval for the `quantile` (0.999 for a p99.9) of the population
    `values` were drawn from: (low, high), each a sample value, or None where the sample cannot
    bound it on that side (too few values above or below it). Each side misses with a
    probability of at most (1 - confidence) / 2, for any continuous distribution."""
    if not 0.0 < quantile < 1.0 or not 0.0 < confidence < 1.0:
        raise ValueError("quantile and confidence must lie strictly between 0 and 1")
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return None, None
    miss = (1.0 - confidence) / 2
    # M, the samples above the true percentile, is Binomial(n, 1 - quantile), and the
    # (j + 1)-th slowest sample lies above the percentile exactly when M >= j + 1, below it
    # exactly when M <= j. High: the most j with P(M <= j) <= miss. Low: the fewest j with
    # P(M >= j + 1) = 1 - P(M <= j) <= miss.
    high_j, low_j = -1, None
    for j, at_most in enumerate(_cumulative(n, 1.0 - quantile, n - 1)):
        if at_most <= miss:
            high_j = j
        if 1.0 - at_most <= miss:
            low_j = j
            break
    low = None if low_j is None else ordered[n - 1 - low_j]
    high = ordered[n - 1 - high_j] if high_j >= 0 else None
    return low, high
