"""The package's public names: sorted, importable, and the core needs no extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

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


def test_a_public_name_loads_its_own_layer_only() -> None:
    # The package's names are imported as they are used: opening a store does not load the
    # gate's tables, numpy or httpx; asking for the gate does.
    code = (
        "import sys, staffstore\n"
        "heavy = ('staffstore.gate', 'numpy', 'httpx')\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "staffstore.StaffStore\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "staffstore.query_first\n"
        "print('staffstore.gate' in sys.modules, staffstore.query_first.__module__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == ["[]", "[]", "True staffstore.gate.query_first"]
    assert "query_first" in dir(staffstore)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        staffstore.no_such_name  # noqa: B018
