"""Assertions shared by the tests that drive the command line."""

from __future__ import annotations

from typer.testing import Result


def ok(result: Result) -> Result:
    """The result of a command that must have succeeded."""
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def one_line_error(result: Result) -> str:
    """The single `error: ...` line a failed command prints, after checking it is the only one."""
    assert result.exit_code != 0
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]
