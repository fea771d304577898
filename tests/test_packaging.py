"""The repository as a fresh clone meets it (issue 13): `make` checks the Python before it makes
a venv, and the package metadata (licence, version) is what the files say."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
#: Where a Python older than staffstore needs may be on this machine.
CANDIDATES = [
    *(shutil.which(f"python3.{minor}") for minor in (10, 9, 8)),
    *(str(path) for path in sorted(Path("/root/.pyenv/versions").glob("3.*/bin/python3"))),
]


def old_python() -> str:
    """A Python older than 3.11 that really runs (a pyenv shim may only fail)."""
    for candidate in CANDIDATES:
        if not candidate:
            continue
        try:
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info < (3, 11))"],
                capture_output=True, text=True, timeout=20,
            )  # fmt: skip
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == "True":
            return candidate
    pytest.skip("no Python older than 3.11 on this machine")


def make(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=folder, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_make_with_an_old_python_says_so_and_makes_no_venv(clone: Path) -> None:
    python = old_python()
    done = make(clone, f"PY={python}", ".venv/bin/staffstore")
    assert done.returncode != 0
    assert "needs Python 3.11 or newer" in done.stderr and "make PY=" in done.stderr
    assert not (clone / ".venv").exists()


def test_make_with_a_venv_left_by_an_old_python_says_make_clean(clone: Path) -> None:
    python = old_python()
    subprocess.run([python, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True)
    done = make(clone, ".venv/bin/staffstore")
    assert done.returncode != 0
    assert "make clean" in done.stderr


def test_the_licence_is_an_spdx_string_with_its_text_beside_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert "LICENSE" in project["license-files"]


def staffstore_script() -> str:
    return str(Path(sys.executable).with_name("staffstore"))


def test_version_comes_from_the_package_metadata() -> None:
    import staffstore

    installed = metadata.version("staffstore")
    assert staffstore.__version__ == installed
    done = subprocess.run([staffstore_script(), "--version"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, f"staffstore {installed}\n")


def test_shell_completion_completes_command_names() -> None:
    env = {**os.environ, "_STAFFSTORE_COMPLETE": "complete_bash", "COMP_WORDS": "staffstore cla",
           "COMP_CWORD": "1"}  # fmt: skip
    done = subprocess.run([staffstore_script()], capture_output=True, text=True, env=env)
    assert done.stdout.split() == ["claims"]
    # The shell named, not detected from the processes above the test (typer's own switch for
    # that): a test run without a shell above it, as in the background, detects none.
    named = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = subprocess.run(
        [staffstore_script(), "--show-completion", "bash"],
        capture_output=True,
        text=True,
        env=named,
    )
    assert "_staffstore_completion" in shown.stdout
