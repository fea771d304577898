"""The replays' data, read from the `replays/` folder at the top of the repository.

Findings, paraphrases and chatter are data, not code: JSON files that replays/README.md describes
(what each holds, where it came from). They are read when a replay first asks for them, so the
rest of staffstore works from an install that lacks the folder; a replay then fails clearly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InputError

#: The top-level replays/ folder of the source checkout this package is in.
DATA_DIR = Path(__file__).resolve().parents[2] / "replays"


def load(name: str) -> Any:
    """The parsed JSON file `replays/<name>`; an InputError naming the path if it is missing."""
    path = DATA_DIR / name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            f"replay data {path} not found: the replays read their data from the replays/ "
            "folder of a staffstore source checkout"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"replay data {path} is not valid JSON: {error}") from None
