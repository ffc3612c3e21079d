"""The freeze-skip pytest plugin, driven by real pytest runs of real test files (``pytester``).

Every test file the inner runs collect fails on purpose, so an item either shows up as skipped
(the plugin let it off) or as failed (it did not): nothing can pass by accident. In-process runs
(``inline_run``/``runpytest``) are used for speed and for exact per-node outcomes; the subprocess
runs prove that the installed ``pytest11`` entry point, not ``-p``, loads the plugin.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from patchlane.errors import ReportError
from patchlane.formats.freeze_report import FreezeReport
from patchlane.pytest_plugin import load_freeze_grant, skip_reason

pytest_plugins = ["pytester"]

USAGE_ERROR = pytest.ExitCode.USAGE_ERROR  # 4

TEST_FILE = """\
import pytest


def test_a():
    assert False, "flaky"


def test_ab():
    assert False


@pytest.mark.parametrize("n", [1, 2, 3])
def test_p(n):
    assert False


class TestC:
    def test_m(self):
        assert False

    def test_n(self):
        assert False


@pytest.mark.skip(reason="its own reason")
def test_own_skip():
    assert False
"""

A = "tests/test_x.py::test_a"
AB = "tests/test_x.py::test_ab"
P = [f"tests/test_x.py::test_p[{n}]" for n in (1, 2, 3)]
M = "tests/test_x.py::TestC::test_m"
N = "tests/test_x.py::TestC::test_n"
OWN = "tests/test_x.py::test_own_skip"
ALL_FAILING = {A, AB, *P, M, N}


def record(
    freeze_id: str,
    nodeid: str,
    *,
    in_play: bool = True,
    ok: bool = True,
    expires: str | None = "2026-10-08",
    failed_rules: list[int] | None = None,
) -> dict[str, Any]:
    """A freeze report record whose ``failed_rules`` agree with ``in_play`` and ``ok``."""
    if failed_rules is None:
        failed_rules = ([] if in_play else [5]) + ([] if ok else [1])
    return {
        "id": freeze_id,
        "nodeid": nodeid,
        "owner": "qa-rotation",
        "expires": expires,
        "in_play": in_play,
        "ok": ok,
        "failed_rules": failed_rules,
        "details": {},
    }


def report(*records: dict[str, Any], status: str = "pass") -> dict[str, Any]:
    """A freeze report in the audit's shape, ``skippable`` consistent with the records."""
    return {
        "lane": "freeze",
        "status": status,
        "reason": "test report",
        "today": "2026-10-01",
        "records": list(records),
        "skippable": [r["nodeid"] for r in records if r.get("in_play") and r.get("ok")],
    }


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with an ini file (so the rootdir, and hence node ids, are fixed) and
    ``tests/test_x.py``."""
    # Unrelated plugins are kept out of the inner runs: pytester drops the modules an inner run
    # imports, so each in-process run would import hypothesis afresh (most of its time).
    pytester.makeini("[pytest]\naddopts = -p no:hypothesispytest -p no:benchmark\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_x.py").write_text(TEST_FILE, encoding="utf-8")
    return pytester


def write_report(pytester: pytest.Pytester, value: Any, name: str = "freeze-report.json") -> Path:
    """Write ``value`` as JSON to ``name`` under the project; return the path."""
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    return path


def run_inline(pytester: pytest.Pytester, *args: str) -> tuple[set[str], set[str]]:
    """Run pytest in process; return the node ids that were skipped and that failed."""
    reprec = pytester.inline_run(*args)
    assert reprec.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), reprec.ret
    _, skipped, failed = reprec.listoutcomes()
    return {r.nodeid for r in skipped}, {r.nodeid for r in failed}


def skipped_with(pytester: pytest.Pytester, value: Any) -> set[str]:
    """Skipped node ids (own skip aside) of a run given ``value`` as the freeze report."""
    write_report(pytester, value)
    skipped, failed = run_inline(pytester, "--patchlane-freeze-report=freeze-report.json")
    # Every item is accounted for: what the plugin did not skip failed.
    assert skipped | failed == ALL_FAILING | {OWN}
    return skipped - {OWN}


# --- loading -----------------------------------------------------------------------------------


def test_the_entry_point_is_installed() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("patchlane") == "patchlane.pytest_plugin"


def test_importing_the_plugin_loads_only_the_standard_library() -> None:
    # Every pytest run imports this module, and the replay runner imports skip_reason from
    # it: neither should pay for pytest, yaml or the rest of patchlane.
    code = (
        "import sys; before = set(sys.modules); import patchlane.pytest_plugin; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print(sorted(new - set(sys.stdlib_module_names) - {'patchlane'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_the_installed_plugin_skips_in_a_subprocess(project: pytest.Pytester) -> None:
    # No -p: the pytest11 entry point of the installed package loads the plugin.
    write_report(project, report(record("billing-clock-skew", A)))
    result = project.runpytest_subprocess("-rfs", "--patchlane-freeze-report=freeze-report.json")
    result.assert_outcomes(failed=len(ALL_FAILING) - 1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "plugins: *patchlane-*",
            "*- patchlane freeze -*",
            "patchlane freeze: skipped tests/test_x.py::test_a (freeze billing-clock-skew, expires 2026-10-08)",
            "FAILED tests/test_x.py::test_ab - assert False",
            "SKIPPED [[]1[]] tests/test_x.py*: patchlane freeze billing-clock-skew (expires 2026-10-08)",
        ]
    )


@pytest.mark.slow
def test_a_malformed_report_is_a_usage_error_in_a_subprocess(project: pytest.Pytester) -> None:
    (project.path / "bad.json").write_text('{"lane": "freeze",', encoding="utf-8")
    result = project.runpytest_subprocess("--patchlane-freeze-report=bad.json")
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --patchlane-freeze-report: bad.json:1: invalid JSON*"])


# --- what is skipped ---------------------------------------------------------------------------


def test_exactly_the_in_play_passing_node_id_is_skipped_with_the_reason(
    project: pytest.Pytester,
) -> None:
    write_report(project, report(record("billing-clock-skew", A)))
    reprec = project.inline_run("--patchlane-freeze-report=freeze-report.json")
    _, skipped, failed = reprec.listoutcomes()
    (ours,) = [r for r in skipped if r.nodeid == A]
    assert isinstance(ours.longrepr, tuple)
    assert ours.longrepr[2] == "Skipped: patchlane freeze billing-clock-skew (expires 2026-10-08)"
    assert {r.nodeid for r in skipped} == {A, OWN}
    assert {r.nodeid for r in failed} == ALL_FAILING - {A}


def test_a_record_not_in_play_is_not_skipped(project: pytest.Pytester) -> None:
    value = report(record("stale", A, in_play=False), record("live", M))
    assert skipped_with(project, value) == {M}


def test_a_report_with_status_fail_skips_nothing_and_says_so(project: pytest.Pytester) -> None:
    # The audit is red because "broken" is in play and fails rule 1; "fine" on its own would
    # grant test_a, but a red audit grants nothing.
    value = report(record("fine", A), record("broken", M, ok=False), status="fail")
    write_report(project, value)
    result = project.runpytest("--patchlane-freeze-report=freeze-report.json")
    result.assert_outcomes(failed=len(ALL_FAILING), skipped=1)
    result.stdout.fnmatch_lines(
        [
            "patchlane freeze: freeze-report.json has status 'fail', not 'pass': "
            "a red freeze audit grants nothing, nothing was skipped"
        ]
    )


@pytest.mark.parametrize("status", ["not_applicable", "error"])
def test_any_status_but_pass_skips_nothing(project: pytest.Pytester, status: str) -> None:
    assert skipped_with(project, report(record("fine", A), status=status)) == set()


def test_an_in_play_failing_record_under_status_pass_is_refused(project: pytest.Pytester) -> None:
    # DESIGN.md §4: a record in play that fails a rule turns the lane red. A report that says
    # "pass" anyway contradicts itself and is believed in nothing.
    write_report(project, report(record("fine", A), record("broken", M, ok=False)))
    result = project.runpytest("--patchlane-freeze-report=freeze-report.json")
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["*freeze-report.json:*record 'broken' is in play and fails*"])


def test_prefixes_and_parametrised_siblings_are_not_skipped(project: pytest.Pytester) -> None:
    # test_a is a prefix of test_ab; test_p names the function of test_p[1..3].
    value = report(record("a", A), record("p", "tests/test_x.py::test_p"))
    assert skipped_with(project, value) == {A}


def test_an_exactly_named_parametrised_id_is_skipped(project: pytest.Pytester) -> None:
    assert skipped_with(project, report(record("p2", "tests/test_x.py::test_p[2]"))) == {P[1]}


def test_a_class_method_node_id_is_skipped(project: pytest.Pytester) -> None:
    assert skipped_with(project, report(record("m", M))) == {M}


@pytest.mark.slow
@pytest.mark.parametrize(
    "nodeid",
    [
        "tests/test_x.py::TestC",
        "tests/test_x.py",
        "tests",
        "tests/test_x.py::test_a ",
        "test_x.py::test_a",
    ],
    ids=["class", "module", "directory", "trailing-space", "other-root"],
)
def test_containers_and_near_misses_skip_nothing(project: pytest.Pytester, nodeid: str) -> None:
    assert skipped_with(project, report(record("near", nodeid))) == set()


def test_without_the_option_the_plugin_does_nothing(project: pytest.Pytester) -> None:
    # A report lying around (where gate writes one, too) is never read on its own.
    write_report(project, report(record("a", A)))
    write_report(project, report(record("a", A)), ".patchlane/freeze-report.json")
    result = project.runpytest("-rs")
    result.assert_outcomes(failed=len(ALL_FAILING), skipped=1)
    assert "patchlane freeze" not in result.stdout.str() + result.stderr.str()


# --- malformed reports -------------------------------------------------------------------------


def _with(change: dict[str, Any]) -> str:
    """A valid report's JSON text with top-level keys replaced by ``change``."""
    value = report(record("a", A), record("stale", M, in_play=False))
    value.update(change)
    return json.dumps(value)


