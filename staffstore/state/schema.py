"""The schema an agent declares for its state: fields, the scope kind, the cap, write modes.

Staffstore does not interpret what a state means, but knows its fields, so it can check, mask,
keep, export and erase each one. A schema comes from a pydantic model, a JSON Schema document
(`properties`), or the short form below; `pii` and `retention` ride along on each field:

    {
      "fields": {"step": {"type": "enum", "values": ["sizes", "checkout"]},
                 "offer": {"type": "string"},
                 "cart_note": {"type": "text", "pii": true, "retention": "7d"}},
      "agent_state": {"scope": "conversation", "max_bytes": 16384, "write": "both"},
      "retention": {"state": "30d"}
    }

Retention is "Nd" (days) or "Nh" (hours), or a number of days: a whole state 1-180 days from
its last write (30 by default), a field less, counted from that field's last write.

A JSON Schema document is checked against its draft's metaschema (the `jsonschema` package;
2020-12 unless `$schema` names another) before its properties are read, so `{"enum": 5}` or an
`anyOf` of numbers is an InputError naming where, never a crash. Only a pathlib.Path is read as
a file: a string never is, so text that reached a server cannot name a file on it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InputError
from . import strict_json
from .checks import check_field_name, shown
from .models import SCOPE_KINDS, WRITE_MODES, ScopeKind, WriteMode

FieldType = Literal[
    "string", "text", "enum", "integer", "number", "boolean", "object", "array", "any"
]
DEFAULT_MAX_BYTES = 16_384
MAX_MAX_BYTES = 65_536
DEFAULT_RETENTION_DAYS = 30.0
MAX_RETENTION_DAYS = 180.0
_RETENTION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([dh])\s*$")
#: Keys of a document that describe it without changing the schema.
_DESCRIPTIVE = frozenset(
    {"type", "ownership", "title", "description", "$schema", "$id", "required", "$defs",
     "definitions", "additionalProperties"}
)  # fmt: skip


class FieldSpec(BaseModel):
    """One declared field: its type, whether it holds personal data, how long it is kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: FieldType = "any"
    pii: bool = False
    #: Days the field is kept after its own last write; None keeps it as long as the state.
    retention_days: float | None = Field(default=None, gt=0, le=MAX_RETENTION_DAYS)
    #: The allowed values of an enum.
    values: list[Any] | None = None
    nullable: bool = False

    def accepts(self, value: Any) -> bool:
        """Whether `value` is of this field's type (JSON types, as json.loads makes them)."""
        if value is None:
            return self.nullable or self.type == "any"
        if self.type == "enum":
            return self.values is not None and value in self.values
        checks: dict[str, Any] = {
            "string": str, "text": str, "object": dict, "array": list, "boolean": bool,
        }  # fmt: skip
        if self.type in checks:
            return isinstance(value, checks[self.type])
        if self.type == "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        if self.type == "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        return True


class AgentStateSchema(BaseModel):
    """What an agent's state may hold, what one state belongs to, and how it may be written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fields: dict[str, FieldSpec]
    scope: ScopeKind
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=2, le=MAX_MAX_BYTES)
    write: tuple[WriteMode, ...] = WRITE_MODES
    retention_days: float = Field(default=DEFAULT_RETENTION_DAYS, ge=1, le=MAX_RETENTION_DAYS)

    @field_validator("write")
    @classmethod
    def _some_mode(cls, value: tuple[WriteMode, ...]) -> tuple[WriteMode, ...]:
        if not value:
            raise ValueError("at least one write mode")
        return tuple(mode for mode in WRITE_MODES if mode in value)

    def to_json(self) -> str:
        return self.model_dump_json()


def _brief(value: Any) -> str:
    """A value as an error message may repeat it: cut at 40 characters."""
    return shown(value) if isinstance(value, str) else shown(repr(value))[1:-1]


def retention_days(value: Any, where: str) -> float:
    """ "7d", "12h" or a number of days, as days."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        # An integer of 400 digits is too large for a float: an InputError, not an overflow.
        number = float(value) if abs(value) < 1e300 else math.inf
    elif isinstance(value, str) and (match := _RETENTION.fullmatch(value)):
        number = float(match.group(1)) / (1 if match.group(2) == "d" else 24)
    if number is None or not math.isfinite(number):
        raise InputError(
            f"{where}: retention is 'Nd', 'Nh' or a number of days, not {_brief(value)}"
        )
    return number


def _write_modes(value: Any) -> list[str]:
    if value == "both":
        return list(WRITE_MODES)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return value
    raise InputError(
        f"write is 'cas', 'merge_by_key', 'both' or a list of them, not {_brief(value)}"
    )


def _check_json_schema(document: Mapping[str, Any]) -> None:
    """Refuse a document that is not JSON Schema by its draft's metaschema, saying where."""
    # Imported here: the CLI starts without it (some 90 ms), and only a declaration needs it.
    from jsonschema import exceptions, validators  # type: ignore[import-untyped]

    if not isinstance(document.get("$schema", ""), str):
        raise InputError("$schema must be a string naming a JSON Schema draft")
    validator = validators.validator_for(document, default=validators.Draft202012Validator)
    try:
        validator.check_schema(document)
    except exceptions.SchemaError as error:
        where = "/".join(str(part) for part in error.path) or "the top level"
        problem = error.message if len(error.message) <= 200 else error.message[:200] + "..."
        raise InputError(f"not a valid JSON Schema at {where}: {problem}") from None


