"""staffstore: a query-first inference cache.

Ask verified durable state before paying for a model call: `query_first` answers a turn from
the owner's claims or misses with a reason; `ensure_mouth` runs a whole turn and writes its
receipt; `StaffStore` holds it all in one SQLite file; `Staff` makes the same calls without
async, for scripts and notebooks. `WorkingState` keeps an agent's current rules for every
prompt; `AgentState` keeps the state its code writes, under a declared schema. `ScopedState`
keeps a workflow's keys in four namespaces that never fall back; `WorkflowMemory` keeps its
run records and lessons, and the bounded, scrubbed section its next runs read.

The names below are imported when first used (PEP 562), not with the package: the command
line imports `staffstore` for every command, and the gate's tables, numpy and httpx are worth
loading only for the commands that use them.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from .errors import (
    CorruptStoreError,
    ForeignStoreError,
    ImportFileError,
    InputError,
    MissingApiKeyError,
    MissingScopeKeyError,
    MissingStoreError,
    NotFoundError,
    StaffstoreError,
    StoreBusyError,
    StoreError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamStatusError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)

if TYPE_CHECKING:  # what type checkers and editors read; at run time, __getattr__ below
    from .gate import query_first
    from .memory import WorkflowMemory
    from .models import (
        ChatReply,
        Claim,
        Decision,
        KeptFrom,
        Ledger,
        Message,
        NewClaim,
        Receipt,
        Turn,
        TurnResult,
        WorkingSet,
    )
    from .mouth import CachePolicy, ensure_mouth
    from .staff import Staff
    from .state import AgentState, Scope, ScopedState, ScopeRef, WorkingState
    from .store import StaffStore
    from .upstream import OpenRouter
    from .working_set import build_working_set

#: Each public name imported on first use, and the module it comes from.
_LAZY: dict[str, str] = {
    "query_first": ".gate",
    "WorkflowMemory": ".memory",
    **dict.fromkeys(
        (
            "ChatReply",
            "Claim",
            "Decision",
            "KeptFrom",
            "Ledger",
            "Message",
            "NewClaim",
            "Receipt",
            "Turn",
            "TurnResult",
            "WorkingSet",
        ),
        ".models",
    ),
    "CachePolicy": ".mouth",
    "ensure_mouth": ".mouth",
    "Staff": ".staff",
    **dict.fromkeys(("AgentState", "Scope", "ScopedState", "ScopeRef", "WorkingState"), ".state"),
    "StaffStore": ".store",
    "OpenRouter": ".upstream",
    "build_working_set": ".working_set",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'staffstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


try:
    #: The installed distribution's version (pyproject.toml is its one source).
    __version__ = version("staffstore")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AgentState",
    "CachePolicy",
    "ChatReply",
    "Claim",
    "CorruptStoreError",
    "Decision",
    "ForeignStoreError",
    "ImportFileError",
    "InputError",
    "KeptFrom",
    "Ledger",
    "Message",
    "MissingApiKeyError",
    "MissingScopeKeyError",
    "MissingStoreError",
    "NewClaim",
    "NotFoundError",
    "OpenRouter",
    "Receipt",
    "Scope",
    "ScopeRef",
    "ScopedState",
    "Staff",
    "StaffStore",
    "StaffstoreError",
    "StoreBusyError",
    "StoreError",
    "Turn",
    "TurnResult",
    "UpstreamConnectError",
    "UpstreamError",
    "UpstreamStatusError",
    "UpstreamTimeoutError",
    "UpstreamUnreachableError",
    "WorkflowMemory",
    "WorkingSet",
    "WorkingState",
    "build_working_set",
    "ensure_mouth",
    "query_first",
]