def _record_with(**change: Any) -> str:
    """A one-record report's JSON text with the record's keys replaced by ``change``."""
    rec = record("a", A)
    rec.update(change)
    return json.dumps(report(rec))


MALFORMED = {
    "bad-json": ('{"lane": "freeze", "records": [}', "invalid JSON"),
    "not-utf8": ('{"lane": "fr\udcffeeze"}', "not UTF-8"),
    "duplicate-key": (
        '{"lane": "freeze", "status": "pass", "reason": "", "status": "pass", "records": []}',
        "duplicate key 'status'",
    ),
    "not-an-object": ("[]", "must be a JSON object"),
    "missing-records": (
        '{"lane": "freeze", "status": "pass", "reason": ""}',
        "missing key 'records'",
    ),
    "wrong-lane": (_with({"lane": "fixture"}), '\'lane\' must be "freeze", not "fixture"'),
    "unknown-status": (_with({"status": "green"}), "'status' must be one of"),
    "reason-not-string": (_with({"reason": None}), "'reason' must be a string"),
    "bad-today": (_with({"today": "2026-02-30"}), "'today' must be a date"),
    "records-not-list": (_with({"records": {}}), "'records' must be a list"),
    "record-not-object": (_with({"records": ["tests/test_x.py::test_a"]}), "must be a JSON object"),
    "record-missing-ok": (
        json.dumps(report({k: v for k, v in record("a", A).items() if k != "ok"})),
        "record is missing key 'ok'",
    ),
    "in-play-string": (_record_with(in_play="true"), "'in_play' must be true or false"),
    "ok-int": (_record_with(ok=1), "'ok' must be true or false"),
    "nodeid-int": (_record_with(nodeid=3), "'nodeid' must be a non-empty one-line string"),
    "nodeid-newline": (
        _record_with(nodeid="tests/test_x.py::test_a\nx"),
        "'nodeid' must be a non-empty one-line string",
    ),
    "id-empty": (_record_with(id=""), "'id' must be a non-empty one-line string"),
    "owner-int": (_record_with(owner=7), "'owner' must be a string"),
    "details-list": (_record_with(details=[]), "'details' must be an object"),
    "expires-not-date": (_record_with(expires="2026-10-8"), "'expires' (or null) must be a date"),
    "expires-null-but-granted": (_record_with(expires=None), "in play and ok but has no 'expires'"),
    "failed-rules-bool": (_record_with(failed_rules=[True]), "'failed_rules' must be a list"),
    "failed-rules-7": (_record_with(failed_rules=[7]), "'failed_rules' must be a list"),
    "ok-with-failed-rule": (
        _record_with(failed_rules=[2]),
        "'ok' is true but 'failed_rules' is [2]",
    ),
    "in-play-with-rule-5": (_record_with(failed_rules=[5]), "'in_play' is true but"),
    "duplicate-id": (
        json.dumps(report(record("a", A), record("a", M))),
        "freeze id 'a' appears twice",
    ),
    "two-grants-one-node": (
        json.dumps(report(record("a", A), record("b", A))),
        "node id 'tests/test_x.py::test_a' is granted by two records",
    ),
    "skippable-extra": (
        _with({"skippable": [A, M]}),
        "'skippable' lists 'tests/test_x.py::TestC::test_m', which no in-play, ok record names",
    ),
    "skippable-missing": (
        _with({"skippable": []}),
        "'skippable' omits 'tests/test_x.py::test_a', which an in-play, ok record names",
    ),
    "skippable-twice": (_with({"skippable": [A, A]}), "'skippable' lists a node id twice"),
    "skippable-not-list": (_with({"skippable": A}), "'skippable' must be a list of node ids"),
}


