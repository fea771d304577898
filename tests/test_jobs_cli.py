"""`staffstore jobs ...` against a real SQLite file, with real local jobs."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore.cli import app, main

Cli = Callable[..., Result]
FINDING = (
    "import json, os\n"
    "open(os.environ['STAFFSTORE_FINDINGS'], 'a').write(json.dumps("
    "{'question': 'Which tests are flaky?', 'answer': 'test_ledger_order'}) + '\\n')\n"
    "print('scanned')\n"
)
IDENTITY = [
    "--owner", "acme", "--agent", "kernel", "--task", "Find the flaky tests",
    "--repository", "acme/api", "--revision", "3f2a9c1", "--inputs", '{"paths": ["tests/"]}',
]  # fmt: skip


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.delenv("STAFFSTORE_JOBS_DIR", raising=False)
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(app, ["--db", str(tmp_path / "s.db"), *args])

    return invoke


def dispatch(cli: Cli, *extra: str, script: str = FINDING) -> Result:
    return cli("jobs", "dispatch", *IDENTITY, *extra, "--", sys.executable, "-c", script)


def test_dispatch_launches_then_reuses_naming_the_matched_fields(cli: Cli) -> None:
    first = json.loads(ok(dispatch(cli, "--wait", "--json")).stdout)
    second = ok(dispatch(cli, "--wait"))
    assert (first["action"], first["job"]["status"]) == ("launched", "succeeded")
    assert second.stdout.startswith(f"reused job {first['job']['id']} (succeeded): same_identity")
    assert "matched agent, task, repository, profile, revision, inputs" in second.stdout


def test_a_new_revision_launches_and_says_what_changed(cli: Cli) -> None:
    ok(dispatch(cli, "--wait"))
    changed = ok(
        cli("jobs", "dispatch", *IDENTITY[:-4], "--revision", "9c1d2e0", "--inputs",
            '{"paths": ["tests/"]}', "--", sys.executable, "-c", FINDING)
    )  # fmt: skip
    assert "launched job" in changed.stdout
    assert "identity_changed; changed revision since job" in changed.stdout


def test_show_lists_artifacts_and_claims_and_claims_show_names_the_job(cli: Cli) -> None:
    job = json.loads(ok(dispatch(cli, "--wait", "--json")).stdout)["job"]
    shown = ok(cli("jobs", "show", job["id"][:8], "--owner", "acme")).stdout
    assert "artifact  stdout" in shown and f"claim     {job['claim_ids'][0]}" in shown
    claim = json.loads(
        ok(cli("claims", "show", job["claim_ids"][0], "--owner", "acme", "--json")).stdout
    )
    assert (claim["source"], claim["job_id"], claim["job"]["id"]) == ("job", job["id"], job["id"])
    text = ok(cli("claims", "show", job["claim_ids"][0], "--owner", "acme")).stdout
    assert "job                 analyze by kernel, succeeded: Find the flaky tests" in text


def test_attach_and_cancel_a_running_job(cli: Cli) -> None:
    slow = "import time; time.sleep(30)"
    launched = json.loads(ok(dispatch(cli, "--json", script=slow)).stdout)
    job_id = launched["job"]["id"]
    attached = json.loads(ok(cli("jobs", "attach", job_id, "--owner", "acme", "--json")).stdout)
    assert (attached["action"], attached["job"]["status"]) == ("attached", "running")
    assert ok(cli("jobs", "cancel", job_id, "--owner", "acme")).stdout == (
        f"job {job_id} is cancelled\n"
    )
    listed = json.loads(ok(cli("jobs", "list", "--owner", "acme", "--json")).stdout)
    assert [job["status"] for job in listed] == ["cancelled"]


def test_ledger_counts_jobs_launched_reused_and_attached(cli: Cli) -> None:
    ok(dispatch(cli, "--wait"))
    ok(dispatch(cli, "--wait"))
    jobs = json.loads(ok(cli("ledger", "--json")).stdout)["jobs"]
    assert jobs == {"dispatches": 2, "launched": 1, "reused": 1, "attached": 0, "lost": 0}
    assert "1 jobs avoided" in ok(cli("ledger")).stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--inputs", "{not json"], "error: invalid input: inputs are not JSON"),
        (["--inputs", "[1, 2]"], "error: invalid input: inputs must be a JSON object, not list"),
        (["--inputs", '{"x": NaN}'], "error: invalid input: inputs are not JSON (NaN"),
    ],
)
def test_bad_input_is_one_error_line_and_writes_nothing(
    cli: Cli, extra: list[str], message: str
) -> None:
    assert one_line_error(dispatch(cli, *extra)).startswith(message)
    assert ok(cli("jobs", "list", "--owner", "acme", "--json")).stdout == "[]\n"


def test_another_owner_cannot_see_or_attach_a_job(cli: Cli) -> None:
    job_id = json.loads(ok(dispatch(cli, "--wait", "--json")).stdout)["job"]["id"]
    for command in ("show", "attach", "cancel"):
        error = one_line_error(cli("jobs", command, job_id, "--owner", "bob"))
        assert error == f"error: job '{job_id}' was not found for owner 'bob'"
    assert ok(cli("jobs", "list", "--owner", "bob", "--json")).stdout == "[]\n"


def test_an_unknown_kind_is_a_usage_error_and_writes_nothing(
    tmp_path: Path, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--db", str(tmp_path / "s.db"), "jobs", "dispatch", *IDENTITY, "--kind", "deploy"]
    assert main([*args, "--", sys.executable, "-c", FINDING]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: Invalid value for '--kind'") and len(error.splitlines()) == 1
    assert ok(cli("jobs", "list", "--owner", "acme", "--json")).stdout == "[]\n"


def test_dispatch_wait_of_a_command_that_fails_exits_non_zero_with_its_code_and_stderr(
    cli: Cli,
) -> None:
    missing = cli("jobs", "dispatch", *IDENTITY, "--wait", "--", "no-such-command-here")
    assert missing.exit_code == 1
    assert "(failed): first_request" in missing.stdout
    assert "job failed with exit code 127" in missing.stderr
    assert "cannot start 'no-such-command-here'" in missing.stderr
    script = "import sys\nfor n in range(30): print('line', n, file=sys.stderr)\nsys.exit(3)"
    failing = dispatch(cli, "--wait", "--json", script=script)
    assert failing.exit_code == 1
    assert json.loads(failing.stdout)["job"]["exit_code"] == 3
    lines = failing.stderr.splitlines()
    assert lines[0].endswith("job failed with exit code 3; the end of its standard error:")
    assert lines[1:] == [f"  line {n}" for n in range(20, 30)]


def test_a_brand_new_task_launches_as_a_first_request(cli: Cli) -> None:
    ok(dispatch(cli, "--wait"))
    other = [*IDENTITY[:5], "Measure the build cache hit rate", *IDENTITY[6:]]
    new = ok(cli("jobs", "dispatch", *other, "--wait", "--", sys.executable, "-c", FINDING))
    assert new.stdout.startswith("launched job ")
    assert new.stdout.splitlines()[0].endswith("(succeeded): first_request")


def test_list_and_show_read_a_job_that_ended_as_ended(cli: Cli) -> None:
    job = json.loads(ok(dispatch(cli, "--json")).stdout)["job"]
    ended = Path(job["handle"]) / "exit"
    deadline = time.monotonic() + 10
    while not ended.exists():
        assert time.monotonic() < deadline, "the job never ended"
        time.sleep(0.02)
    running = ok(cli("jobs", "list", "--owner", "acme", "--status", "running", "--json"))
    assert running.stdout == "[]\n"
    listed = json.loads(ok(cli("jobs", "list", "--owner", "acme", "--json")).stdout)
    assert [(item["id"], item["status"]) for item in listed] == [(job["id"], "succeeded")]
    shown = json.loads(ok(cli("jobs", "show", job["id"], "--owner", "acme", "--json")).stdout)
    assert (shown["status"], len(shown["claim_ids"])) == ("succeeded", 1)
