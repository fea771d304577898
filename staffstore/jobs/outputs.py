"""What a finished local job left, read within its limits: outputs, artifacts and findings.

Each output is read up to `max_output_bytes`, and all of them together up to `max_job_bytes`,
a chunk at a time, so a 300 MiB file costs a few MiB of memory; what is cut ends with a
visible marker, and a `truncated` note names every output that was cut or dropped. Artifacts
come only from regular files with one name inside the job's output folder, opened without
following links: a symbolic link, a FIFO, a device or a hard link to a file elsewhere is
skipped and named in a `skipped` note, never read.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .limits import JobLimits
from .runners import Collected, Finding, Output

#: The outputs that do not make a job substantive on their own: its diagnostics and notes.
INCIDENTAL = frozenset({"stderr", "truncated", "skipped"})
#: A note names this many dropped outputs, then counts the rest.
NAMED_DROPS = 20
_CHUNK = 1 << 20
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
_KINDS = {
    stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
}  # fmt: skip


def marker(written: int, kept: int) -> bytes:
    """What ends an output that was cut: how much was written, and how much is kept."""
    text = f"\n[staffstore: truncated: {written} bytes were written, the first {kept} are kept]\n"
    return text.encode()


def read_head(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from where an open file stands, read a chunk at a time."""
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(_CHUNK, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _lines(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


@dataclass
class _Budget:
    """The bytes a job's outputs may still take, and what was cut or dropped on the way."""

    limits: JobLimits
    left: int = 0
    cut: list[str] = field(default_factory=list)
    drops: int = 0

    def __post_init__(self) -> None:
        self.left = self.limits.max_job_bytes

    def take(self, name: str, fd: int, written: int, kind: str) -> Output | None:
        """The output `name`, open as `fd` and `written` bytes long, cut to what is left."""
        keep = min(written, self.limits.max_output_bytes, self.left)
        if keep <= 0 < written:
            reached = self.limits.max_job_bytes
            self.drop(
                f"{name}: {written} bytes, dropped (the job's outputs reached {reached} bytes)"
            )
            return None
        content = read_head(fd, keep)
        self.left -= len(content)
        if written > len(content):
            self.cut.append(f"{name}: {written} bytes, {len(content)} kept")
            content += marker(written, len(content))
        return Output(name, content, kind)

    def drop(self, line: str) -> None:
        self.drops += 1
        if self.drops <= NAMED_DROPS:
            self.cut.append(line)

    def note(self) -> Output | None:
        lines = list(self.cut)
        if self.drops > NAMED_DROPS:
            lines.append(f"... and {self.drops - NAMED_DROPS} more outputs dropped")
        return Output("truncated", _lines(lines), "note") if lines else None


def collect(job_dir: Path, limits: JobLimits) -> Collected:
    """Everything a finished job left in `job_dir`, within `limits`."""
    budget = _Budget(limits)
    outputs: list[Output | None] = []
    written = _written(job_dir)
    for name in ("stdout", "stderr"):
        fd = _open_regular(job_dir / name)
        if fd is not None:
            with os.fdopen(fd, "rb"):
                # The supervisor keeps only a stream's head (and counts the rest); a job
                # launched before it did kept the whole stream.
                size = max(written.get(name, 0), os.fstat(fd).st_size)
                outputs.append(budget.take(name, fd, size, "text"))
    findings: list[Finding] = []
    error = None
    fd = _open_regular(job_dir / "findings.jsonl")
    if fd is not None:
        with os.fdopen(fd, "rb"):
            size = os.fstat(fd).st_size
            if size > limits.max_output_bytes:
                error = (
                    f"the findings file is larger than the limit of {limits.max_output_bytes} bytes"
                )
            else:
                try:
                    findings = read_findings(read_head(fd, size))
                except ValueError as problem:
                    error = str(problem)
            os.lseek(fd, 0, os.SEEK_SET)
            outputs.append(budget.take("findings.jsonl", fd, size, "findings"))
    skipped: list[str] = []
    for number, (name, fd) in enumerate(_regular_files(job_dir / "out", skipped), start=1):
        with os.fdopen(fd, "rb"):
            if number > limits.max_artifacts:
                budget.drop(f"{name}: dropped (more than {limits.max_artifacts} files)")
                continue
            outputs.append(budget.take(name, fd, os.fstat(fd).st_size, "file"))
    outputs.append(budget.note())
    if skipped:
        outputs.append(Output("skipped", _lines(sorted(skipped)), "note"))
    kept = [output for output in outputs if output is not None]
    return Collected(kept, findings, error, incidental=INCIDENTAL)


def _written(job_dir: Path) -> dict[str, int]:
    """The bytes the command wrote to each stream, as its supervisor counted them."""
    try:
        end = json.loads((job_dir / "end.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    written = end.get("written") if isinstance(end, dict) else None
    if not isinstance(written, dict):
        return {}
    return {name: size for name, size in written.items() if isinstance(size, int)}


def _open_regular(path: Path) -> int | None:
    """`path` open for reading if it is a regular file (not through a link), else None."""
    try:
        fd = os.open(path, _READ)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _regular_files(top: Path, skipped: list[str]) -> Iterator[tuple[str, int]]:
    """Each regular file with one name under `top`, in name order, as (out/NAME, a descriptor
    the caller closes); anything else is named in `skipped`, unopened. Links are not followed:
    every look is made relative to an open folder, with O_NOFOLLOW."""
    try:
        root = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    stack = [(root, "out/", iter(sorted(os.listdir(root))))]
    try:
        while stack:
            folder, prefix, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                os.close(folder)
                stack.pop()
                continue
            name = prefix + entry
            seen = os.stat(entry, dir_fd=folder, follow_symlinks=False)
            kind = stat.S_IFMT(seen.st_mode)
            if kind not in (stat.S_IFREG, stat.S_IFDIR):
                skipped.append(f"{name}: not a regular file ({_KINDS.get(kind, 'unknown')})")
                continue
            if kind == stat.S_IFREG and seen.st_nlink != 1:
                skipped.append(f"{name}: a hard link to a file with other names")
                continue
            try:
                fd = os.open(entry, _READ | (os.O_DIRECTORY if kind == stat.S_IFDIR else 0),
                             dir_fd=folder)  # fmt: skip
            except OSError as error:
                skipped.append(f"{name}: could not be opened ({error.strerror})")
                continue
            if (os.fstat(fd).st_ino, os.fstat(fd).st_mode) != (seen.st_ino, seen.st_mode):
                os.close(fd)  # swapped for something else between the two looks
                skipped.append(f"{name}: changed while it was read")
            elif kind == stat.S_IFDIR:
                stack.append((fd, name + "/", iter(sorted(os.listdir(fd)))))
            else:
                yield name, fd
    finally:
        for folder, _, _ in stack:
            os.close(folder)


def read_findings(data: bytes) -> list[Finding]:
    """Findings from JSON lines of {"question", "answer"[, "expires_at"]}; ValueError if bad."""
    findings = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"findings line {number} is not JSON") from None
        question = item.get("question") if isinstance(item, dict) else None
        answer = item.get("answer") if isinstance(item, dict) else None
        if not (isinstance(question, str) and question.strip()):
            raise ValueError(f"findings line {number} has no question")
        if not (isinstance(answer, str) and answer.strip()):
            raise ValueError(f"findings line {number} has no answer")
        expires = item.get("expires_at")
        try:
            expires_at = datetime.fromisoformat(expires) if isinstance(expires, str) else None
        except ValueError:
            raise ValueError(f"findings line {number} has a bad expires_at") from None
        findings.append(Finding(question, answer, expires_at))
    return findings
