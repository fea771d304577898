"""Counting tokens: the model's own tokenizer where one is installed, the stated estimate otherwise.

tiktoken (the `tokens` extra) counts for OpenAI-family models; every other model, and every
OpenAI model when tiktoken or its encoding files are missing, gets four characters a token.
tiktoken fetches an encoding's file on first use; offline that fails, and the estimate is used,
once decided per encoding, so a missing file costs one failed attempt and not one per prompt.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

TokenCounter = Callable[[str], int]

#: Name prefixes of OpenAI's models, also behind an OpenRouter-style "openai/" prefix.
_OPENAI_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "text-embedding-")


def approximate_tokens(text: str) -> int:
    """Four characters a token, rounded up: a deliberately simple, provider-neutral estimate."""
    return (len(text) + 3) // 4


def _openai_name(model: str) -> str | None:
    name = model.removeprefix("openai/").lower()
    return name if name.startswith(_OPENAI_PREFIXES) else None


@functools.cache
def _encoding(name: str) -> Any | None:
    try:
        tiktoken = importlib.import_module("tiktoken")
        return tiktoken.encoding_for_model(name)
    except Exception:  # not installed, an unknown model, or its encoding file not reachable
        return None


def token_counter(model: str | None) -> TokenCounter:
    """The token counter for `model`: tiktoken's for an OpenAI model when it can be loaded,
    else approximate_tokens."""
    name = _openai_name(model) if model else None
    encoding = _encoding(name) if name else None
    if encoding is None:
        return approximate_tokens

    def count(text: str) -> int:
        # disallowed_special=() counts "<|endoftext|>" in a user's text as text, not a refusal.
        return len(encoding.encode(text, disallowed_special=()))

    return count


def counter_name(count: TokenCounter) -> str:
    """How a prompt's tokens were counted, for a record: "estimate" or "tokenizer"."""
    return "estimate" if count is approximate_tokens else "tokenizer"


__all__ = ["TokenCounter", "approximate_tokens", "counter_name", "token_counter"]
