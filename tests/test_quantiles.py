"""A percentile's confidence interval from a sample's order statistics (replays/quantiles.py):
the textbook cases, the sample sizes at which a p99.9 gets an upper bound, and its coverage on
samples drawn from a known distribution."""

from __future__ import annotations

import random

import pytest

from staffstore.replays.quantiles import binomial_cdf, percentile_interval


def test_the_median_of_ten_is_bounded_by_the_second_and_ninth_values() -> None:
    # The usual table: for n = 10 the 95% interval of the median is (x(2), x(9)).
    assert percentile_interval(list(range(1, 11)), 0.5) == (2, 9)


def test_a_p999_has_no_upper_bound_until_the_slowest_of_3688_bounds_it() -> None:
    # P(no sample above the p99.9) = 0.999 ** n, which falls under 2.5% at n = 3,688.
    for n, bounded in ((3_200, False), (3_687, False), (3_688, True)):
        values = [float(i) for i in range(n)]
        low, high = percentile_interval(values, 0.999)
        assert (high is not None) is bounded
        if bounded:
            assert high == values[-1]
        assert low is not None and low < values[-1]


def test_over_3200_values_the_p999_is_at_least_the_eighth_slowest() -> None:
    # 3,200 hits, as bench_proxy_scale's open loop sends: M ~ Binomial(3200, 0.001), and
    # P(M >= 8) is the first tail under 2.5%.
    values = [float(i) for i in range(3_200)]
    assert percentile_interval(values, 0.999) == (values[-8], None)
    assert 1 - binomial_cdf(7, 3_200, 0.001) <= 0.025 < 1 - binomial_cdf(6, 3_200, 0.001)


@pytest.mark.parametrize(("quantile", "n"), [(0.5, 41), (0.9, 200), (0.99, 2_000)])
def test_the_interval_covers_the_true_percentile_at_least_as_often_as_promised(
    quantile: float, n: int
) -> None:
    # Uniform(0, 1): the true percentile is the quantile itself.
    rng = random.Random(7)
    trials, missed_low, missed_high = 600, 0, 0
    for _ in range(trials):
        low, high = percentile_interval([rng.random() for _ in range(n)], quantile)
        missed_low += low is not None and low > quantile
        missed_high += high is not None and high < quantile
    # Each side may miss 2.5% of the time; allow sampling error over 600 trials (about 3.5
    # standard errors), which a wrong rank would overrun several times over.
    assert missed_low / trials <= 0.025 + 0.022
    assert missed_high / trials <= 0.025 + 0.022


def test_an_interval_needs_a_quantile_and_a_confidence_between_0_and_1() -> None:
    with pytest.raises(ValueError):
        percentile_interval([1.0, 2.0], 1.0)
    with pytest.raises(ValueError):
        percentile_interval([1.0, 2.0], 0.5, confidence=1.0)
