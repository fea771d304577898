"""How `staffstore serve` is configured: flags over a TOML file over the defaults in DEFAULTS.

Client keys map to owners and are held only as SHA-256 hashes: a config may name a key by its
hash (`key_sha256`, or `sha256:HEX` in a flag) or in plain text, which is hashed as it is read
and then dropped. The upstream key comes from the environment and is never written anywhere.
This module needs no web framework; run.py starts the server from a ServeConfig.

A config file (every setting optional; flags win over it):

    [serve]
    host = "127.0.0.1"
    port = 8787
    upstream = "https://openrouter.ai/api/v1"
    upstream_key_env = "OPENROUTER_API_KEY"   # the variable the upstream key is read from
    default_model = "openrouter/auto"         # for requests that name no model (else 400)
    db = "staffstore.db"                      # relative to this file
    working_set = "forward"                   # or "bounded"
    trusted = false                           # true: owner from X-Staffstore-Owner, no keys
    default_owner = "local"                   # the owner in trusted mode without the header
    budget = 4000                             # tokens of a bounded working set
    role = "main"                             # its parts' budgets: supervisor, main, advisor
    max_body_bytes = 8388608
    timeout = 60.0                            # seconds for one upstream call
    upstream_retries = 2
    models_ttl = 60.0                         # seconds GET /v1/models is kept
    log_level = "info"
    access_log = false                        # true: one line per request (see access_log.py)
    access_log_format = "text"                # or "json": one JSON object a line
    access_log_file = "access.log"            # relative to this file (default: stderr)
    # GET /metrics needs this key, else it is off (or metrics_key, or STAFFSTORE_METRICS_KEY)
    metrics_key_sha256 = "f20242b8c9d7b41b4761b25fbd6e1bb8c620a45c9b67e87d399ba6e710d4565b"
    body_timeout = 30.0                       # seconds to send a whole request body (408)
    lock_timeout = 5.0                        # seconds a write waits for another's lock
    max_backlog = 10000                       # turns kept in memory while the store is locked
    quota_bytes = 1073741824                  # text stored per owner (429 beyond); none: no limit
    state_key_env = "STAFFSTORE_STATE_KEY"    # the variable agent state's HMAC key is read from
    handoff_max_bytes = 16384                 # the cap of a structured working-state handoff
    kept_retention_days = 30                  # kept answers older are deleted at startup
    paraphrase_reuse = true                   # false: kept answers serve exact repeats only

    [serve.quotas]                            # owner by owner, over quota_bytes
    alice = 2147483648

    [serve.budgets]                           # a bounded working set's parts, over the role's
    tail = 2000                               # system, claims, story, vault, tail, state, memory

    [serve.jobs]                              # POST /v1/staffstore/jobs/dispatch
    dir = "jobs"                              # each job's folder; relative to this file
    deadline = 30.0                           # seconds an attached job may give no status
    poll_limit = 60                           # ... or this many polls, then it is lost
    timeout = 600.0                           # seconds a command may run, then it is stopped
    max_running = 4                           # unfinished jobs an owner may have (429 beyond)
    max_running_total = 16                    # ... and all owners together
    max_output_bytes = 4194304                # kept of stdout, stderr, each file (then cut)
    max_job_bytes = 16777216                  # kept of all of a job's outputs together
    env = ["CI"]                              # variables a job sees besides the allow-list
    [serve.jobs.commands]                     # what a caller may run, by name; none: off
    scan-flaky = ["/opt/tools/scan-flaky.sh", "--quick"]

    [[serve.owners]]
    owner = "alice"
    key_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    [[serve.owners]]
    owner = "ops"
    key = "sk-local-ops"                      # plain text: hashed when read, never kept
    admin = true                              # may use POST /v1/staffstore/claims
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from ..config import default_db_path
from ..errors import InputError
from ..jobs.limits import DEFAULT_LIMITS
from ..settings import calibrated_gate_budget, check_http_url
from ..state.config import SCOPE_KEY_ENV, check_scope_key
from ..store.location import StoreAddress, store_address
from ..upstream import API_KEY_ENV, DEFAULT_BASE_URL
from ..working_set import DEFAULT_BUDGET, Budgets, budgets_for

WorkingSetMode = Literal["forward", "bounded"]
WORKING_SET_MODES: tuple[WorkingSetMode, ...] = ("forward", "bounded")
AccessLogFormat = Literal["text", "json"]
ACCESS_LOG_FORMATS: tuple[AccessLogFormat, ...] = ("text", "json")

_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_HASH_PREFIX = "sha256:"


@dataclass(frozen=True)
class OwnerKey:
    """Whom a client key speaks for, and whether it may also use the admin endpoints."""

    owner: str
    admin: bool = False


@dataclass(frozen=True)
class ServeConfig:
    """Everything the proxy needs to run. `keys` maps a key's SHA-256 hex digest to its owner."""

    #: The store: a SQLite file's path, or a postgresql:// URL.
    db_path: StoreAddress
    host: str = "127.0.0.1"
    port: int = 8787
    # Out of repr: a password in its userinfo is a secret.
    upstream_url: str = field(default=DEFAULT_BASE_URL, repr=False)
    # Kept out of repr, so a logged or printed config never shows it.
    upstream_key: str | None = field(default=None, repr=False)
    keys: Mapping[str, OwnerKey] = field(default_factory=dict, repr=False)
    #: Single-tenant mode: the owner comes from `X-Staffstore-Owner` (else `default_owner`)
    #: and any client key is accepted. Only for a server that only its owner can reach.
    trusted: bool = False
    default_owner: str = "local"
    #: "forward" sends the client's messages as sent; "bounded" sends the working set.
    working_set: WorkingSetMode = "forward"
    budget: int = DEFAULT_BUDGET
    #: The role whose per-part budgets a bounded working set takes (working_set.ROLE_BUDGETS;
    #: None: only `budget`, the whole prompt's), and parts set over them ("total" among them:
    #: with a role, the role's total applies, not `budget`).
    role: str | None = None
    part_budgets: Mapping[str, int] = field(default_factory=dict)
    #: The gate's error budget for this server's turns (None: the gate's default).
    gate_budget: float | None = None
    max_body_bytes: int = 8 * 1024 * 1024
    timeout: float = 60.0
    upstream_retries: int = 2
    #: How long a fetched GET /v1/models answer is served again, in seconds.
    models_ttl: float = 60.0
    log_level: str = "info"
    #: One line per HTTP request (access_log.py); off by default: it costs a write a request.
    access_log: bool = False
    access_log_format: AccessLogFormat = "text"
    #: Where the access log goes; None: standard error.
    access_log_file: Path | None = None
    #: The SHA-256 of the key GET /metrics needs; None turns /metrics off.
    metrics_key_sha256: str | None = field(default=None, repr=False)
    #: Seconds a client has to send its whole request body (408 after).
    body_timeout: float = 30.0
    #: Seconds a write waits for another process's write lock before its turns go to the
    #: writer's backlog (kept in memory and retried until they land).
    lock_timeout: float = 5.0
    #: The most turns that backlog holds; while it is full, new chat requests get 503.
    max_backlog: int = 10_000
    #: The most bytes of text (questions, answers, session messages, kept answers, claims)
    #: the store may hold for one owner; None: no limit. `quotas` sets it owner by owner.
    quota_bytes: int | None = None
    quotas: Mapping[str, int] = field(default_factory=dict)
    #: Commands a caller may dispatch as jobs, by name (POST /v1/staffstore/jobs/dispatch);
    #: none turns the endpoint off. A caller names a command and never writes one.
    job_commands: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    #: Where the local runner makes each job's folder; None: `jobs` beside the database.
    jobs_dir: Path | None = None
    #: Seconds, and status polls, before an attached job with no status is marked lost.
    job_deadline: float = 30.0
    job_poll_limit: int = 60
    #: Seconds a job's command may run; then its process group is stopped and the job fails.
    job_timeout: float = DEFAULT_LIMITS.timeout
    #: The most unfinished jobs one owner, and all owners together, may have: a dispatch past
    #: either is refused with 429 (nothing is queued: the caller tries again later).
    job_max_running: int = 4
    job_max_running_total: int = 16
    #: Bytes kept of each output of a job, and of all its outputs together (cut with a marker).
    job_max_output_bytes: int = DEFAULT_LIMITS.max_output_bytes
    job_max_job_bytes: int = DEFAULT_LIMITS.max_job_bytes
    #: Environment variables a job sees besides the allow-list (jobs/environment.py); never
    #: the variables the upstream, state or metrics key is read from.
    job_env: tuple[str, ...] = ()
    #: Variables whose values are secrets, scrubbed from workflow memory and scoped state
    #: before they are stored (beside $STAFFSTORE_SECRET_ENV's and the built-in ones).
    secret_env: tuple[str, ...] = ()

    def quota_of(self, owner: str) -> int | None:
        """The storage quota of `owner` in bytes, or None when it has none."""
        return self.quotas.get(owner, self.quota_bytes)

    #: The HMAC key agent-state scope ids are hashed with (from the environment; None turns
    #: the agent-state endpoints off with 503).
    state_key: bytes | None = field(default=None, repr=False)
    #: The UTF-8 byte cap of a structured working-state handoff.
    handoff_max_bytes: int = 16_384
    #: The model of a request that names none; None makes such a request a 400, as OpenAI.
    default_model: str | None = None
    #: Days a kept answer is kept: older ones (and expired ones) are deleted when the server
    #: starts (`staffstore kept prune` does it at any time); None keeps them.
    kept_retention_days: float | None = None
    #: Whether a kept answer may serve a reworded context-free question the gate accepts
    #: (gate/kept_reuse.py); off, kept answers serve exact repeats only and no prompt is kept.
    paraphrase_reuse: bool = True

    def prompt_budget(
        self, role: str | None = None, parts: Mapping[str, int] | None = None
    ) -> int | Budgets:
        """A bounded working set's budget: this server's, with a request's role and parts
        over it (InputError on an unknown role or part)."""
        chosen = role or self.role
        merged: dict[str, int | None] = {**self.part_budgets, **(parts or {})}
        budgets = budgets_for(chosen, None if chosen else self.budget, merged)
        return self.budget if budgets is None else budgets


