"""A throwaway PostgreSQL cluster for tests and benchmarks, made from the server binaries.

ThrowawayPostgres runs `initdb` into a fresh temporary directory (in memory, /dev/shm, when
there is room: see scratch_root) and starts the server with `pg_ctl` on a free port of
127.0.0.1 only, its unix socket inside that directory, so nothing of it is reachable from
another machine or left behind: `stop()` (or leaving the `with` block) stops the server and
deletes the directory. A cluster whose maker was killed before it could do so (SIGKILL) is
stopped and deleted by the next cluster made in the same place (sweep_orphans).
`create_database` gives each test a database of its own, so tests sharing one server (one per
pytest process) cannot see each other's rows.

Nothing here is needed to use a PostgreSQL store: it exists so the PostgreSQL backend is tested
against a real server rather than a mock, on any machine that has the binaries installed.
`create_database` needs psycopg (`staffstore[postgres]`); the rest needs only the binaries.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..processes import running

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStartError", "ThrowawayPostgres", "find_postgres_bin"]

#: The programs a cluster needs; a directory counts only when it holds all three.
SERVER_PROGRAMS = ("initdb", "pg_ctl", "postgres")
#: The owner of the cluster when we run as root: initdb and postgres refuse to run as root.
SYSTEM_USER = "postgres"
#: Where Debian and Ubuntu put each major version's binaries (not on PATH by default).
_DEBIAN_ROOT = Path("/usr/lib/postgresql")
_HOST = "127.0.0.1"
_USER = "postgres"
_MAINTENANCE_DB = "postgres"
_LOG_LINES = 20
#: Attempts at a free port: another process (another pytest worker) may take the port we
#: picked between our probe and the server's bind.
_PORT_ATTEMPTS = 5
_BIND_FAILURES = ("could not bind", "Address already in use", "could not create any TCP/IP")


class PostgresStartError(RuntimeError):
    """The cluster could not be made or started; `log` holds the last lines of what it said."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(f"{message}\n--- last lines of the log ---\n{log}" if log else message)
        self.log = log


def find_postgres_bin(debian_root: Path = _DEBIAN_ROOT) -> Path | None:
    """Return the directory holding `initdb`, `pg_ctl` and `postgres`, or None when absent.

    Looks on PATH first (so a chosen version wins), then at `pg_config --bindir`, then at
    the newest `debian_root`/*/bin: Debian installs the server in /usr/lib/postgresql, off
    PATH.
    """
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and _has_server(Path(entry)):
            return Path(entry)
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        try:
            found = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            found = None
        if found is not None and found.returncode == 0 and found.stdout.strip():
            bindir = Path(found.stdout.strip())
            if _has_server(bindir):
                return bindir
    versions = sorted(
        (_version_key(path.parent.name), path)
        for path in debian_root.glob("*/bin")
        if _has_server(path)
    )
    return versions[-1][1] if versions else None


