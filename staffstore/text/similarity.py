"""How alike two words are, and two short texts.

Exact forms first, because they are certain: the same folded word, a slip of the keyboard that
makes no other common word, letters swapped, a numeronym ("k8s"), a prefix or suffix form
("prod"/"production", "defined"/"definition", "scaling"/"autoscaling"), an abbreviation made of
the word's letters ("db", "hrs"). Otherwise the cosine of two static embeddings: WordLlama's
256-dimensional token embeddings (MIT licence; the weights ship inside the `wordllama` wheel,
so nothing is downloaded at run time), which say how related two words are, not whether they
are interchangeable; the gate's score treats them as evidence, never as proof.
"""

from __future__ import annotations

import importlib.util
import json
import re
import struct
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from .slots import is_subsequence, numeronym_of, same_identifier
from .spelling import same_word
from .words import Word

Vector = npt.NDArray[np.float32]

_NOT_DIGITS = re.compile(r"\D")


def _digits(text: str) -> str:
    return _NOT_DIGITS.sub("", text)


# "advantages" / "disadvantages" is not one word with a prefix: these prefixes negate.
_NEGATING_PREFIXES = frozenset({"dis", "un", "in", "im", "il", "ir", "non", "mis", "anti", "de"})


#: WordLlama's files inside its wheel: the tokenizer and the 256-dimensional token embeddings.
_WORDLLAMA_TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
_WORDLLAMA_WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
_WORDLLAMA_TENSOR = "embedding.weight"


def _wordllama_folder() -> Path:
    # Found, not imported: importing wordllama calls logging.basicConfig(level=INFO), a root
    # handler on stderr that would print every upstream request httpx sends, URL and all.
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the wordllama package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _mapped_tensor(path: Path, name: str) -> npt.NDArray[np.float16]:
    """One float16 tensor of a safetensors file, mapped rather than read: its pages are the
    file's, shared by every process of the machine and never copied into this one's heap.

    The format is an 8-byte little-endian header length, a JSON header giving each tensor's
    dtype, shape and byte range, then the data."""
    with path.open("rb") as handle:
        (header_length,) = struct.unpack("<Q", handle.read(8))
        entry = json.loads(handle.read(header_length))[name]
    if entry["dtype"] != "F16":
        raise ValueError(f"{path}: {name} is {entry['dtype']}, not F16")
    start, _end = entry["data_offsets"]
    return np.memmap(
        path, dtype="<f2", mode="r", offset=8 + header_length + start, shape=tuple(entry["shape"])
    )


@cache
def _table() -> tuple[Tokenizer, npt.NDArray[np.float16]]:
    """WordLlama's tokenizer and its token embeddings, for the pooled embedding done here one
    text at a time: WordLlama's `embed` pays about a millisecond of batching per call, this
    about twenty microseconds.

    The rows stay float16 as shipped (16 MB, mapped) and are widened to float32 only when a
    text's few rows are pooled. WordLlama itself widens the whole table on load, 31 MB more of
    each process's heap, to the same float32 values: the vectors are identical to its own."""
    folder = _wordllama_folder()
    tokenizer = Tokenizer.from_file(str(folder / _WORDLLAMA_TOKENIZER))
    return tokenizer, _mapped_tensor(folder / _WORDLLAMA_WEIGHTS, _WORDLLAMA_TENSOR)


def _embed(text: str) -> Vector:
    tokenizer, table = _table()
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    if not ids:
        return np.zeros(table.shape[1], dtype=np.float32)
    rows = table[np.clip(ids, 0, table.shape[0] - 1)].astype(np.float32)
    pooled: Vector = rows.mean(axis=0)
    norm = float(np.linalg.norm(pooled))
    return pooled / norm if norm else pooled


