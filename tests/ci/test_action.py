"""The composite action (``action.yml`` at the repository root): its structure, and its own
shell steps run with bash on a real pull-request-shaped repository.

The steps that are other actions (setup-python, upload-artifact) and the pip install are not
run here; every ``run:`` step after them is, in order, with the environment the runner would
give it (``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, the step's ``env`` with its
expressions evaluated for a ``pull_request`` event).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ci.test_github import PATCHES, PROPS, TESTS, outputs
from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.xdist_group("ci-action")  # one module fixture: one repository

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def expressions(value: object) -> list[str]:
    if isinstance(value, dict):
        return [e for v in value.values() for e in expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in expressions(v)]
    return [m.strip() for m in EXPRESSION.findall(value)] if isinstance(value, str) else []


def step(step_id: str) -> dict[str, Any]:
    return next(s for s in STEPS if s.get("id") == step_id)


# --- structure -------------------------------------------------------------------------------


def test_the_action_is_composite_with_the_inputs_the_contract_names() -> None:
    assert ACTION["runs"]["using"] == "composite"
    inputs = ACTION["inputs"]
    for name in ("base", "seed", "cases", "replay", "out-dir", "python-version"):
        assert name in inputs and inputs[name]["description"]
    assert inputs["replay"]["default"] == "local"
    assert inputs["out-dir"]["default"] == ".patchlane"
    assert set(ACTION["outputs"]) == {"verdict", "exit-code", "reason", "evidence-dir"}


def test_every_input_and_step_an_expression_names_is_declared() -> None:
    declared_inputs = set(ACTION["inputs"])
    used = {m for e in expressions(ACTION) for m in re.findall(r"inputs\.([A-Za-z0-9_-]+)", e)}
    assert used and used <= declared_inputs, used - declared_inputs
    seen: set[str] = set()
    for s in STEPS:
        for e in expressions(s):
            for ref in re.findall(r"steps\.([A-Za-z0-9_-]+)\.", e):
                assert ref in seen, f"{s['name']}: steps.{ref} is not an earlier step"
        if "id" in s:
            seen.add(s["id"])
    for output in ACTION["outputs"].values():
        assert re.fullmatch(r"\$\{\{ steps\.report\.outputs\.[a-z-]+ \}\}", output["value"])


def test_run_scripts_take_every_value_from_the_environment() -> None:
    """No expression is spliced into a script: an input or a branch name holding shell
    syntax stays data (GitHub's script-injection advice)."""
    runs = [s for s in STEPS if "run" in s]
    assert len(runs) == 5
    for s in runs:
        assert s["shell"] == "bash"
        assert "${{" not in s["run"], s["name"]


def test_other_actions_are_pinned_and_the_upload_always_runs() -> None:
    uses = {s["uses"].split("@")[0]: s for s in STEPS if "uses" in s}
    assert set(uses) == {"actions/setup-python", "actions/upload-artifact"}
    assert all("@v" in s["uses"] for s in uses.values())
    upload = uses["actions/upload-artifact"]
    assert upload["if"].startswith("always()")
    assert upload["with"]["include-hidden-files"] is True  # .patchlane is a hidden folder
    assert "steps.report.outputs.evidence-dir" in upload["with"]["path"]
    assert uses["actions/setup-python"]["if"] == "inputs.python-version != ''"
    assert STEPS[-1]["if"].startswith("always()") and "exit" in STEPS[-1]["run"]


def test_the_commands_the_steps_run_exist() -> None:
    install = next(s for s in STEPS if s.get("name") == "Install patchlane")["run"]
    assert '"${PATCHLANE_SPEC:-$GITHUB_ACTION_PATH}"' in install  # the action's own code
    gate_help = subprocess.run(
        [sys.executable, "-m", "patchlane", "gate", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for option in re.findall(r"(--[a-z-]+) ", step("gate")["run"]):
        assert option in gate_help, option
    assert "python -m patchlane.ci.github --out-dir" in step("report")["run"]
    proc = subprocess.run(
        [sys.executable, "-m", "patchlane.ci.github", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "--exit-code" in proc.stdout


# --- the steps, run ----------------------------------------------------------------------------


@dataclass
class Runner:
    """Runs the action's ``run:`` steps as the GitHub runner would, for one event."""

    workspace: Path
    context: dict[str, Any]
    bin_dir: Path
    summary: Path
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    def value(self, text: str) -> Any:
        text = text.strip()
        if text.startswith("'") and text.endswith("'"):
            return text[1:-1]
        if text == "always()":
            return True
        node: Any = {"steps": self.steps, **self.context}
        for part in text.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    def evaluate(self, expression: str) -> Any:
        if "&&" in expression:
            return all(self.evaluate(p) for p in expression.split("&&"))
        for op in ("==", "!="):
            if op in expression:
                left, right = (self.value(p) for p in expression.split(op))
                return (left == right) == (op == "==")
        result: Any = ""
        for operand in expression.split("||"):
            result = self.value(operand)
            if result:
                return result
        return result

    def render(self, value: object) -> str:
        return EXPRESSION.sub(lambda m: str(self.evaluate(m.group(1)) or ""), str(value))

    def run(self, s: dict[str, Any]) -> int | None:
        if "if" in s and not self.evaluate(s["if"]):
            return None
        output = self.workspace.parent / f"output-{len(self.log)}.txt"
        output.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        env.update(
            PATH=f"{self.bin_dir}{os.pathsep}{env['PATH']}",
            GITHUB_OUTPUT=str(output),
            GITHUB_STEP_SUMMARY=str(self.summary),
            GITHUB_ACTION_PATH=str(ROOT),
            GITHUB_WORKSPACE=str(self.workspace),
        )
        env.update({k: self.render(v) for k, v in s.get("env", {}).items()})
        cwd = self.workspace / self.render(s.get("working-directory", "."))
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s["run"]],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        self.log.append(proc.stdout + proc.stderr)
        if "id" in s:
            outcome = "success" if proc.returncode == 0 else "failure"
            self.steps[s["id"]] = {"outputs": outputs(output.read_text()), "outcome": outcome}
        return proc.returncode


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    root = tmp_path_factory.mktemp("action")
    repo = GitRepo(root / "workspace")
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("checks/billing_props.py", PROPS)
    repo.write("tests/test_billing.py", TESTS)
    repo.commit("a real property and real tests")
    for name in ("broken", "harmless"):
        repo.branch(name, "main")
        for path, text in PATCHES[name].items():
            repo.write(path, text)
        repo.commit(name)
    return repo


def run_action(repo: GitRepo, tmp_path: Path, branch: str, **with_: str) -> Runner:
    repo.checkout(branch)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # A script, not a link: a link to a virtual environment's interpreter loses the
    # environment (Python finds pyvenv.cfg beside the name it was started by).
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    # The sample map names no seed; --mutants 0 (through gate-args) keeps the gate short.
    inputs.update({"seed": "7", "cases": "20", "gate-args": "--mutants 0", **with_})
    event = {
        "pull_request": {
            "base": {"sha": repo.git("rev-parse", "main").strip()},
            "head": {"sha": repo.head()},
        }
    }
    summary = tmp_path / "summary.md"
    summary.write_text("")
    runner = Runner(repo.path, {"inputs": inputs, "github": {"event": event}}, bin_dir, summary)
    # After setup-python and the installs (pip; bubblewrap, which needs root and apt).
    installs = ("Install patchlane", "Install the kernel sandbox (bubblewrap)")
    exits = [runner.run(s) for s in STEPS if "run" in s and s["name"] not in installs]
    runner.context["exits"] = exits
    return runner


@pytest.mark.slow
def test_a_rejected_pull_request_fails_the_job_after_reporting(
    pull_request: GitRepo, tmp_path: Path
) -> None:
    runner = run_action(pull_request, tmp_path, "broken")
    assert runner.steps["gate"]["outputs"]["exit-code"] == "1", runner.log[0]
    assert runner.steps["gate"] == {"outputs": {"exit-code": "1"}, "outcome": "success"}
    report = runner.steps["report"]["outputs"]
    assert report["verdict"] == "reject" and report["exit-code"] == "1"
    assert report["evidence-dir"] == str(pull_request.path / ".patchlane")
    assert runner.context["exits"] == [0, 0, 1]  # gate, report, the final exit
    assert "::error file=checks/billing_props.py,line=" in runner.log[1]
    review = (pull_request.path / ".patchlane" / "review.md").read_text(encoding="utf-8")
    assert runner.summary.read_text(encoding="utf-8").startswith(review)


@pytest.mark.slow
@pytest.mark.parametrize(("allow", "code"), [("false", 3), ("true", 0)])
def test_undecided_fails_the_job_unless_allowed(
    pull_request: GitRepo, tmp_path: Path, allow: str, code: int
) -> None:
    runner = run_action(
        pull_request, tmp_path, "harmless", replay="none", **{"allow-undecided": allow}
    )
    assert runner.steps["gate"]["outputs"] == {"exit-code": "3"}
    assert runner.steps["report"]["outputs"]["verdict"] == "undecided"
    assert runner.context["exits"] == [0, 0, code]
    assert "::warning title=patchlane%3A undecided::" in runner.log[1]
