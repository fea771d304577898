"""staffstore: a query-first inference cache.

Ask verified durable state before paying for a model call: `query_first` answers a turn from
the owner's claims or misses with a reason; `ensure_mouth` runs a whole turn and writes its
receipt; `StaffStore` holds it all in one SQLite file; `Staff` makes the same calls without
async, for scripts and notebooks. `WorkingState` keeps an agent's current rules for every
prompt; `AgentState` keeps the state its code writes, under a declared schema. `ScopedState`
keeps a workflow's keys in four namespaces that never fall back; `WorkflowMemory` keeps its
run records and lessons, and the bounded, scrubbed section its next runs read.
"""

from importlib.metadata import PackageNotFoundError, version

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
