"""The package's public names: sorted, importable, and the core needs no extra."""

from __future__ import annotations

import subprocess
import sys

import staffstore


def test_all_is_sorted_and_every_name_exists() -> None:
    assert staffstore.__all__ == sorted(staffstore.__all__)
    assert all(hasattr(staffstore, name) for name in staffstore.__all__)


def test_importing_the_package_loads_neither_the_server_nor_the_charts() -> None:
    code = (
        "import sys, staffstore; print(any(m in sys.modules for m in ('starlette', 'matplotlib')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
