"""The gate's second look: a calibrated score for a turn the strict test did not match.

A turn and a stored question are first read slot by slot (text/slots.py): a difference in a
number, name, identifier, polarity, focus and the like makes them two questions, whatever else
they share. Then their subjects are aligned (text/alignment.py): two words that traded places,
a reordering beyond one moved phrase, or a word swapped for an unrelated one also make two
questions. What remains is scored: an ensemble of small decision trees over the alignment's measures
(gradient boosting, fitted by tools/fit_gate.py on labelled pairs) gives the probability that the
two ask the same thing. Trees rather than one weighted sum, because what a difference means
depends on the rest: a moved phrase is harmless in a short question and a change of roles in a
long sentence whose words all match (held out within workday_dev's tuning split, trees
served 186 of 400 paraphrases at the 0.5% budget where a logistic model served 60). How deep
they grow is chosen the same way, by `tools/fit_gate.py --cross-validate`.

Whether that probability is enough is the user's call, made as an error budget: the share of
turns that may be served a claim that answers another question. tools/fit_gate.py measured, on
labelled pairs it was not fitted on, which threshold keeps false hits within each budget; the
table ships in data/gate_params.json with the data it came from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from ..text.alignment import (
    FEATURES,
    align,
    features,
    possessive_reading,
    reattached,
    reordered,
    substitution,
    swapped,
)
from ..text.slots import differences

#: The default error budget: at most one turn in a thousand served another question's answer.
DEFAULT_BUDGET = 0.001


class GateParamsError(ValueError):
    """The gate's parameters file is missing a part or was fitted for other features."""


@dataclass(frozen=True)
class Assessment:
    """How a turn relates to one stored question under the second look.

    `reason` names what makes them two questions (a slot, "word_order", "substitution") and is
    None when they were scored; `probability` is the score then.
    """

    reason: str | None
    asked_only: tuple[str, ...] = ()
    stored_only: tuple[str, ...] = ()
    probability: float | None = None


@dataclass(frozen=True)
class CalibratedPoint:
    budget: float
    threshold: float


class Trees:
    """Gradient-boosted regression trees, flattened: node i tests `values[feature[i]] <=
    threshold[i]` and goes to left[i] or right[i]; a leaf (left[i] == -1) adds value[i] to the
    log-odds. Exported by tools/fit_gate.py from scikit-learn, which is needed only to fit."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.baseline = float(spec["baseline"])
        self.roots = [int(r) for r in spec["roots"]]
        self.feature = [int(v) for v in spec["feature"]]
        self.threshold = [float(v) for v in spec["threshold"]]
        self.left = [int(v) for v in spec["left"]]
        self.right = [int(v) for v in spec["right"]]
        self.value = [float(v) for v in spec["value"]]
        n = len(self.feature)
        if not (len(self.threshold) == len(self.left) == len(self.right) == len(self.value) == n):
            raise GateParamsError("gate parameters: tree arrays of different lengths")
        if any(not 0 <= r < n for r in self.roots):
            raise GateParamsError("gate parameters: a tree root outside the node table")

    def log_odds(self, values: Sequence[float]) -> float:
        total = self.baseline
        feature, threshold, left, right = self.feature, self.threshold, self.left, self.right
        for node in self.roots:
            while left[node] != -1:
                node = left[node] if values[feature[node]] <= threshold[node] else right[node]
            total += self.value[node]
        return total


class GateModel:
    """The fitted score and its calibration."""

    def __init__(self, params: dict[str, Any]) -> None:
        try:
            if tuple(params["features"]) != FEATURES:
                raise GateParamsError("the parameters were fitted for other features")
            self.filler: dict[str, float] = dict(params["filler"])
            self.trees = Trees(params["trees"])
            self.points = sorted(
                (CalibratedPoint(float(p["budget"]), float(p["threshold"]))
                 for p in params["calibration"]),
                key=lambda p: p.budget,
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, GateParamsError):
                raise
            raise GateParamsError(f"gate parameters: {error}") from error
        if not self.points:
            raise GateParamsError("gate parameters: no calibrated budget")
        self.params = params
        # Turns repeat, and so do the pairs the second look reads: keep what it found.
        self.assess = lru_cache(maxsize=65_536)(self._assess)  # type: ignore[method-assign]

    def probability(self, values: list[float]) -> float:
        if len(values) != len(FEATURES):
            raise ValueError(f"{len(values)} measures given, the score reads {len(FEATURES)}")
        z = self.trees.log_odds(values)
        return 1.0 / (1.0 + math.exp(-z))

    def threshold(self, budget: float) -> float:
        """The calibrated threshold for an error budget: the point with the largest budget that
        does not exceed it (a budget below every calibrated point gets the strictest)."""
        chosen = self.points[0]
        for point in self.points:
            if point.budget <= budget + 1e-12:
                chosen = point
        return chosen.threshold

    @property
    def budgets(self) -> list[float]:
        return [p.budget for p in self.points]

    def assess(self, asked: str, stored: str) -> Assessment:
        """Whether a turn may ask what a stored question asks, and how likely it is to."""
        return self._assess(asked, stored)

    def _assess(self, asked: str, stored: str) -> Assessment:
        found = differences(asked, stored)
        if found:
            first = found[0]
            return Assessment(first.slot, first.asked, first.stored)
        traded = swapped(asked, stored) or reattached(asked, stored)
        if traded:
            return Assessment("word_order", tuple(traded), tuple(traded))
        alignment = align(asked, stored)
        if reordered(asked, stored, alignment):
            # A possessive moves words without changing what is asked: read it unfolded. Two
            # words that traded places above stay refused: that is a change of roles.
            unfolded = possessive_reading(asked, stored)
            if unfolded is None:
                return Assessment("word_order")
            asked, stored, alignment = unfolded
        swap = substitution(alignment, self.filler)
        if swap.unrelated:
            return Assessment("substitution", tuple(swap.asked_only), tuple(swap.stored_only))
        values = features(asked, stored, alignment, self.filler)
        return Assessment(
            None, tuple(swap.asked_only), tuple(swap.stored_only), self.probability(values)
        )


def warm_up() -> None:
    """Load what the second look otherwise loads on the first turn that needs it: the
    parameters, the word tables and WordLlama's embeddings (about 0.3 s on a 2-core machine),
    so that a server can pay for it before its first request rather than during it."""
    # Two questions that differ in a word, so the pair reaches the alignment and the embedding.
    default_model().assess("why did the nightly backup fail?", "why did the nightly job break?")


@cache
def default_model() -> GateModel:
    """The model shipped in data/gate_params.json."""
    data = resources.files("staffstore.gate") / "data" / "gate_params.json"
    return GateModel(json.loads(data.read_text(encoding="utf-8")))
