"""The GitHub Actions reporter (``python -m patchlane.ci.github``), on real gates' evidence.

A sample project is committed on ``main`` with a real property and real tests; three patches
are gated for real with ``patchlane gate --replay local`` in subprocesses: one that breaks the
property and edits a fixture (reject), one that only a replayed test catches (reject), and a
harmless one (accept_for_review). The reporter then runs in a subprocess against each
evidence directory with ``GITHUB_STEP_SUMMARY`` and ``GITHUB_OUTPUT`` pointing at files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ci-github")]

# The property's message has a ``%``, a ``::`` and a newline: each must reach GitHub escaped.
PROPS = """\
from billing import apply_refund


def prop_refund_never_exceeds_charge(seed, n=200):
    for i in range(n):
        charge = 100 + i
        net = apply_refund(charge, 30)
        assert 0 <= net <= charge, f"100% of the refund::lost\\nnet {net} for charge {charge}"
"""
TESTS = """\
from billing import apply_refund


class TestRefunds:
    def test_partial_refund(self):
        assert apply_refund(100, 30) == 70


def test_zero_refund():
    assert apply_refund(100, 0) == 100
"""
CODE = "def apply_refund(charge_cents, refund_cents):\n    return charge_cents - refund_cents\n"
PATCHES = {
    # The property fails (net above the charge) and a fixture changes without a new lock.
    "broken": {
        "src/billing/__init__.py": CODE.replace(
            "charge_cents - refund_cents", "charge_cents + refund_cents"
        ),
        "tests/fixtures/billing/invoice_min.json": '{"charge_cents": 1100, "refund_cents": 200}\n',
    },
    # The property holds; only the replayed test of a partial refund sees the off-by-one.
    "offbyone": {
        "src/billing/__init__.py": CODE.replace(
            "charge_cents - refund_cents",
            "charge_cents - refund_cents - (1 if refund_cents else 0)",
        ),
    },
    "harmless": {"src/billing/__init__.py": '"""Billing."""\n\n' + CODE},
}
GATE = ("gate", "--base", "main", "--seed", "7", "--cases", "20", "--mutants", "0")


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    summary: str
    output: str

    @property
    def commands(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith("::")]


def env_without_github() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}


def gate(repo: Path, branch: str, out: Path, replay: str = "local") -> int:
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", branch], check=True)
    argv = [sys.executable, "-m", "patchlane", "--repo", str(repo), "-q", *GATE]
    proc = subprocess.run(
        [*argv, "--replay", replay, "--out-dir", str(out)],
        capture_output=True,
        text=True,
        check=False,
        env=env_without_github(),
    )
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode


@dataclass(frozen=True)
class Project:
    repo: Path
    evidence: dict[str, Path]
    codes: dict[str, int]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("ci")
    repo = GitRepo(root / "repo")
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("checks/billing_props.py", PROPS)
    repo.write("tests/test_billing.py", TESTS)
    repo.commit("a real property and real tests")
    evidence, codes = {}, {}
    for name, files in PATCHES.items():
        repo.branch(name, "main")
        for path, text in files.items():
            repo.write(path, text)
        repo.commit(name)
        evidence[name] = root / f"evidence-{name}"
        codes[name] = gate(repo.path, name, evidence[name])
    return Project(repo.path, evidence, codes)


def report(
    project: Project,
    tmp_path: Path,
    *args: str,
    branch: str | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    if branch is not None:
        subprocess.run(["git", "-C", str(project.repo), "checkout", "-q", branch], check=True)
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    summary.write_text("earlier step\n", encoding="utf-8")
    output.write_text("", encoding="utf-8")
    environ = {
        **env_without_github(),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        **(env or {}),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "patchlane.ci.github", *args],
        cwd=project.repo,
        capture_output=True,
        text=True,
        check=False,
        env=environ,
    )
    return Run(
        proc.returncode,
        proc.stdout,
        proc.stderr,
        summary.read_text(encoding="utf-8"),
        output.read_text(encoding="utf-8"),
    )


def outputs(text: str) -> dict[str, str]:
    """Parse ``$GITHUB_OUTPUT`` as the runner does: ``name=value`` or ``name<<DELIM``."""
    values: dict[str, str] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            for item in lines:
                if item == delimiter:
                    break
                body.append(item)
            else:
                raise AssertionError(f"{name}: no closing delimiter")
            values[name] = "\n".join(body)
        else:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_gates_reach_the_verdicts_the_scenarios_are_for(project: Project) -> None:
    assert project.codes == {"broken": 1, "offbyone": 1, "harmless": 0}


def test_a_property_counterexample_and_a_changed_fixture_are_annotated_at_their_files(
    project: Project, tmp_path: Path
) -> None:
    out = project.evidence["broken"]
    run = report(project, tmp_path, "--out-dir", str(out), "--exit-code", "1", branch="broken")
    assert run.code == 1, run.stderr
    review = (out / "review.md").read_text(encoding="utf-8")
    assert review.startswith("# patchlane review: reject")
    assert run.summary.startswith("earlier step\n" + review)  # appended, not overwritten
    assert outputs(run.output)["verdict"] == "reject"
    assert "verdict=reject\n" in run.output
    assert "exit-code=1\n" in run.output
    # Every line on stdout is a command or our own line: the message's newline and "::"
    # could not start a line of their own.
    assert all(line.startswith(("::", "patchlane: ")) for line in run.stdout.splitlines())
    [prop] = [c for c in run.commands if "property prop_refund" in c]
    line = line_of(PROPS, "assert 0 <= net")
    head = f"::error file=checks/billing_props.py,line={line},title=patchlane%3A property "
    assert prop.startswith(head + "prop_refund_never_exceeds_charge failed::")
    message = prop.split("::", 2)[2]
    assert "(head version)" in message and "seed 7" in message
    assert "100%25 of the refund::lost%0Anet 130 for charge 100" in message
    assert "\n" not in message and "100% " not in message
    [fixture] = [c for c in run.commands if "invoice_min.json" in c]
    assert fixture.startswith("::error file=tests/fixtures/billing/invoice_min.json,title=")
    assert "tests/fixtures/billing/LOCK.json was not updated" in fixture
    [verdict] = [c for c in run.commands if "title=patchlane%3A reject::" in c]
    assert verdict.startswith("::error title=patchlane%3A reject::rule 1 [property] reject")
    assert "%0Arule 2 [fixture] reject" in verdict


def test_a_failed_replay_node_is_annotated_at_the_line_that_failed(
    project: Project, tmp_path: Path
) -> None:
    out = project.evidence["offbyone"]
    run = report(project, tmp_path, "--out-dir", str(out), "--exit-code", "1", branch="offbyone")
    assert run.code == 1, run.stderr
    node = "tests/test_billing.py::TestRefunds::test_partial_refund"
    [failed] = [c for c in run.commands if "replay failure" in c]
    line = line_of(TESTS, "apply_refund(100, 30) == 70")
    title = "patchlane%3A replay failure " + node.replace(":", "%3A")
    assert failed.startswith(f"::error file=tests/test_billing.py,line={line},title={title}::")
    assert failed.split("::", 2)[2].startswith(f"{node} failed on the replay slice")
    assert not any("property" in c for c in run.commands if c.startswith("::error file"))
    assert outputs(run.output)["verdict"] == "reject"
    assert "rule 4" not in outputs(run.output)["reason"]  # the reason's text, not its number
    assert "non-frozen node failed" in outputs(run.output)["reason"]


def test_an_accepted_patch_exits_0_with_a_notice_and_no_error(
    project: Project, tmp_path: Path
) -> None:
    out = project.evidence["harmless"]
    run = report(project, tmp_path, "--out-dir", str(out), "--exit-code", "0", branch="harmless")
    assert run.code == 0, run.stderr
    assert "verdict=accept_for_review\n" in run.output
    assert "exit-code=0\n" in run.output
    assert outputs(run.output)["evidence-dir"] == str(out)
    assert run.commands == [
        "::notice title=patchlane%3A accept_for_review::rule 7 [verdict] accept_for_review: "
        "every lane is green; a person still reviews"
    ]
    assert "# patchlane review: accept_for_review" in run.summary


def test_without_the_gates_code_the_verdict_decides_the_exit(
    project: Project, tmp_path: Path
) -> None:
    run = report(project, tmp_path, "--out-dir", str(project.evidence["broken"]))
    assert run.code == 1
    run = report(project, tmp_path, "--out-dir", str(project.evidence["harmless"]))
    assert run.code == 0


def test_files_are_named_from_the_workspace_when_the_repository_is_inside_it(
    project: Project, tmp_path: Path
) -> None:
    out = project.evidence["broken"]
    workspace = {"GITHUB_WORKSPACE": str(project.repo.parent)}
    run = report(project, tmp_path, "--out-dir", str(out), env=workspace, branch="broken")
    assert any(
        c.startswith("::error file=repo/checks/billing_props.py,line=") for c in run.commands
    )
    assert any("file=repo/tests/fixtures/billing/invoice_min.json" in c for c in run.commands)


def test_lines_come_from_the_head_commit_not_the_work_tree(
    project: Project, tmp_path: Path
) -> None:
    """A pull request's annotations are shown on its head commit: a checkout of another
    commit (the merge commit GitHub checks out by default) does not move them."""
    out = project.evidence["offbyone"]
    run = report(project, tmp_path, "--out-dir", str(out), branch="main")
    line = line_of(TESTS, "apply_refund(100, 30) == 70")
    assert any(f"file=tests/test_billing.py,line={line}," in c for c in run.commands)


@pytest.mark.parametrize("code", [2, 4])
def test_a_gate_that_wrote_no_verdict_passes_its_code_through(
    project: Project, tmp_path: Path, code: int
) -> None:
    run = report(project, tmp_path, "--out-dir", str(tmp_path / "none"), "--exit-code", str(code))
    assert run.code == code
    assert outputs(run.output) == {
        "verdict": "none",
        "exit-code": str(code),
        "reason": f"patchlane gate exited {code} ({'bad input' if code == 2 else 'an internal error'}) "
        "before a verdict: its one line is in the gate step's log",
        "evidence-dir": str(tmp_path / "none"),
    }
    assert "# patchlane: no verdict" in run.summary
    assert run.commands[0].startswith(
        "::error title=patchlane%3A no verdict::patchlane gate exited"
    )


def broken_copy(project: Project, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(project.evidence["broken"], copy)
    return copy


def test_a_malformed_verdict_is_one_line_and_exit_2(project: Project, tmp_path: Path) -> None:
    copy = broken_copy(project, tmp_path)
    (copy / "verdict.json").write_text('{\n  "lane": "verdict",\n  "status": 7\n}\n')
    run = report(project, tmp_path, "--out-dir", str(copy))
    assert run.code == 2
    [line] = run.stderr.splitlines()
    assert line.startswith(f"patchlane: {copy / 'verdict.json'}:")
    assert "Traceback" not in run.stdout + run.stderr
    assert outputs(run.output)["verdict"] == "none"
    assert outputs(run.output)["exit-code"] == "2"
    assert run.commands[0].startswith("::error title=patchlane%3A evidence not read::")
    # The gate ran and said reject: its code wins over the reporter's 2.
    assert report(project, tmp_path, "--out-dir", str(copy), "--exit-code", "1").code == 1
    # A green gate must rest on evidence: without it the step is not green.
    assert report(project, tmp_path, "--out-dir", str(copy), "--exit-code", "0").code == 2


def test_a_missing_review_note_or_verdict_is_exit_2(project: Project, tmp_path: Path) -> None:
    copy = broken_copy(project, tmp_path)
    (copy / "review.md").unlink()
    run = report(project, tmp_path, "--out-dir", str(copy))
    assert run.code == 2
    assert run.stderr == f"patchlane: {copy / 'review.md'}: no such file\n"
    (copy / "verdict.json").unlink()
    run = report(project, tmp_path, "--out-dir", str(copy))
    assert run.code == 2
    assert "verdict.json: no such file" in run.stderr
    assert report(project, tmp_path, "--out-dir", str(tmp_path / "nowhere")).code == 2


def test_a_malformed_lane_report_is_exit_2(project: Project, tmp_path: Path) -> None:
    copy = broken_copy(project, tmp_path)
    (copy / "property-report.json").write_text('{"lane": "fixture"}\n')
    run = report(project, tmp_path, "--out-dir", str(copy))
    assert run.code == 2
    assert f"{copy / 'property-report.json'}" in run.stderr


def test_a_green_exit_the_evidence_contradicts_is_not_green(
    project: Project, tmp_path: Path
) -> None:
    run = report(
        project, tmp_path, "--out-dir", str(project.evidence["broken"]), "--exit-code", "0"
    )
    assert run.code == 2
    assert "the gate exited 0 but" in run.stdout and "says reject" in run.stdout
    assert outputs(run.output)["exit-code"] == "2"


def test_help_runs_and_the_module_imports_light() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "patchlane.ci.github", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert "--out-dir" in proc.stdout and "--exit-code" in proc.stdout
    code = "import sys, patchlane.ci.github; print(sorted(m for m in sys.modules if m.startswith('patchlane.')))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "patchlane.gate" not in proc.stdout and "patchlane.lanes" not in proc.stdout
