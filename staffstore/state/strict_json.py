"""Strict JSON: the one parser, and the one check, for the JSON values staffstore keeps.

Python's json is looser than RFC 8259: it reads NaN and Infinity, turns 1e400 into infinity and
writes all three back as tokens no other reader takes, and recurses once per level of nesting
(100,000 levels is a RecursionError, not a parse error). Here a value is refused with an
InputError a person can read, never echoing the input, when it holds NaN or Infinity, a number
too large for a float, an integer of more than MAX_INT_DIGITS digits, nesting deeper than
MAX_DEPTH, or a lone surrogate (`"\\ud800"` is a valid escape but not text: no UTF-8 output
and no SQLite column holds it). The proxy's request bodies (proxy/wire.py), the CLI's JSON
arguments and schema files, and agent state written from Python all pass through here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from ..errors import InputError

#: The deepest nesting of arrays and objects a value may have. A state, a schema or an OpenAI
#: request (tool schemas included) stays far below it; a deeper one is an attack on a parser.
MAX_DEPTH = 64
#: The longest integer, in digits: Python's own limit for reading one.
MAX_INT_DIGITS = 4_300
_INT_LIMIT = 10**MAX_INT_DIGITS


def loads(raw: bytes | str, what: str = "the JSON") -> Any:
    """`raw` parsed as strict JSON, or InputError saying what is wrong with `what`.

    Lone surrogates are left to `check_text` (so the proxy can answer them with a code of their
    own); `parse` does both.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise InputError(f"{what} is not UTF-8") from None
    # Only text with more brackets than MAX_DEPTH can nest deeper; its depth is read before it
    # is parsed. json.loads recurses once a level down to the interpreter's recursion limit,
    # and a garbage collection that runs down there (in a server, a young one every 100
    # allocations) finalizes other objects with no stack left to do it in.
    if text.count("[") + text.count("{") > MAX_DEPTH and _nests_deeper(text, MAX_DEPTH):
        raise InputError(_too_deep(what))
    try:
        value = json.loads(
            text, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int
        )
    except json.JSONDecodeError as error:
        # The position only: the message must not echo the input back.
        problem = f"{error.msg} at line {error.lineno} column {error.colno}"
        raise InputError(f"{what} is not valid JSON: {problem}") from None
    except _NotJson as error:
        raise InputError(f"{what} is not valid JSON: {error}") from None
    except RecursionError:
        raise InputError(_too_deep(what)) from None
    return value


def check_text(value: Any, what: str = "the JSON") -> Any:
    """`value` (parsed JSON) when every string and key in it is text, else InputError."""
    for item, _ in _walk(value):
        if isinstance(item, str) and not item.isascii():
            _text(item, what)
        elif isinstance(item, dict):
            for key in item:
                if not key.isascii():
                    _text(key, what)
    return value


def parse(raw: bytes | str, what: str = "the JSON") -> Any:
    """`raw` as strict JSON, its strings checked as text: what the CLI reads from a user."""
    return check_text(loads(raw, what), what)


def check(value: Any, what: str = "the value") -> Any:
    """`value` when it is a JSON value strict JSON can hold, else InputError: only dicts with
    string keys, lists, strings, booleans, None, finite floats and integers of at most
    MAX_INT_DIGITS digits, nested at most MAX_DEPTH deep, with no lone surrogate (a tuple
    passes as the list JSON writes it)."""
    for item, depth in _walk(value):
        if isinstance(item, dict | list | tuple) and depth > MAX_DEPTH:
            raise InputError(_too_deep(what))
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                raise InputError(f"{what} has an object key that is not a string")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InputError(f"{what} holds {item!r}, which JSON has no number for")
        elif isinstance(item, int) and not isinstance(item, bool):
            # Compared, not counted with str(): converting a long integer is what fails.
            if abs(item) >= _INT_LIMIT:
                raise InputError(f"{what} holds an integer of more than {MAX_INT_DIGITS} digits")
        elif not isinstance(item, str | bool | list | tuple) and item is not None:
            raise InputError(f"{what} holds a {type(item).__name__}, which is not JSON")
    return check_text(value, what)


#: A JSON string (its escapes included), and a bracket of an array or object.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def _nests_deeper(text: str, limit: int) -> bool:
    """Whether the arrays and objects of JSON text nest more than `limit` deep, read from its
    brackets outside strings, without parsing it (exact for valid JSON)."""
    depth = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _walk(value: Any) -> Iterator[tuple[Any, int]]:
    """Every value inside `value` (itself included) with its depth, without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        yield item, depth
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((child, depth + 1) for child in item)


class _NotJson(ValueError):
    """A number JSON does not have (NaN, Infinity, one too large for a float or too long)."""


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson("a number is too large for a float")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _NotJson(f"an integer has more than {MAX_INT_DIGITS} digits")
    return int(text)


def _too_deep(what: str) -> str:
    return f"{what} is nested more than {MAX_DEPTH} levels deep"


def _text(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"{what} holds a lone surrogate (\\ud800-\\udfff), which is not text"
        ) from None
