"""Whether a process still runs, as the kernel and Linux's /proc tell it."""

from __future__ import annotations

import os
from pathlib import Path


def running(pid: int) -> bool:
    """Whether `pid` runs: it exists and is not a zombie (dead, not yet reaped: it runs
    nothing). Another user's process runs too. Without /proc (macOS), the kernel's answer to
    signal 0 is all there is to go on, and a zombie counts as running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, as another user's
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # gone since the signal, unless no procfs
    except OSError:
        return True
    # The state follows the parenthesised command name; Z and X are dead.
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
