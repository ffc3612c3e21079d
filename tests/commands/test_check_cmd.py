"""``patchlane check`` through the real CLI, on the sample project in a real git repo."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from tests.gitrepo import CLASSIFY_MAP, GitRepo, run_patchlane, stderr_lines
from tests.sample import FIXTURES, LOCK, make_billing_repo

TODAY = "2026-09-24"
REGISTRY = "tests/flaky-freeze.yml"
NODE = "tests/test_billing.py::test_invoice_timestamp_order"


def record(
    rid: str = "clock",
    *,
    nodeid: str = NODE,
    expires: str = "2026-10-01",
    props: str = "[prop_refund_never_exceeds_charge]",
    extra: str = "",
) -> str:
    return (
        f"  - id: {rid}\n"
        f"    nodeid: {nodeid}\n"
        "    owner: billing-team\n"
        "    reason: the clock skews on the runner\n"
        f"    expires: {expires}\n"
        f"    required_properties: {props}\n"
        f"    fixture_lock: {LOCK}\n"
        f"{extra}"
    )


def registry(*records: str) -> str:
    return "freezes:\n" + "".join(records) if records else "freezes: []\n"


def cli(repo: GitRepo, *args: str) -> int:
    return main(["--repo", str(repo.path), "check", "--today", TODAY, *args])


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_a_clean_repository_passes_and_names_what_it_read(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    make_billing_repo(repo)
    repo.write(REGISTRY, registry(record()))
    assert cli(repo) == 0
    (summary,) = lines(capsys)
    assert summary.startswith("check: pass (work tree): review-map.yml, ")
    for name in (LOCK, REGISTRY, "checks/billing_props.py", "2 files under 1 root match"):
        assert name in summary


def test_every_registry_problem_is_reported_with_its_line(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    make_billing_repo(repo)
    repo.write(
        REGISTRY,
        registry(
            record("unknown-key", nodeid="tests/test_billing.py::test_a", extra="    colour: x\n"),
            record("stale", nodeid="tests/test_billing.py::test_b", expires="2026-01-01"),
            record("stale", nodeid="tests/test_billing.py::test_c"),
            record("no-props", nodeid="tests/test_billing.py::test_d", props="[]"),
            record("typo", nodeid="tests/test_billing.py::test_e", props="[prop_refund]"),
        ),
    )
    assert cli(repo) == 2  # a malformed record is bad input, whatever else is red
    out = lines(capsys)
    assert out[:-1] == [
        f"{REGISTRY}:9: freezes[0].colour: unknown key (expected one of: id, nodeid, owner, "
        "reason, expires, required_properties, fixture_lock, failure_log)",
        f"{REGISTRY}:10: stale: rule 1: expired on 2026-01-01 (review date 2026-09-24)",
        f"{REGISTRY}:17: freezes[2].id: 'stale' is already used on line 10",
        f"{REGISTRY}:24: no-props: rule 2: required_properties is empty: a freeze must keep "
        "a property mandatory",
        f"{REGISTRY}:31: typo: rule 3 cannot hold: prop_refund is not a property of the "
        "map's property modules (checks.billing_props)",
    ]
    assert out[-1].startswith("check: error (work tree): 5 problem(s)")


def test_audit_findings_alone_are_red(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    make_billing_repo(repo)
    far = record(expires="2026-12-31", extra="")
    other_lock = far.replace(LOCK, "tests/fixtures/other/LOCK.json")
    repo.write(REGISTRY, registry(other_lock))
    assert cli(repo) == 1
    out = lines(capsys)
    assert out[:2] == [
        f"{REGISTRY}:2: clock: rule 1: expires 2026-12-31, later than 2026-10-08 (review date "
        "2026-09-24 + max_age_days 14)",
        f"{REGISTRY}:2: clock: rule 4 cannot hold: fixture_lock tests/fixtures/other/LOCK.json "
        f"is not a lock of the map ({LOCK})",
    ]


def test_a_changed_fixture_byte_is_red_and_named(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    make_billing_repo(repo)
    path = "tests/fixtures/billing/invoice_min.json"
    repo.write(path, FIXTURES[path].replace("1200", "1201"))
    repo.write("tests/fixtures/billing/new.json", "{}\n")
    assert cli(repo) == 1
    out = lines(capsys)
    hint = "(if intended, run: patchlane fixture lock --reason '...')"
    assert out[:2] == [
        f"{path}: changed: its SHA-256 differs from {LOCK} {hint}",
        f"tests/fixtures/billing/new.json: extra: not listed in {LOCK} {hint}",
    ]
    # --no-fixtures reads the lock but leaves the bytes alone.
    assert cli(repo, "--no-fixtures") == 0


def test_a_bad_lock_and_a_bad_registry_are_both_reported(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    make_billing_repo(repo)
    repo.write(LOCK, '{"files": [{"path": "tests/fixtures/billing/a.json", "sha256": "x"}]}\n')
    repo.write(REGISTRY, "freezes:\n  - id: [\n")
    assert cli(repo) == 2
    out = lines(capsys)
    assert out[0].startswith(f"{LOCK}:1: files[0].sha256: 'x' is not a SHA-256")
    assert out[1].startswith(f"{REGISTRY}:")
    assert "note: fixture bytes not compared: a lock cannot be read" in out


def test_a_missing_map_is_bad_input(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.write("README", "x\n")
    assert cli(repo) == 2
    assert lines(capsys)[0] == (
        "review-map.yml: no such file (run 'patchlane init' to scaffold one)"
    )


def test_a_malformed_map_names_its_line(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    make_billing_repo(repo, review_map="version: 1\nlanes:\n  fixture:\n    pathz: []\n")
    assert cli(repo) == 2
    assert lines(capsys)[0].startswith("review-map.yml:4: ")


def test_a_missing_property_module_points_at_the_map(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    make_billing_repo(repo)
    repo.remove("checks/billing_props.py")
    assert cli(repo) == 2
    assert lines(capsys)[0] == (
        "review-map.yml:5: property module 'checks.billing_props' not found (searched ., src)"
    )


def test_rev_reads_the_commit_not_the_work_tree(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    make_billing_repo(repo)
    repo.write(REGISTRY, registry(record(props="[]")))
    repo.commit("a freeze without a property")
    repo.write(REGISTRY, registry(record()))
    repo.write("tests/fixtures/billing/invoice_min.json", "{}\n")
    assert cli(repo) == 1  # the work tree: the changed fixture
    capsys.readouterr()
    assert cli(repo, "--rev", "HEAD") == 1  # the commit: rule 2
    out = lines(capsys)
    assert out[0].startswith(f"{REGISTRY}:2: clock: rule 2: ")
    assert out[-1].startswith(f"check: fail (commit {repo.head()[:12]}): 1 problem(s)")


def test_json_output(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    make_billing_repo(repo)
    repo.write(REGISTRY, registry(record(props="[]")))
    assert cli(repo, "--json") == 1
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert data["status"] == "fail"
    assert data["problems"] == [
        {
            "file": REGISTRY,
            "line": 2,
            "message": "clock: rule 2: required_properties is empty: a freeze must keep a "
            "property mandatory",
            "kind": "red",
        }
    ]
    assert data["fixture"]["status"] == "pass"
    assert [c["file"] for c in data["checked"]] == [
        "review-map.yml",
        LOCK,
        REGISTRY,
        "checks/billing_props.py",
    ]


def test_a_clean_check_starts_no_process(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_billing_repo(repo)
    repo.write(REGISTRY, registry(record()))
    started: list[Any] = []

    def refuse(self: Any, args: Any, *a: Any, **k: Any) -> None:
        started.append(args)
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    assert cli(repo) == 0
    assert started == []


def test_the_default_date_is_today_and_errors_go_to_stdout_in_a_subprocess(
    repo: GitRepo,
) -> None:
    make_billing_repo(repo)
    past = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    repo.write(REGISTRY, registry(record(expires=past)))
    proc = run_patchlane("check", "-q", cwd=repo.path / "tests")
    assert proc.returncode == 1, proc
    assert stderr_lines(proc) == []
    out = proc.stdout.decode().splitlines()
    assert out == [f"{REGISTRY}:2: clock: rule 1: expired on {past} (review date "
                   f"{datetime.now(UTC).date().isoformat()})"]  # fmt: skip


def test_outside_a_repository_is_one_error_line(tmp_path: Path) -> None:
    proc = run_patchlane("check", cwd=tmp_path)
    assert proc.returncode == 2
    (line,) = stderr_lines(proc)
    assert "not inside a git repository" in line


def test_tests_as_properties_are_noted_only_when_a_record_needs_them(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # With lanes.property.tests, the required properties cannot be known without pytest;
    # with no freeze record there is nothing to check, so nothing to note.
    with_tests = CLASSIFY_MAP.replace(
        '    module: "checks.billing_props"\n',
        '    module: "checks.billing_props"\n    tests: ["tests/test_billing.py"]\n',
    )
    make_billing_repo(repo, review_map=with_tests)
    repo.write(REGISTRY, registry())
    assert cli(repo) == 0
    assert not any("required properties not checked" in line for line in lines(capsys))
    repo.write(REGISTRY, registry(record()))
    assert cli(repo) == 0
    assert any("required properties not checked" in line for line in lines(capsys))
