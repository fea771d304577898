"""How far a measured count or percentile can be trusted: the binomial tail both rest on, and a
distribution-free confidence interval for a percentile from a sample's order statistics.

A benchmark's p99.9 over 3,200 requests is about the fourth-slowest of them: one stall of the
machine moves it, and two runs of the same code differ by a factor of two. The interval says
what the sample can show. Whatever the distribution, the number of samples above the true
percentile q is Binomial(n, 1 - q), so the k-th slowest sample lies above it with a probability
that binomial gives; the interval is the pair of order statistics that bound the percentile with
the confidence asked. With too few samples there is no upper bound at all: at 95%, a p99.9 needs
at least 3,688 samples before even the slowest one bounds it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space (n runs to tens of thousands)."""
    if k < 0:
        return 0.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(min(k, n) + 1):
        log_term = (
            math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
            + i * log_p + (n - i) * log_q
        )  # fmt: skip
        total += math.exp(log_term)
    return min(total, 1.0)


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
    above = 1.0 - quantile  # the population's share above the percentile
    miss = (1.0 - confidence) / 2
    # M, the samples above the true percentile, is Binomial(n, above). The (j + 1)-th slowest
    # sample lies above the percentile exactly when M >= j + 1.
    # Low: the fewest j for which that happens with probability <= miss.
    j = 0
    while j < n and 1.0 - binomial_cdf(j, n, above) > miss:
        j += 1
    low = ordered[n - 1 - j] if j < n else None
    # High: the (j + 1)-th slowest lies below the percentile exactly when M <= j; the most j
    # for which that happens with probability <= miss.
    j = -1
    while j + 1 < n and binomial_cdf(j + 1, n, above) <= miss:
        j += 1
    high = ordered[n - 1 - j] if j >= 0 else None
    return low, high
