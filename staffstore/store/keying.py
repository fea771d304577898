"""An import's keying: each claim's identity and its question's search key, here or beside us.

Normalising questions is about 60% of an import's time (100,000 claims: 5.4 s of 9.5 s on a
2-core machine), and in one process it waits for Python's lock behind the writes on the store's
thread. BatchKeyer therefore hands the questions of a large import to a process of its own
(`python -m staffstore.store.keying`), which normalises batch k + 1 while this process hashes
that batch's claims and writes batch k. Keys are a pure function of the question: either way an
import stores the same rows.

The process speaks a small protocol on its pipes, one request at a time: an 8-byte big-endian
length, then a JSON array of questions; the answer is the same framing around a JSON array of
their keys. It is not `multiprocessing`: that starts a process by importing the caller's main
script again, which runs whatever an unguarded script does at the top (an import, say) twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import struct
import sys
from collections.abc import Awaitable
from pathlib import Path
from types import TracebackType

from ..models import NewClaim
from .async_store import KeyedClaim, key_claims, question_keys
from .rows import claim_id

#: An import of this many claims or more (three of importer.BATCH_SIZE) keys in a process of its
#: own, on a machine with two cores or more. Storing the store benchmark's claims here, two runs
#: each, keyed here / by the helper: 20,000 claims 1.65-1.66 / 1.97-2.10 s, 40,000 3.22-3.69 /
#: 3.14-3.23 s, 60,000 4.92-5.67 / 4.34-5.02 s; the first batch is keyed before anything is
#: written, and the helper takes about 0.6 s to start.
KEY_APART_FROM = 60_000
_LENGTH = struct.Struct(">Q")


class BatchKeyer:
    """Keys an import's batches (key_claims' result): in this process, or, for an import of
    `apart_from` claims or more on a machine with two cores or more, with the questions
    normalised in a process of its own. Use it as an async context manager: the process ends
    with it. Should that process fail, the remaining batches are keyed here."""

    def __init__(self, count: int, *, apart_from: int = KEY_APART_FROM) -> None:
        self._wanted = count >= apart_from and (os.cpu_count() or 1) > 1
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> BatchKeyer:
        if self._wanted:
            try:
                self._process = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", __name__,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    # A failing helper is not the user's error: its batches are keyed here.
                    stderr=asyncio.subprocess.DEVNULL,
                    env=_child_environment(),
                )  # fmt: skip
            except OSError:
                self._process = None
        return self

    @property
    def helper_pid(self) -> int | None:
        """The process id of the process normalising questions; None while they are keyed here."""
        return None if self._process is None else self._process.pid

    async def start(self, batch: list[NewClaim]) -> Awaitable[list[KeyedClaim]]:
        """Begin keying `batch`, one batch at a time: returns once the batch is handed over (or,
        here, keyed), with what to await for its keyed claims, in order."""
        process = self._process
        if process is not None:
            assert process.stdin is not None
            questions = json.dumps([claim.question for claim in batch]).encode()
            try:
                process.stdin.write(_LENGTH.pack(len(questions)) + questions)
                # Drained, so the helper holds every question before this process goes on.
                await process.stdin.drain()
            except OSError:
                await self._stop()
            else:
                return asyncio.ensure_future(self._collect(process, batch))
        done: asyncio.Future[list[KeyedClaim]] = asyncio.get_running_loop().create_future()
        done.set_result(key_claims(batch))
        return done

    async def _collect(
        self, process: asyncio.subprocess.Process, batch: list[NewClaim]
    ) -> list[KeyedClaim]:
        assert process.stdout is not None
        # While the helper normalises: the claims' identities, here.
        ids = [claim_id(claim) for claim in batch]
        try:
            (size,) = _LENGTH.unpack(await process.stdout.readexactly(_LENGTH.size))
            keys = json.loads(await process.stdout.readexactly(size))
            if not isinstance(keys, list) or len(keys) != len(batch):
                raise ValueError("the keying process answered with another count of keys")
        except (OSError, asyncio.IncompleteReadError, ValueError):
            # Killed, out of memory or broken: this batch and the rest are keyed here.
            await self._stop()
            return key_claims(batch)
        return [KeyedClaim(*row) for row in zip(ids, batch, keys, strict=True)]

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()  # its end of input: the helper exits
        try:
            await asyncio.wait_for(process.wait(), timeout=5.0)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is not None and self._process is not None and self._process.returncode is None:
            self._process.kill()  # failed or cancelled: the batch it holds is not wanted
        await self._stop()


def _child_environment() -> dict[str, str]:
    """This environment, with the directory this package was imported from first on the
    helper's path: it must import the same staffstore, not whichever one is installed."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else os.pathsep.join([root, path])}


def _serve() -> None:
    """The helper: answer each framed array of questions with their keys, until input ends."""
    # Ctrl-C reaches the whole process group: the import decides how to stop, and ends this.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    read, write = sys.stdin.buffer, sys.stdout.buffer
    while header := read.read(_LENGTH.size):
        (size,) = _LENGTH.unpack(header)
        answer = json.dumps(question_keys(json.loads(read.read(size)))).encode()
        write.write(_LENGTH.pack(len(answer)) + answer)
        write.flush()


if __name__ == "__main__":
    _serve()
