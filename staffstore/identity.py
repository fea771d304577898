"""Identity by content: canonical JSON, defined once, and the hashes built on it."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(obj: Any) -> str:
    """The one JSON spelling of a value: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(obj: Any, *, length: int = 32) -> str:
    """A stable hex id for a JSON-able value."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


def bytes_hash(data: bytes) -> str:
    """The address of a stored artifact: the SHA-256 of its bytes."""
    return hashlib.sha256(data).hexdigest()
