"""The working-state section: an agent's live keys and handoff as the tail of its prompt.

The section says it is the only authoritative record of current values, so a number in a note
or an earlier message that contradicts it reads as superseded. It goes after everything a
provider caches as a prefix, so it never breaks the cache. It holds at most `max_bytes` UTF-8
bytes (3 KB by default): reasons are shortened first, then the handoff, then the keys set
longest ago are left out with a line that counts them. No keys and no handoff: no section.

Every key, value, reason and handoff field is written as one line of its own text (`one_line`):
a newline or another control character in it is shown as an escape such as `\\n`, so a note
that holds "\\n- stop_loss = 1" cannot put a line beside the real value, whenever and however
it was stored; and each is cut at a cap, ending in a marker that says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from .checks import is_control
from .models import Handoff, StateEntry

HEADER = (
    "## Working state (authoritative current values)\n"
    "These are your current rules and commitments, valid across wake-ups. They are the only "
    "authoritative current values: a value in notes, journals, documents or earlier messages "
    "that contradicts them is superseded and must not be used. They change only through an "
    "explicit working-state set with a reason."
)
#: Reasons are cut to this many characters when the whole section does not fit.
SHORT_REASON = 60
_CUT = "…"
#: The most characters a key, value or reason takes in the section, escapes included: more
#: than checks.py lets in, so only text stored some other way is ever cut here.
FIELD_CHARS = 320
#: The same for each handoff field: more than the section holds by default, so a long handoff
#: is cut by the section's budget, with its pointer to the whole of it.
HANDOFF_FIELD_CHARS = 4_000
#: What ends a field cut at its cap.
FIELD_CUT = "…[cut]"
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_HANDOFF_CUT = " … [cut here; read the whole handoff with working-state get]"
_HANDOFF_ELSEWHERE = "Handoff: too long to show here; read it with working-state get."


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def clip_bytes(text: str, limit: int, marker: str = _CUT) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, ending in `marker` when cut."""
    if utf8_len(text) <= limit:
        return text
    room = limit - utf8_len(marker)
    if room <= 0:
        return ""
    # Cutting the bytes may split a character; dropping the broken tail keeps valid UTF-8.
    return text.encode("utf-8")[:room].decode("utf-8", errors="ignore").rstrip() + marker


def one_line(text: str, max_chars: int = FIELD_CHARS) -> str:
    """`text` as one line of the section: each control character (a newline, U+2028, a bidi
    override, ...) written as an escape (`\\n`, `\\u2028`), the whole cut at `max_chars`
    characters ending in FIELD_CUT when it is longer."""
    if len(text) <= max_chars and not any(is_control(ch) for ch in text):
        return text
    parts = [_escape(ch) if is_control(ch) else ch for ch in text]
    if sum(len(part) for part in parts) <= max_chars:
        return "".join(parts)
    kept: list[str] = []
    used = 0
    for part in parts:  # whole escapes only: a cut "\\u20" would read as other text
        if used + len(part) > max_chars - len(FIELD_CUT):
            break
        kept.append(part)
        used += len(part)
    return "".join(kept).rstrip() + FIELD_CUT


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def entry_line(entry: StateEntry, reason_chars: int | None = None) -> str:
    """`- key = value (set WHEN; reason: WHY; until WHEN)`."""
    reason = one_line(entry.reason)
    if reason_chars is not None and len(reason) > reason_chars:
        reason = reason[: reason_chars - 1].rstrip() + _CUT
    parts = [f"set {_when(entry.set_at)}", f"reason: {reason}"]
    if entry.expires_at is not None:
        parts.append(f"until {_when(entry.expires_at)}")
    return f"- {one_line(entry.key)} = {one_line(entry.value)} ({'; '.join(parts)})"


def handoff_line(handoff: Handoff) -> str:
    """`Handoff (left WHEN): NOTE (status=...; next steps: ...; evidence: ...; blocker: ...)`."""
    line = f"Handoff (left {_when(handoff.set_at)}):"
    if handoff.note:
        line += f" {one_line(handoff.note, HANDOFF_FIELD_CHARS)}"
    details = []
    if handoff.status is not None:
        details.append(f"status={handoff.status}")
    for label, value in (
        ("next steps", handoff.next_steps),
        ("evidence", handoff.evidence),
        ("blocker", handoff.blocker),
    ):
        if value:
            details.append(f"{label}: {one_line(value, HANDOFF_FIELD_CHARS)}")
    if details:
        line += f" ({'; '.join(details)})"
    return line


def _left_out(count: int, handoff: bool) -> str:
    also = " and the handoff" if handoff else ""
    plural = "s" if count != 1 else ""
    return f"- ({count} more key{plural}{also} not shown here: read them with working-state get)"


def render_section(
    entries: Sequence[StateEntry], handoff: Handoff | None, *, max_bytes: int = 3_072
) -> str:
    """The section for these live entries (newest first) and handoff, within `max_bytes`.

    Returns "" when there is nothing to say, or when not even the header fits.
    """
    if not entries and handoff is None:
        return ""

    def join(lines: Sequence[str]) -> str:
        return "\n".join([HEADER, *lines])

    handoff_text = handoff_line(handoff) if handoff is not None else None
    full = [entry_line(entry) for entry in entries]
    for lines in (full, [entry_line(entry, SHORT_REASON) for entry in entries]):
        whole = join([*lines, handoff_text] if handoff_text else lines)
        if utf8_len(whole) <= max_bytes:
            return whole
    short = [entry_line(entry, SHORT_REASON) for entry in entries]
    if utf8_len(join(short)) <= max_bytes:
        if handoff_text is None:
            return join(short)
        # The handoff gets what the keys leave, cut with a pointer to the whole of it.
        room = max_bytes - utf8_len(join(short)) - 1
        if room >= utf8_len(_HANDOFF_CUT) + 40:
            return join([*short, clip_bytes(handoff_text, room, _HANDOFF_CUT)])
        pointer = join([*short, _HANDOFF_ELSEWHERE])
        return pointer if utf8_len(pointer) <= max_bytes else join(short)
    # The keys alone do not fit: keep the most recently set, count the rest.
    for kept in range(len(short) - 1, -1, -1):
        lines = [*short[:kept], _left_out(len(short) - kept, handoff_text is not None)]
        if utf8_len(join(lines)) <= max_bytes:
            return join(lines)
    return ""
