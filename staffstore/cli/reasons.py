"""`--reason`'s check: the reason codes a receipt can carry, which a user cannot guess.

Options typed as a Literal (`--outcome`, `--status`, `--kind`, `--by`, ...) are checked by
typer. A receipt's reason is a set the library extends as it grows, so it is a plain string
checked here: a bad one is a usage error in one line that names the reasons, where it used to
match nothing and print "no receipts".
"""

from __future__ import annotations

import typer

from .app import utf8, with_store

#: The reasons staffstore writes on a receipt: the gate's (gate/query_first.py), a turn's
#: (mouth.py: kept answers and cache controls), the proxy's refusals to look (proxy/wire.py)
#: and its rejected requests' codes (proxy/app.py). A reason some receipt in the store has is
#: taken too, so a code added later is never refused.
RECEIPT_REASONS: tuple[str, ...] = (
    # hits
    "exact", "paraphrase", "exact_repeat",
    # the gate's misses
    "empty", "too_long", "follow_up", "no_candidate", "below_threshold", "changed_requirement",
    "word_order", "stale", "retracted", "conflict", "ambiguous",
    # turns not put to the gate
    "no_cache", "not_a_user_turn", "not_text", "structured_request",
    # requests the proxy rejected
    "invalid_request", "invalid_json", "invalid_text", "invalid_role", "invalid_model",
    "missing_messages", "missing_model", "body_too_large", "body_timeout",
    "storage_quota_exceeded",
)  # fmt: skip


def receipt_reason(ctx: typer.Context, value: str | None) -> str | None:
    """A reason staffstore writes, or one a receipt in the store has; else a usage error."""
    if utf8(value) is None or value in RECEIPT_REASONS:
        return value
    found = with_store(
        ctx, lambda store: store.list_receipts(None, reason=value, limit=1), create=False
    )
    if found:
        return value
    raise typer.BadParameter(
        f"{value!r} is no receipt's reason; the reasons are {', '.join(RECEIPT_REASONS)}"
    )
