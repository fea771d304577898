"""staffstore: a query-first inference cache.

Ask verified durable state before paying for a model call: `query_first` answers a turn from
the owner's claims or misses with a reason; `ensure_mouth` runs a whole turn and writes its
receipt; `StaffStore` holds it all in one SQLite file.
"""

from .errors import (
    CorruptStoreError,
    ImportFileError,
    InputError,
    MissingApiKeyError,
    NotFoundError,
    StaffstoreError,
    StoreError,
    UpstreamError,
    UpstreamStatusError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)
from .gate import query_first
from .models import (
    ChatReply,
    Claim,
    Decision,
    Ledger,
    Message,
    NewClaim,
    Receipt,
    Turn,
    TurnResult,
    WorkingSet,
)
from .mouth import ensure_mouth
from .store import StaffStore
from .upstream import OpenRouter
from .working_set import build_working_set

__all__ = [
    "ChatReply",
    "Claim",
    "CorruptStoreError",
    "Decision",
    "ImportFileError",
    "InputError",
    "Ledger",
    "Message",
    "MissingApiKeyError",
    "NewClaim",
    "NotFoundError",
    "OpenRouter",
    "Receipt",
    "StaffStore",
    "StaffstoreError",
    "StoreError",
    "Turn",
    "TurnResult",
    "UpstreamError",
    "UpstreamStatusError",
    "UpstreamTimeoutError",
    "UpstreamUnreachableError",
    "WorkingSet",
    "build_working_set",
    "ensure_mouth",
    "query_first",
]
