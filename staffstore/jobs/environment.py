"""The environment a job's command runs with: an allow-list, never the server's environment.

A job may run what a tenant asked for and its output is kept, so nothing of the dispatcher's
environment reaches it unless named here or by the operator: secrets are withheld whatever
they are called (an upstream key read from a variable of any name, an HMAC key, a cloud
token). The supervisor that runs the command gets the same environment, so the command cannot
read the secrets from its parent either (/proc/PPID/environ is readable by the same user).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: What a command needs to find programs, write temporary files and speak the user's language.
ALLOWED_ENV = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM",
    "TMPDIR", "TMP", "TEMP",
})  # fmt: skip
#: Locale variables (LC_ALL, LC_CTYPE, ...) pass by their prefix.
ALLOWED_PREFIXES = ("LC_",)


def allowed(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a variable of this name may reach a job."""
    return name in ALLOWED_ENV or name.startswith(ALLOWED_PREFIXES) or name in frozenset(extra)


def job_environment(
    source: Mapping[str, str],
    extra: Iterable[str] = (),
    *,
    given: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The allowed variables of `source` (the allow-list and the `extra` names), then `given`
    (staffstore's own STAFFSTORE_* variables for the job) over them."""
    names = frozenset(extra)
    env = {name: value for name, value in source.items() if allowed(name, names)}
    env.update(given or {})
    return env