DEFAULTS = ServeConfig(db_path=Path("staffstore.db"))

# Settings a config file may hold, under [serve]; `owners` is an array of tables.
_FILE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "host": str, "port": int, "upstream": str, "upstream_key_env": str, "db": str,
    "trusted": bool, "default_owner": str, "working_set": str, "budget": int,
    "max_body_bytes": int, "timeout": (int, float), "upstream_retries": int,
    "models_ttl": (int, float), "log_level": str, "access_log": bool, "owners": list,
    "access_log_format": str, "access_log_file": str,
    "metrics_key": str, "metrics_key_sha256": str, "body_timeout": (int, float),
    "lock_timeout": (int, float), "max_backlog": int, "quota_bytes": int, "quotas": dict,
    "jobs": dict, "role": str, "budgets": dict,
    "state_key_env": str, "handoff_max_bytes": int, "default_model": str,
    "kept_retention_days": (int, float), "secret_env": list, "paraphrase_reuse": bool,
}  # fmt: skip
#: The settings a [serve] table may hold, by name (docs/config.md documents each).
FILE_SETTINGS: frozenset[str] = frozenset(_FILE_FIELDS)
#: Those settings that hold a key or its hash: never shown (`staffstore config show`).
SECRET_SETTINGS: frozenset[str] = frozenset({"owners", "metrics_key", "metrics_key_sha256"})
#: The environment variable a metrics key may come from (plain text; hashed when read).
METRICS_KEY_ENV = "STAFFSTORE_METRICS_KEY"