@pytest.mark.parametrize(("text", "expected"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_report_is_a_usage_error_naming_the_file(
    project: pytest.Pytester, text: str, expected: str
) -> None:
    path = project.path / "reports" / "freeze-report.json"
    path.parent.mkdir()
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    result = project.runpytest("--patchlane-freeze-report=reports/freeze-report.json")
    assert result.ret == USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.lines
    assert errors[0].startswith("ERROR: --patchlane-freeze-report: reports/freeze-report.json")
    assert expected in errors[0]
    # Nothing ran: a doubtful report stops the session instead of granting anything.
    assert "failed" not in result.stdout.str()
    with pytest.raises(ReportError) as info:
        load_freeze_grant(path, "reports/freeze-report.json")
    assert str(info.value) == errors[0].removeprefix("ERROR: --patchlane-freeze-report: ")
    assert "\n" not in str(info.value)


def test_a_missing_report_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--patchlane-freeze-report=nowhere.json")
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --patchlane-freeze-report: nowhere.json: no such file"])


def test_a_skip_record_without_a_report_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--patchlane-skip-record=skips.json")
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["*--patchlane-skip-record needs --patchlane-freeze-report*"])
    assert not (project.path / "skips.json").exists()


def test_the_message_names_the_line(project: pytest.Pytester) -> None:
    value = report(record("a", A), record("b", M))
    value["records"][1]["in_play"] = "yes"
    write_report(project, value)
    line = next(
        i
        for i, text in enumerate((project.path / "freeze-report.json").read_text().splitlines(), 1)
        if '"in_play": "yes"' in text
    )
    result = project.runpytest("--patchlane-freeze-report=freeze-report.json")
    result.stderr.fnmatch_lines([f"ERROR: --patchlane-freeze-report: freeze-report.json:{line}: *"])


# --- the skip record ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_skip_record_lists_what_was_skipped_and_what_was_not_collected(
    project: pytest.Pytester,
) -> None:
    gone = "tests/test_gone.py::test_removed"
    deselected = "tests/test_x.py::TestC::test_n"
    value = report(
        record("a", A, expires="2026-10-08"),
        record("p3", P[2], expires="2026-10-09"),
        record("own", OWN),  # skipped by its own mark first: not something the freeze skipped
        record("gone", gone),
        record("desel", deselected),
        record("stale", AB, in_play=False),
    )
    path = write_report(project, value)
    result = project.runpytest_subprocess(
        "--patchlane-freeze-report=freeze-report.json",
        "--patchlane-skip-record=out/skips.json",
        "--deselect",
        deselected,
    )
    result.assert_outcomes(failed=len(ALL_FAILING) - 3, skipped=3, deselected=1)
    data = (project.path / "out" / "skips.json").read_bytes()
    assert json.loads(data) == {
        "freeze_report": "freeze-report.json",
        "freeze_report_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "skipped": [
            {"nodeid": A, "freeze_id": "a", "expires": "2026-10-08"},
            {"nodeid": P[2], "freeze_id": "p3", "expires": "2026-10-09"},
        ],
        "not_collected": [gone, deselected],
    }
    result.stdout.fnmatch_lines(
        [
            "*- patchlane freeze -*",
            "patchlane freeze: skipped tests/test_x.py::test_a (freeze a, expires 2026-10-08)",
            "patchlane freeze: skipped tests/test_x.py::test_p[[]3[]] (freeze p3, expires 2026-10-09)",
            f"patchlane freeze: not collected {gone} (granted, not in this run)",
            f"patchlane freeze: not collected {deselected} (granted, not in this run)",
        ]
    )
    assert "freeze own" not in result.stdout.str()


