"""The throwaway PostgreSQL server the PostgreSQL tests run on: real, separate, private, gone.

Each test talks to a real server (the session's, or one of its own) with psycopg, as the
PostgreSQL store will; none of them mocks the server.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

import staffstore.testing.postgres as testing_postgres
from staffstore.processes import running as alive
from staffstore.testing.postgres import ThrowawayPostgres, find_postgres_bin, scratch_root


def scalar(url: str, query: str) -> object:
    with psycopg.connect(url, connect_timeout=5) as connection:
        row = connection.execute(query).fetchone()
    assert row is not None
    return row[0]


def test_the_server_answers_a_query(postgres_server: ThrowawayPostgres) -> None:
    assert postgres_server.url == f"postgresql://postgres@127.0.0.1:{postgres_server.port}/postgres"
    assert scalar(postgres_server.url, "SELECT 1") == 1


def test_each_created_database_is_separate(postgres_server: ThrowawayPostgres) -> None:
    first = postgres_server.create_database()
    second = postgres_server.create_database()
    try:
        assert first != second
        with psycopg.connect(first, autocommit=True) as connection:
            connection.execute("CREATE TABLE t (x int)")
            connection.execute("INSERT INTO t VALUES (1)")
        assert scalar(first, "SELECT count(*) FROM t") == 1
        assert scalar(second, "SELECT to_regclass('t') IS NULL") is True
        assert scalar(first, "SELECT current_database()") != scalar(
            second, "SELECT current_database()"
        )
    finally:
        for url in (first, second):
            postgres_server.drop_database(url.rsplit("/", 1)[1])


def test_a_copy_of_a_template_holds_its_rows_and_is_separate_from_it(
    postgres_server: ThrowawayPostgres,
) -> None:
    template = postgres_server.create_database()
    name = template.rsplit("/", 1)[1]
    with psycopg.connect(template, autocommit=True) as connection:
        connection.execute("CREATE TABLE t (x int)")
        connection.execute("INSERT INTO t VALUES (1), (2)")
    copy = postgres_server.create_database(template=name)
    try:
        assert scalar(copy, "SELECT count(*) FROM t") == 2
        with psycopg.connect(copy, autocommit=True) as connection:
            connection.execute("INSERT INTO t VALUES (3)")
        assert scalar(template, "SELECT count(*) FROM t") == 2
        assert scalar(copy, "SELECT count(*) FROM t") == 3
    finally:
        for url in (copy, template):
            postgres_server.drop_database(url.rsplit("/", 1)[1])


def test_a_named_database_is_dropped_even_with_a_connection_left_open(
    postgres_server: ThrowawayPostgres,
) -> None:
    url = postgres_server.create_database("left_open")
    assert url.endswith("/left_open")
    leftover = psycopg.connect(url)
    try:
        postgres_server.drop_database("left_open")
        exists = "SELECT count(*) FROM pg_database WHERE datname = 'left_open'"
        assert scalar(postgres_server.url, exists) == 0
    finally:
        leftover.close()


def test_the_server_listens_only_on_127_0_0_1(postgres_server: ThrowawayPostgres) -> None:
    assert scalar(postgres_server.url, "SHOW listen_addresses") == "127.0.0.1"
    assert str(scalar(postgres_server.url, "SELECT inet_server_addr()")) == "127.0.0.1"
    # Its unix socket is in its own directory, not in a shared one such as /var/run.
    assert (postgres_server.socket_dir / f".s.PGSQL.{postgres_server.port}").exists()
    if sys.platform == "linux":
        # All of 127/8 reaches this host on Linux: a server bound to every address would
        # accept 127.0.0.2 too.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.2", postgres_server.port), timeout=2).close()


def test_the_test_server_trades_durability_for_speed(postgres_server: ThrowawayPostgres) -> None:
    for setting in ("fsync", "synchronous_commit", "full_page_writes"):
        assert scalar(postgres_server.url, f"SHOW {setting}") == "off"
    assert scalar(postgres_server.url, "SHOW max_connections") == "300"


def test_stop_stops_the_server_and_removes_its_directory(postgres_bin: Path) -> None:
    with ThrowawayPostgres(durable=True, bindir=postgres_bin) as server:
        directory, url = server.directory, server.url
        assert (server.data_dir / "PG_VERSION").exists()
        assert scalar(url, "SHOW fsync") == "on"
        assert scalar(url, "SHOW synchronous_commit") == "on"
        server.stop()
        assert not directory.exists()
        assert not server.running
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=2)
    server.stop()  # again, as leaving the block did: harmless


def test_a_cluster_whose_maker_was_killed_is_stopped_and_removed_by_the_next(
    postgres_bin: Path,
) -> None:
    # A directory the server's user can reach (tmp_path's parents are the test user's alone).
    scratch = Path(tempfile.mkdtemp(prefix="staffstore-sweep-test-"))
    scratch.chmod(0o755)
    script = (
        "import time\n"
        "from pathlib import Path\n"
        "from staffstore.testing.postgres import ThrowawayPostgres\n"
        f"server = ThrowawayPostgres(bindir=Path({str(postgres_bin)!r}), "
        f"scratch=Path({str(scratch)!r})).start()\n"
        "print(server.directory, flush=True)\n"
        "time.sleep(600)\n"
    )
    maker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert maker.stdout is not None
        directory = Path(maker.stdout.readline().strip())
        postmaster = int((directory / "data" / "postmaster.pid").read_text().split()[0])
        # While its maker runs, a cluster is left alone by the next one made beside it.
        with ThrowawayPostgres(bindir=postgres_bin, scratch=scratch):
            assert directory.exists() and alive(postmaster)
        maker.kill()
        maker.wait(30)
        # Killed, the maker left its server running and its files behind ...
        assert alive(postmaster) and directory.exists()
        # ... until the next cluster made there stops and removes them.
        with ThrowawayPostgres(bindir=postgres_bin, scratch=scratch) as after:
            assert after.running and not directory.exists()
            assert not alive(postmaster)
    finally:
        maker.kill()
        testing_postgres.sweep_orphans(scratch, postgres_bin, testing_postgres._run_as_prefix())
        shutil.rmtree(scratch, ignore_errors=True)


def _port_of_127_0_0_1() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_taken_port_is_skipped(postgres_bin: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = iter([busy])
        with ThrowawayPostgres(
            bindir=postgres_bin, ports=lambda: next(ports, None) or _port_of_127_0_0_1()
        ) as server:
            assert server.port != busy
            assert scalar(server.url, "SELECT 1") == 1


def test_store_url_names_an_empty_store_per_backend(
    store_url: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if request.node.callspec.params["store_url"] == "sqlite":
        assert store_url == str(tmp_path / "store.db")
        assert not Path(store_url).exists()
    else:
        assert store_url.startswith("postgresql://postgres@127.0.0.1:")
        tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        assert scalar(store_url, tables) == 0


def make_programs(
    directory: Path, names: tuple[str, ...] = testing_postgres.SERVER_PROGRAMS
) -> None:
    directory.mkdir(parents=True)
    for name in names:
        program = directory / name
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)


def test_find_postgres_bin_prefers_path_and_wants_all_three_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partial, full = tmp_path / "partial", tmp_path / "full"
    make_programs(partial, ("pg_ctl", "postgres"))  # no initdb: not a server directory
    make_programs(full)
    monkeypatch.setenv("PATH", f"{partial}:{full}")
    assert find_postgres_bin() == full


def test_find_postgres_bin_takes_the_newest_debian_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no programs, no pg_config
    debian = tmp_path / "postgresql"
    assert find_postgres_bin(debian) is None
    for version in ("9.6", "15", "13"):
        make_programs(debian / version / "bin")
    assert find_postgres_bin(debian) == debian / "15" / "bin"


def test_a_throwaway_cluster_lives_in_memory_only_where_there_is_room(tmp_path: Path) -> None:
    # tmp_path stands for /dev/shm: a writable directory with a GiB free (this disk has it).
    assert scratch_root(False, tmp_path) == str(tmp_path)
    # The benchmarks' durable cluster stays on disk, and so does one with no such directory.
    assert scratch_root(True, tmp_path) is None
    assert scratch_root(False, tmp_path / "absent") is None
    (tmp_path / "file").write_text("x")
    assert scratch_root(False, tmp_path / "file") is None