def _secret_env(names: Any) -> tuple[str, ...]:
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise InputError("secret_env must be a list of environment variable names")
    return tuple(names)


def hash_key(key: str) -> str:
    """The SHA-256 hex digest a client key is known by; the key itself is never kept."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_digest(given: str) -> str:
    """The digest for a configured key: `sha256:HEX` names a digest, anything else is hashed."""
    text = given.strip()
    if text.lower().startswith(_HASH_PREFIX):
        digest = text[len(_HASH_PREFIX) :].lower()
        if not _HEX_SHA256.match(digest):
            raise InputError("a key given as sha256:HEX needs 64 hexadecimal digits")
        return digest
    if not text:
        raise InputError("an owner key must not be empty")
    return hash_key(text)


def parse_owner_key(spec: str, *, admin: bool = False) -> tuple[str, OwnerKey]:
    """Read a command-line key, `OWNER=KEY` or `OWNER=sha256:HEX`, as (digest, OwnerKey)."""
    owner, sep, key = spec.partition("=")
    if not sep or not owner.strip() or not key.strip():
        # The spec may hold a key: name its form, not its text.
        raise InputError("an owner key is given as OWNER=KEY or OWNER=sha256:HEX")
    return key_digest(key), OwnerKey(owner.strip(), admin)


def read_config_file(path: Path) -> dict[str, Any]:
    """The `[serve]` table of a TOML file (or the whole file when it has none), checked."""
    try:
        with path.expanduser().open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        raise InputError(f"config file {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"cannot read config file {path}: {error}") from None
    table = document.get("serve", document)
    if not isinstance(table, dict):
        raise InputError(f"{path}: [serve] must be a table")
    unknown = sorted(set(table) - set(_FILE_FIELDS))
    if unknown:
        raise InputError(f"{path}: unknown setting(s) {', '.join(unknown)}")
    for name, value in table.items():
        expected = _FILE_FIELDS[name]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise InputError(f"{path}: {name} has the wrong type ({type(value).__name__})")
    return table


def _file_keys(owners: list[Any], path: Path) -> dict[str, OwnerKey]:
    keys: dict[str, OwnerKey] = {}
    for number, entry in enumerate(owners, 1):
        where = f"{path}: owners entry {number}"
        if not isinstance(entry, dict) or not isinstance(entry.get("owner"), str):
            raise InputError(f"{where} needs an owner name")
        extra = sorted(set(entry) - {"owner", "key", "key_sha256", "admin"})
        if extra:
            raise InputError(f"{where} has unknown field(s) {', '.join(extra)}")
        given = [entry[name] for name in ("key", "key_sha256") if name in entry]
        if len(given) != 1 or not isinstance(given[0], str):
            raise InputError(f"{where} needs exactly one of key or key_sha256")
        digest = key_digest(given[0] if "key" in entry else _HASH_PREFIX + given[0])
        keys[digest] = OwnerKey(entry["owner"], bool(entry.get("admin", False)))
    return keys


def _gate_budget(value: Any) -> float | None:
    """The gate's error budget from a flag or the config file: one it was calibrated at."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"gate_budget must be a number, not {value!r}")
    return calibrated_gate_budget(float(value))