def test_the_skip_record_is_deterministic_json_written_by_rename(project: pytest.Pytester) -> None:
    write_report(project, report(record("a", A), record("m", M)))
    record_path = project.path / "skips.json"
    args = ("--patchlane-freeze-report=freeze-report.json", "--patchlane-skip-record=skips.json")
    run_inline(project, *args)
    first = record_path.read_bytes()
    assert first.endswith(b"\n")
    assert [s["nodeid"] for s in json.loads(first)["skipped"]] == [M, A]
    run_inline(project, *args)
    assert record_path.read_bytes() == first
    # No temp file is left beside it.
    assert sorted(p.name for p in project.path.iterdir() if p.name.startswith(".skips")) == []


def test_a_skip_record_path_that_is_a_symlink_is_refused(project: pytest.Pytester) -> None:
    write_report(project, report(record("a", A), record("m", M)))
    target = project.path / "elsewhere.json"
    target.write_text("untouched\n", encoding="utf-8")
    record_path = project.path / "skips.json"
    record_path.symlink_to(target)
    result = project.runpytest_inprocess(
        "--patchlane-freeze-report=freeze-report.json", "--patchlane-skip-record=skips.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "skips.json: is a symbolic link" in result.stderr.str()
    assert record_path.is_symlink()
    assert target.read_text(encoding="utf-8") == "untouched\n"


def test_a_record_when_nothing_is_granted(project: pytest.Pytester) -> None:
    write_report(project, report(record("a", A), record("m", M, ok=False), status="fail"))
    run_inline(
        project,
        "--patchlane-freeze-report=freeze-report.json",
        "--patchlane-skip-record=skips.json",
    )
    data = json.loads((project.path / "skips.json").read_bytes())
    assert data["skipped"] == []
    assert data["not_collected"] == []


@pytest.mark.slow
def test_an_unwritable_skip_record_fails_the_run(project: pytest.Pytester) -> None:
    write_report(project, report(record("a", A)))
    (project.path / "blocker").write_text("a file, not a directory\n", encoding="utf-8")
    result = project.runpytest_subprocess(
        "--patchlane-freeze-report=freeze-report.json",
        "--patchlane-skip-record=blocker/skips.json",
    )
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--patchlane-skip-record: blocker/skips.json: cannot write: *blocker is not a directory"]
    )


