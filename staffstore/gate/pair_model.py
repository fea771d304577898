"""The pair model: a small cross-encoder that reads a turn and a stored question together.

The alignment (text/alignment.py) compares two questions word by word; the pair model reads them
as one input, so it can tell "the deploy fixed it" from "the deploy broke it" and see that "what's
behind the 502s" asks "why do the 502s happen". It is all-MiniLM-L6-v2 fine-tuned by
tools/fit_pair_model.py, shipped as int8 ONNX with its tokenizer in data/pair_model/ and run with
onnxruntime: nothing is downloaded, and torch is needed only to fit it. It scores the few nearest
candidates of a turn, each pair alone; its probability is the score of the gate's calibrated
decision (scoring.py), behind the slots, which it never overrules.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

#: Where the shipped model lives, inside the package.
MODEL_DIR = "pair_model"


class PairModelError(RuntimeError):
    """The shipped pair model is missing, damaged or not the file its card names."""


class PairModel:
    """Scores (asked, stored) pairs: the probability that the two ask the same thing."""

    def __init__(self, folder: Path, *, threads: int = 1) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model_path = folder / "pair_model.onnx"
        try:
            self.card: dict[str, Any] = json.loads((folder / "pair_model.json").read_text())
            with model_path.open("rb") as model_file:
                digest = hashlib.file_digest(model_file, "sha256").hexdigest()
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except (OSError, ValueError, Exception) as error:  # tokenizers raises its own Exception
            raise PairModelError(f"the pair model in {folder} cannot be read: {error}") from error
        if digest != self.card.get("onnx_sha256"):
            raise PairModelError(f"the pair model in {folder} is not the file its card names")
        tokenizer.enable_truncation(int(self.card.get("max_tokens", 128)))
        self._tokenizer = tokenizer
        options = onnxruntime.SessionOptions()
        # One thread: a server scores a few pairs per turn, and turns run side by side; more
        # threads per batch of three buy little and cost every other request a core.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # From the file, not from its bytes: onnxruntime's session keeps the bytes it is given
        # for as long as it lives (22 MiB of every server's memory), a file only while loading.
        try:
            self._session = onnxruntime.InferenceSession(
                str(model_path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # onnxruntime raises its own exception types
            raise PairModelError(f"the pair model in {folder} cannot be loaded: {error}") from error
        self.sha256 = digest
        #: How many pairs this model has scored, and the seconds that took, on every thread:
        #: the benchmarks count the turns that reached it, /metrics reports both.
        self.calls = 0
        self.seconds = 0.0
        self._counting = threading.Lock()

    def probabilities(self, asked: str, stored: Sequence[str]) -> list[float]:
        """The probability that `asked` asks what each of `stored` asks.

        Each pair is run alone, never padded into a batch: the int8 model quantizes its
        activations with one scale per input, so a pair's score would depend on the other
        candidates of its batch (up to 0.04 here), and a decision on its neighbours. Alone, a
        pair costs about 2 ms on this 2-core machine, and three cost less than one padded batch
        of three (6.9 against 8.0 ms).
        """
        return [self._probability(asked, text) for text in stored]

    def _probability(self, asked: str, stored: str) -> float:
        began = time.perf_counter()
        encoded = self._tokenizer.encode(asked, stored)
        feed = {
            "input_ids": np.array([encoded.ids], dtype=np.int64),
            "attention_mask": np.array([encoded.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([encoded.type_ids], dtype=np.int64),
        }
        logit = float(np.asarray(self._session.run(None, feed)[0]).ravel()[0])
        elapsed = time.perf_counter() - began
        with self._counting:  # the store's read threads score pairs side by side
            self.calls += 1
            self.seconds += elapsed
        return 1.0 / (1.0 + math.exp(-logit))


@cache
def default_pair_model() -> PairModel:
    """The pair model shipped in data/pair_model/."""
    folder = resources.files("staffstore.gate") / "data" / MODEL_DIR
    return PairModel(Path(str(folder)))


def loaded_pair_model() -> PairModel | None:
    """The shipped pair model if this process has loaded it, else None (never loads it)."""
    return default_pair_model() if default_pair_model.cache_info().currsize else None