def build_config(
    *,
    config_file: Path | None = None,
    db_path: StoreAddress | None = None,
    host: str | None = None,
    port: int | None = None,
    upstream_url: str | None = None,
    owner_keys: Sequence[str] = (),
    admin_keys: Sequence[str] = (),
    trusted: bool | None = None,
    default_owner: str | None = None,
    working_set: str | None = None,
    budget: int | None = None,
    role: str | None = None,
    gate_budget: float | None = None,
    max_body_bytes: int | None = None,
    timeout: float | None = None,
    upstream_retries: int | None = None,
    models_ttl: float | None = None,
    log_level: str | None = None,
    access_log: bool | None = None,
    access_log_format: str | None = None,
    access_log_file: Path | None = None,
    metrics_key: str | None = None,
    body_timeout: float | None = None,
    lock_timeout: float | None = None,
    default_model: str | None = None,
    upstream_key_env: str | None = None,
    kept_retention_days: float | None = None,
    paraphrase_reuse: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServeConfig:
    """Merge flags (any argument not None) over the config file over the defaults.

    Keys from flags are added to the file's; a key named twice keeps its last owner.
    """
    env = os.environ if environ is None else environ
    table = read_config_file(config_file) if config_file is not None else {}
    keys = _file_keys(table.get("owners", []), config_file) if config_file is not None else {}
    for spec in owner_keys:
        digest, owner = parse_owner_key(spec)
        keys[digest] = owner
    for spec in admin_keys:
        digest, owner = parse_owner_key(spec, admin=True)
        keys[digest] = owner

    def pick(flag: Any, name: str, default: Any) -> Any:
        return flag if flag is not None else table.get(name, default)

    file_db = table.get("db")
    if db_path is None and file_db is not None:
        db_path = store_address(str(file_db))
        if isinstance(db_path, Path) and not db_path.is_absolute() and config_file is not None:
            db_path = config_file.expanduser().parent / db_path
    mode = pick(working_set, "working_set", DEFAULTS.working_set)
    if mode not in WORKING_SET_MODES:
        raise InputError(f"working_set must be one of {', '.join(WORKING_SET_MODES)}")
    log_format = pick(access_log_format, "access_log_format", DEFAULTS.access_log_format)
    if log_format not in ACCESS_LOG_FORMATS:
        raise InputError(f"access_log_format must be one of {', '.join(ACCESS_LOG_FORMATS)}")
    log_file = access_log_file
    if log_file is None and "access_log_file" in table:
        log_file = Path(table["access_log_file"]).expanduser()
        if not log_file.is_absolute() and config_file is not None:
            log_file = config_file.expanduser().parent / log_file
    # Naming a file asks for the log; an explicit access_log = false still turns it off.
    log_on = pick(access_log, "access_log", log_file is not None)
    # The variables the server's own keys come from, as configured and by default: never a job's.
    key_variables = (
        upstream_key_env or table.get("upstream_key_env", API_KEY_ENV),
        table.get("state_key_env", SCOPE_KEY_ENV),
        API_KEY_ENV, SCOPE_KEY_ENV, METRICS_KEY_ENV,
    )  # fmt: skip
    config = ServeConfig(
        db_path=db_path if db_path is not None else default_db_path(env),
        host=pick(host, "host", DEFAULTS.host),
        port=pick(port, "port", DEFAULTS.port),
        upstream_url=pick(upstream_url, "upstream", DEFAULTS.upstream_url),
        upstream_key=env.get(upstream_key_env or table.get("upstream_key_env", API_KEY_ENV))
        or None,
        keys=keys,
        trusted=pick(trusted, "trusted", DEFAULTS.trusted),
        default_owner=pick(default_owner, "default_owner", DEFAULTS.default_owner),
        working_set=cast(WorkingSetMode, mode),
        budget=pick(budget, "budget", DEFAULTS.budget),
        role=pick(role, "role", None),
        part_budgets=_part_budgets(table.get("budgets", {})),
        gate_budget=_gate_budget(pick(gate_budget, "gate_budget", None)),
        max_body_bytes=pick(max_body_bytes, "max_body_bytes", DEFAULTS.max_body_bytes),
        timeout=float(pick(timeout, "timeout", DEFAULTS.timeout)),
        upstream_retries=pick(upstream_retries, "upstream_retries", DEFAULTS.upstream_retries),
        models_ttl=float(pick(models_ttl, "models_ttl", DEFAULTS.models_ttl)),
        log_level=pick(log_level, "log_level", DEFAULTS.log_level),
        access_log=log_on,
        access_log_format=cast(AccessLogFormat, log_format),
        access_log_file=log_file,
        metrics_key_sha256=_metrics_digest(metrics_key, table, env),
        state_key=_state_key(table, env),
        handoff_max_bytes=table.get("handoff_max_bytes", DEFAULTS.handoff_max_bytes),
        body_timeout=float(pick(body_timeout, "body_timeout", DEFAULTS.body_timeout)),
        lock_timeout=float(pick(lock_timeout, "lock_timeout", DEFAULTS.lock_timeout)),
        max_backlog=table.get("max_backlog", DEFAULTS.max_backlog),
        quota_bytes=table.get("quota_bytes", DEFAULTS.quota_bytes),
        quotas=_file_quotas(table.get("quotas", {}), config_file),
        **_jobs_settings(table.get("jobs", {}), config_file, secrets=key_variables),
        default_model=pick(default_model, "default_model", DEFAULTS.default_model) or None,
        kept_retention_days=pick(kept_retention_days, "kept_retention_days", None),
        secret_env=_secret_env(table.get("secret_env", [])),
        paraphrase_reuse=pick(paraphrase_reuse, "paraphrase_reuse", DEFAULTS.paraphrase_reuse),
    )
    _check(config)
    return config


def _file_quotas(quotas: dict[str, Any], path: Path | None) -> dict[str, int]:
    for owner, quota in quotas.items():
        if not isinstance(quota, int) or isinstance(quota, bool) or quota < 1:
            raise InputError(f"{path}: quotas.{owner} must be a number of bytes (1 or more)")
    return dict(quotas)


def _state_key(table: Mapping[str, Any], env: Mapping[str, str]) -> bytes | None:
    """Agent state's scope key from the environment; a short one is refused at startup."""
    variable = table.get("state_key_env", SCOPE_KEY_ENV)
    given = env.get(variable, "")
    return check_scope_key(given.encode("utf-8"), variable) if given else None


#: [serve.jobs] settings that are numbers above 0: (name in the file, ServeConfig field, type).
_JOB_NUMBERS: tuple[tuple[str, str, type], ...] = (
    ("deadline", "job_deadline", float), ("poll_limit", "job_poll_limit", int),
    ("timeout", "job_timeout", float), ("max_running", "job_max_running", int),
    ("max_running_total", "job_max_running_total", int),
    ("max_output_bytes", "job_max_output_bytes", int),
    ("max_job_bytes", "job_max_job_bytes", int),
)  # fmt: skip
#: The settings a [serve.jobs] table may hold.
JOB_SETTINGS: frozenset[str] = frozenset(
    {"dir", "commands", "env", *(name for name, _, _ in _JOB_NUMBERS)}
)


def _jobs_settings(
    table: Mapping[str, Any], path: Path | None, *, secrets: Sequence[str] = ()
) -> dict[str, Any]:
    """The [serve.jobs] table as ServeConfig fields, checked. `secrets` names the variables
    the server's keys come from: a job never sees one, even when the table names it."""
    where = f"{path}: [serve.jobs]"
    unknown = sorted(set(table) - JOB_SETTINGS)
    if unknown:
        raise InputError(f"{where} has unknown setting(s) {', '.join(unknown)}")
    commands = table.get("commands", {})
    if not isinstance(commands, dict) or not all(
        isinstance(argv, list) and argv and all(isinstance(part, str) for part in argv)
        for argv in commands.values()
    ):
        raise InputError(f"{where}: each command must be a non-empty list of strings")
    settings: dict[str, Any] = {
        "job_commands": {name: tuple(argv) for name, argv in commands.items()}
    }
    if "dir" in table:
        folder = Path(str(table["dir"])).expanduser()
        if not folder.is_absolute() and path is not None:
            folder = path.expanduser().parent / folder
        settings["jobs_dir"] = folder
    for name, key, kind in _JOB_NUMBERS:
        if name in table:
            value = table[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise InputError(f"{where}: {name} must be a number above 0")
            if kind is int and not isinstance(value, int):
                raise InputError(f"{where}: {name} must be a whole number")
            settings[key] = kind(value)
    env = table.get("env", [])
    if not isinstance(env, list) or not all(isinstance(name, str) and name for name in env):
        raise InputError(f"{where}: env must be a list of variable names")
    withheld = sorted(set(env) & set(secrets))
    if withheld:
        raise InputError(f"{where}: env names {', '.join(withheld)}, which holds a key of the "
                         "server's own; a job never sees it")  # fmt: skip
    settings["job_env"] = tuple(env)
    return settings


def _part_budgets(value: Any) -> dict[str, int]:
    """[serve.budgets]: a token budget per part, each a whole number (checked in _check)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
        raise InputError("[serve.budgets] holds a whole number of tokens per part")
    return dict(value)


def _metrics_digest(
    flag: str | None, table: Mapping[str, Any], env: Mapping[str, str]
) -> str | None:
    """The metrics key's digest: a flag (`sha256:HEX` or a key), the file, else the environment."""
    if flag is not None:
        return key_digest(flag)
    if "metrics_key_sha256" in table:
        return key_digest(_HASH_PREFIX + table["metrics_key_sha256"])
    if "metrics_key" in table:
        return key_digest(table["metrics_key"])
    from_env = env.get(METRICS_KEY_ENV)
    return key_digest(from_env) if from_env else None


def _check(config: ServeConfig) -> None:
    if not 0 <= config.port <= 65_535:
        raise InputError(f"port {config.port} is not a TCP port")
    try:
        check_http_url(config.upstream_url)
    except ValueError as error:  # its message leaves out the URL, which may hold a password
        raise InputError(f"upstream: {error}") from None
    for name in ("budget", "max_body_bytes"):
        if getattr(config, name) < 1:
            raise InputError(f"{name} must be at least 1")
    # An unknown role or part, or a part below 0, is refused at startup, not at the first turn.
    config.prompt_budget()
    for name in ("timeout", "models_ttl", "lock_timeout"):
        if getattr(config, name) < 0:
            raise InputError(f"{name} must not be negative")
    for name in ("body_timeout", "max_backlog", "handoff_max_bytes"):
        if getattr(config, name) <= 0:
            raise InputError(f"{name} must be more than 0")
    if config.quota_bytes is not None and config.quota_bytes < 1:
        raise InputError("quota_bytes must be at least 1")
    if config.kept_retention_days is not None and not config.kept_retention_days > 0:
        raise InputError("kept_retention_days must be more than 0")
    if config.upstream_retries < 0:
        raise InputError("upstream_retries must not be negative")
    if not config.default_owner.strip():
        raise InputError("default_owner must not be empty")
    if config.trusted and config.keys:
        # In trusted mode the owner comes from a header and any key passes: keys given as
        # well would look like protection and authorise nothing.
        raise InputError(
            "--trusted takes the owner from X-Staffstore-Owner and ignores client keys: "
            "give client keys (--owner-key, --admin-key, owners in the config file) "
            "or --trusted, not both"
        )
    if not config.trusted and not config.keys:
        raise InputError(
            "no client keys: give --owner-key OWNER=KEY (or owners in the config file), "
            "or start in --trusted single-tenant mode"
        )
