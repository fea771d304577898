"""Secret scrubbing: every known secret value, and every recognisable API-key shape, replaced.

A Scrubber holds the values it must never let through: the values of environment variables
(those named in `$STAFFSTORE_SECRET_ENV` or by the caller, the upstream and staffstore keys,
and any variable whose name says it holds a secret, such as GITHUB_TOKEN), plus values a run
marks as secret. It replaces each with REDACTED, longest first, then replaces text shaped like
an API key, a token, a private key or a password in a URL. `scrub_and_cut` scrubs before it
cuts, so a cut can never leave the first half of a secret behind.

The values are held in memory only: never stored, logged, repeated in an error or shown by
repr(). Imports nothing of staffstore's: the standard library is enough.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
#: Where a comma-separated list of more variables to scrub is read from.
SECRET_ENV_VARIABLE = "STAFFSTORE_SECRET_ENV"
#: Variables scrubbed whenever they are set: the keys staffstore itself is given.
DEFAULT_SECRET_ENV = (
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "STAFFSTORE_STATE_KEY",
    "STAFFSTORE_METRICS_KEY",
)
#: A variable whose name holds one of these words is taken for a secret too.
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|PAT|CREDENTIALS?)"
    r"(?:_|$)",
    re.IGNORECASE,
)
#: A named value shorter than this is not scrubbed: replacing every "abc" in a record would
#: garble it and protect nothing. A guessed one (by its variable's name) must be longer still.
MIN_NAMED_CHARS = 4
MIN_GUESSED_CHARS = 12
#: The most characters cut_text keeps of a marker when the limit is smaller than the marker.
CUT = "…[cut]"

# Recognisable shapes. Each is anchored so ordinary words ("task-management-...") do not match.
_SHAPES = [
    # OpenAI, OpenRouter (sk-or-v1-...), Anthropic (sk-ant-...), staffstore's own sk-... keys:
    # at least 16 more characters, one of them a digit.
    r"(?<![A-Za-z0-9])sk-(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9][A-Za-z0-9_\-]{15,}",
    r"(?<![A-Za-z0-9])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
    r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{30,}",
    r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_\-]{20,}",
    r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9\-]{10,}",
    r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])",
    r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{35}",
    r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}",
    # A JSON Web Token: three base64url parts, the first two JSON objects ("eyJ").
    r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    # A private key, to its END line (or to the end of the text, when that line is missing).
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
]
_SHAPE = re.compile("|".join(f"(?:{shape})" for shape in _SHAPES))
#: `Bearer <token>` and a password in a URL keep their frame; only the secret goes.
_BEARER = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=\-]{16,}")
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^/\s@]+(@)")


def secret_env_names(environ: Mapping[str, str], names: Iterable[str] = ()) -> list[str]:
    """The variables whose values are secrets: the defaults, those `$STAFFSTORE_SECRET_ENV`
    lists, and `names`."""
    listed = [name.strip() for name in environ.get(SECRET_ENV_VARIABLE, "").split(",")]
    return sorted({*DEFAULT_SECRET_ENV, *(name for name in listed if name), *names})


class Scrubber:
    """Replaces secret values and key shapes in text (see the module docstring)."""

    def __init__(self, values: Iterable[str] = (), *, shapes: bool = True) -> None:
        kept = {value for value in values if len(value) >= MIN_NAMED_CHARS}
        # Longest first: a secret that holds another is replaced whole, not around its part.
        self._values = tuple(sorted(kept, key=lambda value: (-len(value), value)))
        self._shapes = shapes
        self._pattern = (
            re.compile("|".join(re.escape(value) for value in self._values))
            if self._values
            else None
        )

    @classmethod
    def from_env(
        cls,
        names: Iterable[str] = (),
        *,
        environ: Mapping[str, str] | None = None,
        values: Iterable[str] = (),
        guess: bool = True,
    ) -> Scrubber:
        """A scrubber of the secret variables of `environ` (os.environ by default): those
        secret_env_names gives, and with `guess` every variable whose name says it holds a
        secret (at least MIN_GUESSED_CHARS long); plus `values`."""
        env = os.environ if environ is None else environ
        found = [env[name] for name in secret_env_names(env, names) if env.get(name)]
        if guess:
            found += [
                value
                for name, value in env.items()
                if _SECRET_NAME.search(name) and len(value) >= MIN_GUESSED_CHARS
            ]
        return cls([*found, *values])

    def __repr__(self) -> str:
        # Never the values themselves.
        return f"Scrubber({len(self._values)} values, shapes {'on' if self._shapes else 'off'})"

    def with_values(self, values: Iterable[str]) -> Scrubber:
        """This scrubber with more values (a run's own secrets), as a new one."""
        extra = [value for value in values if value]
        if not extra:
            return self
        return Scrubber([*self._values, *extra], shapes=self._shapes)

    def scrub(self, text: str) -> str:
        """`text` with every secret value, then every key shape, replaced by REDACTED."""
        if self._pattern is not None:
            text = self._pattern.sub(REDACTED, text)
        if self._shapes:
            text = _SHAPE.sub(REDACTED, text)
            text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
            text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
        return text

    def holds_secret(self, text: str) -> bool:
        """Whether scrubbing would change `text`."""
        return self.scrub(text) != text

    def scrub_data(self, value: Any) -> Any:
        """A JSON-like value with every string in it (keys too) scrubbed."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub(str(key)): self.scrub_data(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub_data(item) for item in value]
        return value

    def scrub_and_cut(self, text: str, max_chars: int) -> str:
        """`text` scrubbed, then cut to `max_chars` characters: in that order, so no cut ever
        leaves part of a secret that a whole one would have matched."""
        return cut_text(self.scrub(text), max_chars)


def cut_text(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters, ending in CUT when it was cut."""
    if len(text) <= max_chars:
        return text
    if max_chars <= len(CUT):
        return CUT[:max_chars]
    return text[: max_chars - len(CUT)].rstrip() + CUT