def test_a_skip_record_path_that_is_a_directory_is_a_usage_error(
    project: pytest.Pytester,
) -> None:
    write_report(project, report(record("a", A)))
    (project.path / "out").mkdir()
    result = project.runpytest(
        "--patchlane-freeze-report=freeze-report.json", "--patchlane-skip-record=out"
    )
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --patchlane-skip-record: out is a directory"])


# --- the freeze lane's reader, which the plugin, the replay runner and the verifier share --------


def granted(path: Path) -> dict[str, tuple[str, str]]:
    """What the report at ``path`` lets a host skip, as the plugin reads it."""
    return dict(load_freeze_grant(path).allowed)


def test_the_grant_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "freeze-report.json"
    value = report(
        record("a", A, expires="2026-10-08"),
        record("m", M, expires="2026-10-10"),
        record("stale", AB, in_play=False, ok=False, failed_rules=[1, 5], expires=None),
    )
    path.write_text(json.dumps(value), encoding="utf-8")
    allowed = granted(path)
    assert allowed == {A: ("a", "2026-10-08"), M: ("m", "2026-10-10")}
    assert FreezeReport.read(path).granted() == allowed  # the runner's and verifier's reading
    # The plugin's reason is built from the same pair.
    assert skip_reason(*allowed[A]) == "patchlane freeze a (expires 2026-10-08)"
    # What the report grants, written back as a report, grants the same.
    again = report(*(record(fid, n, expires=exp) for n, (fid, exp) in allowed.items()))
    path.write_text(json.dumps(again), encoding="utf-8")
    assert granted(path) == allowed


