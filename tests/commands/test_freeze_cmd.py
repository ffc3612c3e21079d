"""``patchlane freeze audit`` through the real CLI (in-process, and once as a subprocess)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from patchlane.main import COMMANDS, main
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo, run_patchlane, stderr_lines
from tests.lanes.freeze import project as P


def reports(
    tmp_path: Path, props: dict[str, Any] | None = None, fixture: dict[str, Any] | None = None
) -> list[str]:
    prop_file, fixture_file = tmp_path / "property-report.json", tmp_path / "fixture-report.json"
    prop_file.write_text(json.dumps(props or P.property_report()))
    fixture_file.write_text(json.dumps(fixture or P.fixture_report()))
    return ["--property-report", str(prop_file), "--fixture-report", str(fixture_file)]


def cli(repo: GitRepo, tmp_path: Path, *args: str, **kwargs: Any) -> int:
    argv = ["--repo", str(repo.path), "freeze", "audit", "--base", "main", "--today", "2026-09-24"]
    return main([*argv, *reports(tmp_path, **kwargs), *args])


def test_the_command_is_listed_after_fixture() -> None:
    names = list(COMMANDS)
    assert names.index("freeze") == names.index("fixture") + 1


def test_green_exits_0_and_json_is_what_out_writes(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, P.touch_test())
    out = tmp_path / "freeze-report.json"
    assert cli(repo, tmp_path, "--json", "--out", str(out)) == 0
    printed = capsys.readouterr().out
    data = json.loads(printed)
    jsonschema.validate(data, load_schema("freeze-report"))
    assert data["skippable"] == [P.NODE]
    assert (data["base"], data["head"]) == (repo.git("rev-parse", "main").strip(), repo.head())
    # The same bytes but for the timings.
    written = json.loads(out.read_text())
    del written["timings"], data["timings"]
    assert written == data


def test_human_summary_lists_each_record(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = P.record("stale", nodeid="tests/test_quota.py::test_limit", expires='"2025-01-01"')
    P.make(repo, P.registry(P.record(), stale))
    P.patch(
        repo,
        {
            **P.touch_test(),
            P.REGISTRY: P.registry(P.record(), stale, P.record("new", nodeid=f"{P.TEST_FILE}::t")),
        },
    )
    assert cli(repo, tmp_path) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "freeze: pass: 2 freeze record(s) audited: 1 in play and passing, 1 not in play; "
        "added or changed by the patch (inert, the base decides): new",
        "registry: tests/flaky-freeze.yml (base), 2026-09-24",
        f"  billing-clock-skew {P.NODE}: in_play=true ok=true failed_rules=none "
        "(expires 2026-10-08)",
        "  stale tests/test_quota.py::test_limit: in_play=false ok=false failed_rules=1, 5 "
        "(expires 2025-01-01)",
        "    rule 1: expired on 2025-01-01 (review date 2026-09-24)",
        "    rule 5: not in play: tests/test_quota.py is not changed by the patch and the node "
        "id is not in the failure log",
        "added by the patch (inert): new",
        f"skippable: {P.NODE}",
    ]


def test_red_exits_1(repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, P.touch_test())
    assert cli(repo, tmp_path, props=P.property_report("fail", status="fail")) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "freeze: fail: 1 in-play freeze record(s) fail the audit: billing-clock-skew (rule 3)\n"
    )
    assert f"    rule 3: {P.PROP} failed in {P.MODULE} (fail)\n" in out
    assert "skippable: nothing\n" in out


def test_a_failure_log_brings_a_record_into_play(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    P.make(repo, P.registry(P.record(expires='"2026-09-01"')))
    P.patch(repo, {"src/billing/__init__.py": "X = 1\n"})
    assert cli(repo, tmp_path) == 0  # expired, but not in play
    log = tmp_path / "pytest.txt"
    log.write_text(f"FAILED {P.NODE} - AssertionError\n")
    assert cli(repo, tmp_path, "--failure-log", str(log)) == 1  # in play now: red
    assert "billing-clock-skew (rule 1)" in capsys.readouterr().out


def test_today_defaults_to_the_current_utc_date(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    P.make(repo, P.registry())
    argv = ["--repo", str(repo.path), "freeze", "audit", "--base", "main", "--json"]
    assert main([*argv, *reports(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["today"] == datetime.now(UTC).date().isoformat()


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("bad-registry", (), "patchlane: error: tests/flaky-freeze.yml:6: freezes[0].expires: expected a date"),
        ("ok", ("--today", "2026-02-30"), "argument --today: '2026-02-30' is not a date (YYYY-MM-DD)"),
        ("ok", ("--today", "20260924"), "argument --today: '20260924' is not a date (YYYY-MM-DD)"),
        ("ok", ("--failure-log", "nope.xml"), "patchlane: error: nope.xml: no such file"),
        ("doctype", (), "<!DOCTYPE is refused in a JUnit XML failure log"),
        ("ok", ("--base", "no-such-ref"), "unknown ref 'no-such-ref'"),
    ],
    ids=["bad-registry", "impossible-date", "compact-date", "missing-log", "doctype", "bad-ref"],
)  # fmt: skip
def test_bad_input_exits_2_with_one_line(
    repo: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    setup: str,
    args: tuple[str, ...],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    bad = setup == "bad-registry"
    P.make(repo, P.registry(P.record(expires='"2026-13-01"' if bad else '"2026-10-08"')))
    extra = list(args)
    if setup == "doctype":
        (tmp_path / "junit.xml").write_text('<!DOCTYPE x [<!ENTITY a "b">]><testsuites/>')
        extra += ["--failure-log", "junit.xml"]
    assert cli(repo, tmp_path, *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_reports_are_read_strictly(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    P.make(repo, P.registry())
    assert cli(repo, tmp_path, fixture=P.property_report()) == 2  # a property report as fixture
    assert "'lane' is 'property', expected 'fixture'" in capsys.readouterr().err
    (tmp_path / "dup.json").write_text('{"lane": "property", "lane": "property"}')
    argv = ["--repo", str(repo.path), "freeze", "audit", "--base", "main"]
    code = main(
        [
            *argv,
            "--property-report",
            str(tmp_path / "dup.json"),
            "--fixture-report",
            str(tmp_path / "dup.json"),
        ]
    )
    assert code == 2
    assert "duplicate key 'lane'" in capsys.readouterr().err


def test_the_action_is_required(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--repo", str(repo.path), "freeze"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.slow
def test_as_a_subprocess_the_exit_codes_hold(repo: GitRepo, tmp_path: Path) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, P.touch_test())
    common = ["freeze", "audit", "--base", "main", "--today", "2026-09-24", *reports(tmp_path)]
    green = run_patchlane(*common, cwd=repo.path)
    assert green.returncode == 0, green.stderr
    assert green.stdout.decode().startswith("freeze: pass: ")
    late = run_patchlane(*common[:-4], "--today", "2026-10-09", *common[-4:], cwd=repo.path)
    assert late.returncode == 1
    repo.write(P.REGISTRY, "freezes: {\n")
    repo.commit("break the registry on the branch")
    broken = run_patchlane(*common, "--base", "HEAD", cwd=repo.path)
    assert broken.returncode == 2
    (line,) = stderr_lines(broken)
    assert line.startswith("patchlane: error: tests/flaky-freeze.yml:2: YAML syntax error")
    assert "(the registry in base " in line
