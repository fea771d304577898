"""How an amount of US dollars is shown to a person: the one place costs are formatted.

LLM calls cost fractions of a cent, so a fixed number of decimals either hides them ($0.0000)
or pads large sums with noise. `usd` keeps three significant digits below a dollar (never
fewer than two decimals) and says "unknown" for None, never $0. JSON carries the raw numbers.
"""

from __future__ import annotations

import math

#: What an unknown amount reads as: never "$0", which would claim it cost nothing.
UNKNOWN = "unknown"
#: Significant digits shown of an amount below a dollar.
_SIGNIFICANT = 3


def usd(value: float | None, *, unknown: str = UNKNOWN) -> str:
    """`value` as dollars with enough digits to be non-zero: 0.000042 is '$0.000042', 0.25
    is '$0.25', 1234.5 is '$1,234.50', 0 is '$0', None is `unknown`."""
    if value is None:
        return unknown
    if value == 0:
        return "$0"
    size = abs(value)
    # Decimals for three significant digits, never fewer than cents: 0.000042 needs 7.
    decimals = max(2, _SIGNIFICANT - 1 - math.floor(math.log10(size)))
    text = f"{size:,.{decimals}f}"
    # Zeros past the cents say nothing ("0.000420" is "0.00042"); the cents stay ("1.50").
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0").ljust(2, "0")
    return f"{'-' if value < 0 else ''}${whole}.{fraction}"