def _json_schema_field(name: str, prop: Any) -> dict[str, Any]:
    """A JSON Schema property (as pydantic writes them too) as a FieldSpec's fields."""
    if not isinstance(prop, dict):
        raise InputError(f"property {shown(name)} must be an object")
    pii = prop.get("pii", False)
    if not isinstance(pii, bool):
        raise InputError(f"property {shown(name)}: pii is true or false, not {_brief(pii)}")
    spec: dict[str, Any] = {"pii": pii}
    if "retention" in prop:
        spec["retention_days"] = retention_days(prop["retention"], f"property {shown(name)}")
    options = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(options, list):
        # A boolean is a schema too (true: anything, false: nothing); only objects name types.
        others = [
            option
            for option in options
            if not (isinstance(option, dict) and option.get("type") == "null")
        ]
        spec["nullable"] = len(others) < len(options)
        prop = others[0] if len(others) == 1 and isinstance(others[0], dict) else {}
    kind = prop.get("type")
    if isinstance(kind, list):
        spec["nullable"] = "null" in kind
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if isinstance(prop.get("enum"), list):
        spec.update(type="enum", values=list(prop["enum"]))
    elif "const" in prop:
        spec.update(type="enum", values=[prop["const"]])
    elif "$ref" in prop or kind == "object":
        spec["type"] = "object"
    elif kind in ("string", "integer", "number", "boolean", "array"):
        spec["type"] = kind
    return spec


def _from_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The short form or a JSON Schema document as AgentStateSchema's fields."""
    settings = document.get("agent_state", {})
    if not isinstance(settings, dict):
        raise InputError("agent_state must be an object")
    unknown = sorted(set(settings) - {"scope", "max_bytes", "write", "over_cap", "retention"})
    if unknown:
        raise InputError(f"unknown agent_state setting(s): {', '.join(unknown)}")
    if settings.get("over_cap", "keep_previous") != "keep_previous":
        raise InputError("over_cap is always keep_previous")
    fields: dict[str, dict[str, Any]] = {}
    if "properties" in document:
        _check_json_schema(document)
        properties = document["properties"]
        if not isinstance(properties, dict):
            raise InputError("properties must be an object")
        fields = {
            check_field_name(name): _json_schema_field(name, prop)
            for name, prop in properties.items()
        }
        allowed = {"properties", "agent_state", "retention"}
    else:
        given = document.get("fields")
        if not isinstance(given, dict):
            raise InputError("a schema needs fields (or JSON Schema properties)")
        for name, spec in given.items():
            check_field_name(name)
            if not isinstance(spec, dict):
                raise InputError(f"field {shown(name)} must be an object")
            fields[name] = dict(spec)
            if "retention" in spec:
                fields[name]["retention_days"] = retention_days(
                    fields[name].pop("retention"), f"field {name!r}"
                )
        allowed = {"fields", "agent_state", "retention"}
    unknown = sorted(set(document) - allowed - _DESCRIPTIVE)
    if unknown:
        raise InputError(f"unknown schema member(s): {', '.join(unknown)}")
    result: dict[str, Any] = {"fields": fields}
    retention = document.get("retention", {})
    if not isinstance(retention, dict):
        retention = {"state": retention}
    if "retention" in settings:
        retention = {**retention, "state": settings["retention"]}
    for name, value in retention.items():
        if name == "state":
            result["retention_days"] = retention_days(value, "retention.state")
        elif name in fields:
            fields[name]["retention_days"] = retention_days(value, f"retention.{name}")
        else:
            raise InputError(f"retention names {name!r}, which is not a declared field")
    for name in ("scope", "max_bytes"):
        if name in settings:
            result[name] = settings[name]
    if "write" in settings:
        result["write"] = _write_modes(settings["write"])
    return result


def _read_schema_file(path: Path) -> Any:
    try:
        data = path.expanduser().read_bytes()
    except FileNotFoundError:
        raise InputError(f"no schema file at {path}") from None
    except OSError as error:
        raise InputError(f"cannot read schema file {path}: {error.strerror}") from None
    return strict_json.parse(data, f"schema file {path}")


def load_schema(source: Any, **overrides: Any) -> AgentStateSchema:
    """Read a schema from an AgentStateSchema, a pydantic model class, a JSON document (a
    mapping, or a pathlib.Path of a .json file; never a string, which is not read as a path);
    `overrides` (scope, max_bytes, write, retention) win over what the source says.
    InputError names what is wrong."""
    if isinstance(source, AgentStateSchema):
        document: dict[str, Any] = source.model_dump()
    else:
        if isinstance(source, type) and issubclass(source, BaseModel):
            raw: Any = source.model_json_schema()
        elif isinstance(source, os.PathLike):
            raw = _read_schema_file(Path(source))
        elif isinstance(source, Mapping):
            raw = strict_json.check(dict(source), "the schema")
        elif isinstance(source, str):
            raise InputError(
                "a schema is a JSON object, not a string: a file is read only from a "
                "pathlib.Path (the command line reads one for you)"
            )
        else:
            raise InputError("a schema is a pydantic model, a JSON document or a JSON file")
        if not isinstance(raw, dict):
            raise InputError("a schema document must be a JSON object")
        document = _from_document(raw)
    if "retention" in overrides:
        value = overrides.pop("retention")
        if value is not None:
            overrides["retention_days"] = retention_days(value, "retention")
    if overrides.get("write") is not None:
        overrides["write"] = _write_modes(overrides["write"])
    document.update({name: value for name, value in overrides.items() if value is not None})
    if "scope" not in document:
        raise InputError(f"a schema needs a scope: one of {', '.join(SCOPE_KINDS)}")
    try:
        schema = AgentStateSchema.model_validate(document)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        raise InputError(f"invalid agent-state schema: {problems}") from None
    for name, spec in schema.fields.items():
        if spec.type == "enum" and not spec.values:
            raise InputError(f"field {name!r} is an enum without values")
        if spec.retention_days is not None and spec.retention_days > schema.retention_days:
            raise InputError(f"field {name!r} is kept longer than the state itself")
    return schema