class ThrowawayPostgres:
    """A PostgreSQL server of our own in a temporary directory, gone once stopped.

    Use it as a context manager (`with ThrowawayPostgres() as server: ...`), or call `start()`
    and later `stop()`; a server never stopped is stopped when the object is collected or the
    interpreter exits. `durable=False` (for tests) turns off what only a crash of the machine
    or of the server would need; benchmarks pass `durable=True` to measure what production
    pays for.
    """

    def __init__(
        self,
        *,
        durable: bool = False,
        bindir: Path | None = None,
        start_timeout: float = 60.0,
        ports: Callable[[], int] | None = None,
        scratch: Path | None = None,
    ) -> None:
        """Prepare a cluster; nothing runs until `start()` or `with`.

        `bindir`: the directory of the server binaries (None: `find_postgres_bin()`).
        `start_timeout`: seconds to wait for initdb, and again for the server to accept
        connections. `ports`: where each attempt's port comes from (None: a free port of
        127.0.0.1, which another process may still take before the server binds it).
        `scratch`: the directory to make the cluster's directory in (None: memory when
        there is room, else the temporary directory; see scratch_root).
        """
        self.durable = durable
        self._scratch = scratch
        self.start_timeout = start_timeout
        self._ports = ports or _free_port
        self._bindir = bindir
        self._directory: Path | None = None
        self._port: int | None = None
        self._finalizer: weakref.finalize[..., ThrowawayPostgres] | None = None

    # Lifecycle.

    def start(self) -> ThrowawayPostgres:
        """Make the cluster and start it; return self. Raises FileNotFoundError when there are
        no server binaries, PostgresStartError when the cluster fails to come up."""
        if self._finalizer is not None:
            raise RuntimeError("this ThrowawayPostgres was already started")
        bindir = self._bindir or find_postgres_bin()
        if bindir is None:
            raise FileNotFoundError(
                "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found on PATH, "
                f"via pg_config --bindir or under {_DEBIAN_ROOT}/*/bin"
            )
        self._bindir = bindir
        run_as = _run_as_prefix()
        root = self._scratch or Path(scratch_root(self.durable) or tempfile.gettempdir())
        sweep_orphans(root, bindir, run_as)
        directory = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=root))
        # Registered at once, so a failure from here on still deletes the directory.
        self._finalizer = weakref.finalize(self, _shut_down, bindir, directory, run_as)
        self._directory = directory
        (directory / _OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
        try:
            self._port = self._make_and_start(bindir, directory, run_as)
        except BaseException:
            self._finalizer()
            raise
        return self

    def stop(self) -> None:
        """Stop the server (`pg_ctl stop -m fast`) and delete its directory; safe to repeat."""
        if self._finalizer is not None:
            self._finalizer()
        self._port = None

    def __enter__(self) -> ThrowawayPostgres:
        return self if self._port is not None else self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # Where it is.

    @property
    def running(self) -> bool:
        """Whether `start()` has succeeded and `stop()` has not been called since."""
        return self._port is not None and self._finalizer is not None and self._finalizer.alive

    @property
    def host(self) -> str:
        """The only address the server listens on."""
        return _HOST

    @property
    def port(self) -> int:
        """The TCP port the server listens on (a free one, picked at start)."""
        if self._port is None:
            raise RuntimeError("the server is not running: call start() first")
        return self._port

    @property
    def directory(self) -> Path:
        """The temporary directory holding the cluster (data/), its socket and its log."""
        if self._directory is None:
            raise RuntimeError("the server was never started")
        return self._directory

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def socket_dir(self) -> Path:
        """Where the server's unix socket is: inside our directory, not in /var/run."""
        return self.directory / "socket"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def bindir(self) -> Path | None:
        """The directory of the server binaries in use (None before start when not given)."""
        return self._bindir

    @property
    def url(self) -> str:
        """The URL of the `postgres` database, as the superuser `postgres` (no password)."""
        return self.database_url(_MAINTENANCE_DB)

    def database_url(self, name: str) -> str:
        """The URL of database `name` on this server (which may not exist)."""
        return f"postgresql://{_USER}@{_HOST}:{self.port}/{quote(name, safe='')}"

    # Databases.

    def create_database(self, name: str | None = None, *, template: str | None = None) -> str:
        """Create a database (a unique name when None), empty or a copy of `template` (a
        database nobody is connected to), and return its URL. Needs psycopg."""
        from psycopg import sql

        name = name or f"test_{uuid.uuid4().hex[:16]}"
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        with self._connect() as connection:
            # PostgreSQL 15 copies a template through the WAL, block by block, unless told to
            # copy its files (the only way before 15) after a checkpoint, which costs little
            # with fsync off: a copy of the migrated staffstore schema (9 MB) took 23-38 ms
            # through the WAL in memory here and 15-19 ms as files, and wrote no 9 MB of WAL
            # into memory each time; the test suite makes a few hundred.
            if (
                template is not None
                and not self.durable
                and connection.info.server_version >= 150000
            ):
                statement += sql.SQL(" STRATEGY FILE_COPY")
            connection.execute(statement)
        return self.database_url(name)

    def drop_database(self, name: str) -> None:
        """Drop database `name` if it exists, closing any connection still open to it (a test's
        leftover connection must not keep its database, and its disk space, alive)."""
        from psycopg import sql

        query = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        with self._connect() as connection:
            connection.execute(query)

    def _connect(self) -> psycopg.Connection[Any]:
        """A connection to the maintenance database outside any transaction (CREATE and DROP
        DATABASE cannot run in one)."""
        import psycopg

        return psycopg.connect(self.url, autocommit=True, connect_timeout=10)

    # Making the cluster.

    def _make_and_start(self, bindir: Path, directory: Path, run_as: list[str]) -> int:
        data, sockets, log = directory / "data", directory / "socket", directory / "server.log"
        sockets.mkdir()
        if run_as:
            user = pwd.getpwnam(SYSTEM_USER)
            for path in (directory, sockets):
                os.chown(path, user.pw_uid, user.pw_gid)
        initdb = [
            *run_as,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "--auth=trust",
            f"-U{_USER}",
            "--encoding=UTF8",
            "--locale=C",
        ]
        if not self.durable:
            initdb.append("--no-sync")  # no waiting for the disk: the files outlive no crash
        made = _run(initdb, directory, self.start_timeout)
        if made.returncode != 0:
            raise PostgresStartError(
                f"initdb failed (exit {made.returncode}) in {directory}", _tail(made.stdout)
            )
        with (data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(_settings(sockets, durable=self.durable))
        for attempt in range(_PORT_ATTEMPTS):
            port = self._ports()
            started = _run(
                [
                    *run_as,
                    str(bindir / "pg_ctl"),
                    "start",
                    "-w",
                    "-t",
                    str(max(1, round(self.start_timeout))),
                    "-D",
                    str(data),
                    "-l",
                    str(log),
                    "-o",
                    f"-p {port}",
                ],
                directory,
                self.start_timeout + 10,
            )
            if started.returncode == 0:
                return port
            said = _read_tail(log) or _tail(started.stdout)
            if attempt + 1 < _PORT_ATTEMPTS and any(text in said for text in _BIND_FAILURES):
                continue
            last = (started.stdout.strip().splitlines() or [""])[-1]
            raise PostgresStartError(
                f"the PostgreSQL server in {directory} did not start "
                f"(pg_ctl exit {started.returncode}): {last}",
                said,
            )
        raise AssertionError("unreachable")  # pragma: no cover


#: Memory-backed scratch space a throwaway cluster may live in, and the room it must have free.
_MEMORY_ROOT = Path("/dev/shm")
_MEMORY_ROOM = 1 << 30


def scratch_root(durable: bool, memory_root: Path = _MEMORY_ROOT) -> str | None:
    """Where a cluster's directory is made: for a throwaway one, `memory_root` (tmpfs) when it
    is a writable directory with a GiB free, else the temporary directory (None).

    On this machine's disk a copy of the 9 MB migrated template took 20-500 ms in probes, most
    of them over 100 ms, and a PostgreSQL test's setup about 0.3 s; in memory a copy took
    15-40 ms, and the test suite makes a few hundred. A container's default /dev/shm (64 MB)
    is too small, and is passed over. A durable cluster (the benchmarks') stays on disk."""
    if durable or not (memory_root.is_dir() and os.access(memory_root, os.W_OK)):
        return None
    try:
        room = os.statvfs(memory_root)
    except OSError:
        return None
    return str(memory_root) if room.f_bavail * room.f_frsize >= _MEMORY_ROOM else None


#: A cluster's directory's name starts with this; the file in it names the process that made it.
_PREFIX = "staffstore-pg-"
_OWNER_FILE = "owner.pid"


def sweep_orphans(root: Path, bindir: Path, run_as: list[str]) -> list[Path]:
    """Stop and delete the clusters under `root` whose maker has died without stopping them
    (a test run killed with SIGKILL leaves its server running and its files behind; in memory
    they would hold the machine's RAM until it restarts). Returns the directories removed.

    A directory whose maker still runs, or that names none (one being made this moment, or
    made before makers were written down), is left alone."""
    removed = []
    for directory in sorted(root.glob(f"{_PREFIX}*")):
        try:
            maker = int((directory / _OWNER_FILE).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue
        if running(maker):
            continue
        _shut_down(bindir, directory, run_as)
        removed.append(directory)
    return removed


def _settings(sockets: Path, *, durable: bool) -> str:
    """The lines appended to postgresql.conf (later lines win over initdb's)."""
    lines = [
        "",
        "# Added by staffstore.testing.postgres: a throwaway cluster, reachable only from here.",
        f"listen_addresses = {_conf_string(_HOST)}",
        f"unix_socket_directories = {_conf_string(str(sockets))}",
        "max_connections = 300",
    ]
    if not durable:
        # Only this throwaway test cluster runs without these: it is deleted when the tests
        # end, and the tests never kill its server process, so no crash recovery ever needs
        # them. Benchmarks pass durable=True so the costs they measure are production's.
        lines += ["fsync = off", "synchronous_commit = off", "full_page_writes = off"]
        # Its files may live in memory (scratch_root): the WAL kept between checkpoints is
        # bounded well under the default 1 GB.
        lines += ["max_wal_size = 256MB"]
    return "\n".join(lines) + "\n"


def _shut_down(bindir: Path, directory: Path, run_as: list[str]) -> None:
    """Stop the server if it runs, then delete its directory: the finalizer of a cluster."""
    data = directory / "data"
    if (data / "postmaster.pid").exists():
        stop = [*run_as, str(bindir / "pg_ctl"), "stop", "-w", "-t", "30", "-D", str(data)]
        try:
            if _run([*stop, "-m", "fast"], directory, 40).returncode != 0:
                _run([*stop, "-m", "immediate"], directory, 40)
        except (OSError, subprocess.SubprocessError):
            pass  # still delete what we can: a finalizer must not raise
    shutil.rmtree(directory, ignore_errors=True)


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a server program with its output (stdout and stderr together) captured.

    The working directory is the cluster's own, which the `postgres` user can enter when we
    run as root. PG* variables are dropped so a developer's PGDATA or PGPORT cannot redirect
    the programs, and messages are in English so a failure to bind is recognised.
    """
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    environment["LC_ALL"] = "C"
    return subprocess.run(
        argv,
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
        check=False,
    )


def _run_as_prefix() -> list[str]:
    """The command prefix that runs a server program as `postgres` when we are root, else []."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is None:
        raise FileNotFoundError(
            "running as root, and initdb refuses root: `runuser` (util-linux) is needed to run "
            f"the server as the {SYSTEM_USER!r} user"
        )
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise FileNotFoundError(
            f"running as root, and initdb refuses root: create a {SYSTEM_USER!r} system user "
            "(installing the postgresql package does) or run as another user"
        ) from None
    return [runuser, "-u", SYSTEM_USER, "--"]


def _has_server(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in SERVER_PROGRAMS)


def _version_key(name: str) -> tuple[int, ...]:
    """`15` -> (15,), `9.6` -> (9, 6): numeric, so 15 sorts after 9.6."""
    return tuple(int(part) for part in re.findall(r"\d+", name))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((_HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _conf_string(value: str) -> str:
    """A postgresql.conf string literal: quotes doubled, backslashes escaped."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-_LOG_LINES:])


def _read_tail(path: Path) -> str:
    try:
        return _tail(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""