# Each vector costs about 1.2 KB (256 float32 and its key), and text brings new words without
# end (identifiers, hashes, ticket numbers): 16,384 hold a team's working vocabulary in 19 MiB,
# where 200,000 could hold 221; a word not held costs about 20 microseconds to embed again. An
# lru_cache, not a dict trimmed by hand: lookups run on several threads, and two threads
# trimming one dict both dropped its oldest key, and the second raised KeyError.
@lru_cache(maxsize=16_384)
def word_vector(word: str) -> Vector:
    return _embed(word)


# Whole texts seldom recur (ledgers/bench-gate-caches.json: 7.8% of calls hit over its 17,000
# lookups) and each vector costs 1.3 KB: a few turns' worth, not 65,536 texts' 81 MiB.
@lru_cache(maxsize=1_024)
def text_vector(text: str) -> Vector:
    return _embed(text)


#: A word the tokenizer cuts into more pieces than this has no embedding of its own: the mean of
#: its pieces ("zerv", "ode", "x", "ios") makes two unrelated rare names look alike.
MAX_PIECES = 2


@lru_cache(maxsize=65_536)  # about 80 bytes a word
def pieces(word: str) -> int:
    tokenizer, _table_rows = _table()
    return len(tokenizer.encode(word, add_special_tokens=False).ids)


def cosine(a: str, b: str) -> float:
    """Embedding cosine of two words, 0 when they point apart or either has no embedding of
    its own (see MAX_PIECES)."""
    if pieces(a) > MAX_PIECES or pieces(b) > MAX_PIECES:
        return 0.0
    return max(0.0, float(word_vector(a) @ word_vector(b)))


def text_cosine(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    return float(text_vector(a) @ text_vector(b))


# Two words' forms: 48% of calls hit at 65,536 entries and at 400,000 alike (10,000 turns at
# 100,000 claims), and each entry is an object the frozen heap keeps.
@lru_cache(maxsize=65_536)
def form_similarity(a: Word, b: Word) -> float:
    """How surely two words are one word written two ways (0 when the form says nothing)."""
    if a.key == b.key:
        return 1.0
    sa, sb = a.surface, b.surface
    # One identifier written two ways, by the slots' reading ("notifcation-worker"); the digits
    # must agree, since two numbers are two things ("exp-320" / "exp-321").
    if a.kind == b.kind == "id" and _digits(sa) == _digits(sb) and same_identifier(sa, sb):
        return 0.95
    # A slip keeps the length within two letters (and, nearly always, the first letter).
    if abs(len(sa) - len(sb)) <= 2 and sa[:1] == sb[:1] and same_word(a.key, sa, b.key, sb):
        return 0.95
    short, long = (sa, sb) if len(sa) <= len(sb) else (sb, sa)
    if len(sa) == len(sb) >= 4 and sorted(sa) == sorted(sb) and sa[0] == sb[0]:
        return 0.9  # letters swapped: "modle" / "model"
    if numeronym_of(short, long):
        return 0.95  # "k8s" / "kubernetes"
    if len(short) >= 3 and long.startswith(short):
        return 0.85  # "prod" / "production"
    common = 0
    while common < len(short) and short[common] == long[common]:
        common += 1
    if common >= 5 and common >= 0.7 * len(short):
        return 0.85  # "defined" / "definition", "promoting" / "promotion"
    prefix = long[: len(long) - len(short)]
    if len(short) >= 5 and long.endswith(short) and prefix not in _NEGATING_PREFIXES:
        return 0.85  # "scaling" / "autoscaling"
    abbreviation = 2 <= len(short) <= 5 and short[0] == long[0] and len(long) >= len(short) + 2
    if abbreviation and is_subsequence(short, long):
        return 0.7  # "hrs" / "hours", "feats" / "features", "db" / "database"
    return 0.0


def similarity(a: Word, b: Word) -> float:
    """The surer of the two: the form, else the embedding."""
    by_form = form_similarity(a, b)
    return by_form if by_form > 0.0 else cosine(a.surface, b.surface)