def test_a_red_report_grants_nothing(tmp_path: Path) -> None:
    path = tmp_path / "freeze-report.json"
    path.write_text(json.dumps(report(record("a", A), status="fail")), encoding="utf-8")
    assert granted(path) == {}


def test_a_report_without_the_optional_fields_is_accepted(tmp_path: Path) -> None:
    # The shipped schema requires only these; 'skippable', 'today', 'owner' and 'details'
    # are checked when present.
    path = tmp_path / "freeze-report.json"
    rec = {
        "id": "a",
        "nodeid": A,
        "expires": "2026-10-08",
        "in_play": True,
        "ok": True,
        "failed_rules": [],
    }
    value = {"lane": "freeze", "status": "pass", "reason": "", "records": [rec]}
    path.write_text(json.dumps(value), encoding="utf-8")
    assert granted(path) == {A: ("a", "2026-10-08")}


def test_a_malformed_report_is_refused_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "freeze-report.json"
    path.write_text(_with({"lane": "property"}), encoding="utf-8")
    with pytest.raises(ReportError, match="'lane' must be") as info:
        granted(path)
    message = str(info.value)
    assert message.startswith(f"{path}:")
    assert "\n" not in message


def test_what_the_audit_writes_reads_back_the_same(tmp_path: Path) -> None:
    value = report(record("a", A), record("stale", M, in_play=False, ok=False))
    value["records"][0]["details"] = {str(n): f"rule {n} holds" for n in range(1, 7)}
    value["records"][1]["details"] = {str(n): f"rule {n}" for n in range(1, 7)}
    value["records"][1]["failed_rules"] = [1, 5]
    full = FreezeReport.from_json(value, "freeze-report.json")
    assert FreezeReport.from_json(full.to_json(), "again").to_json() == full.to_json()
    assert full.granted() == {A: ("a", "2026-10-08")}


def test_reading_a_report_in_a_pytest_child_stays_cheap(tmp_path: Path) -> None:
    # The plugin reads the report in pytest_configure, before the repository's code: the
    # freeze lane's reader must not bring in YAML, git, the review map or the rest of the lane.
    path = tmp_path / "freeze-report.json"
    path.write_text(json.dumps(report(record("a", A))), encoding="utf-8")
    code = (
        "import sys, pathlib; before = set(sys.modules); import patchlane.pytest_plugin as p; "
        f"p.load_freeze_grant(pathlib.Path({str(path)!r})); "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in new if m.split('.')[0] not in sys.stdlib_module_names))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = set(ast.literal_eval(out))
    assert loaded <= {
        "patchlane",
        "patchlane.pytest_plugin",
        "patchlane.errors",
        "patchlane.inputs",
        "patchlane.inputs.fields",
        # Parts of ``inputs.fields`` (stdlib only): its values, wording and list getters.
        "patchlane.inputs.values",
        "patchlane.inputs.wording",
        "patchlane.inputs.listed",
        "patchlane.inputs.jsonio",
        "patchlane.inputs.model",  # stdlib only: how a report's model is read and described
        "patchlane.inputs.modelspec",  # stdlib only: what a model is declared in
        "patchlane.formats",
        "patchlane.formats.envelope",
        "patchlane.formats.freeze_report",
        "patchlane.formats.status",
    }, loaded


# --- a replay's job on stdin: a plain run's stdin is never read -----------------------------

STDIN_TEST = """\
import os


def test_reads_stdin():
    assert os.read(0, 64) == b"the user's own input"
"""


def _pytest_with_stdin(tmp_path: Path, stdin: Any) -> subprocess.CompletedProcess[bytes]:
    (tmp_path / "test_stdin.py").write_text(STDIN_TEST)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_stdin.py"],
        cwd=tmp_path,
        stdin=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["socket", "pipe"])
def test_a_plain_runs_stdin_is_left_to_its_tests(tmp_path: Path, kind: str) -> None:
    # The plugin loads in every run and looks at a socket on fd 0 (peeking, never reading):
    # what is there reaches the tests whole, whether it is a socket or a pipe.
    import os
    import socket

    data = b"the user's own input"
    if kind == "socket":
        ours, theirs = socket.socketpair()
        ours.sendall(data)
        ours.shutdown(socket.SHUT_WR)
        with ours, theirs:
            proc = _pytest_with_stdin(tmp_path, theirs.fileno())
    else:
        read, write = os.pipe()
        os.write(write, data)
        os.close(write)
        proc = _pytest_with_stdin(tmp_path, read)
        os.close(read)
    assert proc.returncode == 0, proc.stdout.decode(errors="replace")[-2000:]


def test_take_job_reads_a_job_and_leaves_dev_null() -> None:
    import os
    import socket

    from patchlane.infra.process import JOB_MAGIC
    from patchlane.pytest_plugin import JOB_MAGIC as PLUGIN_MAGIC
    from patchlane.pytest_plugin import take_job

    assert PLUGIN_MAGIC == JOB_MAGIC
    ours, theirs = socket.socketpair()
    payload = json.dumps({"args": ["-x"]}).encode()
    ours.sendall(JOB_MAGIC + len(payload).to_bytes(8, "big") + payload)
    fd = os.dup(theirs.fileno())
    theirs.close()
    try:
        assert take_job(fd) == {"args": ["-x"]}
        assert os.readlink(f"/proc/self/fd/{fd}") == os.devnull  # noqa: PTH115
        assert take_job(fd) is None  # not a socket any more: nothing to take
    finally:
        os.close(fd)
        ours.close()
    # Something else on a socket: untouched, still there to read.
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(b"GET / HTTP/1.1\r\n")
        assert take_job(theirs.fileno()) is None
        assert theirs.recv(64) == b"GET / HTTP/1.1\r\n"
        # An empty socket (its writer not there yet) is not waited for.
        assert take_job(theirs.fileno()) is None
