"""End to end: a src-layout project installed as its contributors install it (``pip install
-e .``, or a regular ``pip install .``) into the virtual environment that runs the gate. The
replay's tests import the project as that environment has it; the code they run must be the
tree under judgement (docs/architecture.md §2), so an honest red patch is rejected however it
reaches the gate, and where no mount can be made (no bwrap) the run says it ran other code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import patchlane
from patchlane.infra import sandbox
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.slow  # virtual environments, pip and whole gates

needs_bwrap = pytest.mark.skipif(
    not sandbox.isolation().sandboxed, reason=f"no kernel sandbox: {sandbox.isolation().why}"
)

PROJECT = {
    "src/shapes/__init__.py": "def clamp(n, lo, hi):\n    return max(lo, min(n, hi))\n",
    "tests/test_shapes.py": (
        "from shapes import clamp\n\n\n"
        "def test_clamp_low():\n    assert clamp(-5, 0, 10) == 0\n\n\n"
        "def test_clamp_high():\n    assert clamp(50, 0, 10) == 10\n"
    ),
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "shapes"\nversion = "0.1"\n\n'
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n'
    ),
    # A property that holds whatever clamp does: the replay alone decides.
    "checks/__init__.py": "",
    "checks/props.py": "def prop_always(seed, n=200):\n    pass\n",
    "tests/flaky-freeze.yml": "freezes: []\n",
    ".gitignore": "*.egg-info/\nbuild/\n",
    "review-map.yml": (
        'version: 1\nlanes:\n  property:\n    paths: ["src/shapes/"]\n'
        '    module: "checks.props"\n  freeze:\n    registry: "tests/flaky-freeze.yml"\n'
        '    max_age_days: 14\n  replay:\n    tests: ["tests/"]\n'
        'ignore:\n  - path: "pyproject.toml"\n    reason: "packaging"\n'
    ),
}
# An off-by-one a test catches (clamp(50, 0, 10) is 9), and an honest rewrite.
RED = "def clamp(n, lo, hi):\n    return max(lo, min(n, hi - 1))\n"
GREEN = "def clamp(n, lo, hi):\n    return min(max(n, lo), hi)\n"


def make_project(path: Path) -> GitRepo:
    repo = GitRepo(path)
    for rel, text in PROJECT.items():
        repo.write(rel, text)
    repo.commit("base")
    return repo


def as_diff(repo: GitRepo, text: str, where: Path) -> Path:
    """The patch that gives ``src/shapes/__init__.py`` the content ``text``, as a file."""
    before = repo.path / "src" / "shapes" / "__init__.py"
    saved = before.read_text()
    before.write_text(text)
    try:
        diff = repo.git("diff", "--", "src/shapes/__init__.py")
    finally:
        before.write_text(saved)
    where.write_text(diff)
    return where


def make_venv(path: Path, project: Path, *, editable: bool) -> Path:
    """A virtual environment that sees this interpreter's packages (pytest, patchlane's
    dependencies) with the project installed, offline; returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", path], check=True)
    python = path / "bin" / "python"
    target = ["-e", os.fspath(project)] if editable else [os.fspath(project)]
    install = [python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps"]
    proc = subprocess.run([*install, *target], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return python


def gate(python: Path, repo: GitRepo, out: Path, *extra: str) -> dict[str, Any]:
    """Run the gate with ``python`` (this patchlane on its path) from the repository."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env["PYTHONPATH"] = os.fspath(Path(patchlane.__file__).parents[1])
    argv = [python, "-m", "patchlane", "--repo", repo.path, "-q", "gate", "--base", "main"]
    argv += ["--seed", "3", "--cases", "10", "--replay", "local", "--out-dir", out, *extra]
    proc = subprocess.run(
        argv, cwd=repo.path, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    assert proc.returncode in (0, 1, 3), proc.stderr[-3000:]
    verdict = json.loads((out / "verdict.json").read_text())
    replay = json.loads((out / "replay-report.json").read_text())
    return {"verdict": verdict["verdict"], "replay": replay}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    return make_project(tmp_path_factory.mktemp("user") / "shapes")


@pytest.fixture(scope="module")
def editable(project: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("venv") / "editable", project.path, editable=True)


@pytest.fixture(scope="module")
def regular(project: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("venv") / "regular", project.path, editable=False)


@pytest.fixture
def on_branch(project: GitRepo) -> Iterator[GitRepo]:
    """The project with the red patch committed on ``agent`` and checked out: the editable
    install then points at a work tree that holds the head."""
    project.git("checkout", "-q", "-B", "agent", "main")
    project.write("src/shapes/__init__.py", RED)
    project.commit("clamp: tidy")
    try:
        yield project
    finally:
        project.git("checkout", "-q", "main")


def test_the_install_really_points_elsewhere(
    editable: Path, regular: Path, project: GitRepo
) -> None:
    # The premise: outside the repository, each interpreter imports the project from the
    # user's work tree (editable) or from site-packages (regular), never a checkout.
    ask = "import shapes; print(shapes.__file__)"
    seen = [
        subprocess.run(
            [python, "-c", ask], capture_output=True, text=True, check=True, cwd="/"
        ).stdout.strip()
        for python in (editable, regular)
    ]
    assert seen[0] == os.fspath(project.path / "src" / "shapes" / "__init__.py")
    assert "site-packages" in seen[1]


@needs_bwrap
@pytest.mark.parametrize("install", ["editable", "regular"])
def test_a_red_patch_from_main_is_rejected_whatever_the_install(
    install: str, request: pytest.FixtureRequest, project: GitRepo, tmp_path: Path
) -> None:
    python: Path = request.getfixturevalue(install)
    patch = as_diff(project, RED, tmp_path / "agent.diff")
    found = gate(python, project, tmp_path / "ev", "--patch", os.fspath(patch))
    assert found["verdict"] == "reject", found["replay"]["reason"]
    assert "test_clamp_high" in found["replay"]["reason"]


@needs_bwrap
def test_a_green_patch_is_accepted(editable: Path, project: GitRepo, tmp_path: Path) -> None:
    patch = as_diff(project, GREEN, tmp_path / "agent.diff")
    found = gate(editable, project, tmp_path / "ev", "--patch", os.fspath(patch))
    assert found["verdict"] == "accept_for_review", found["replay"]["reason"]


@needs_bwrap
def test_a_red_patch_from_its_own_branch_is_rejected(
    editable: Path, on_branch: GitRepo, tmp_path: Path
) -> None:
    # The checks at the base run the base's code, not the branch's the install points at:
    # the failure is the patch's, not one that "fails at the base as well".
    found = gate(editable, on_branch, tmp_path / "ev")
    assert found["verdict"] == "reject", found["replay"]["reason"]


@needs_bwrap
def test_a_second_clone_sharing_the_environment_is_rejected_too(
    project: GitRepo, tmp_path: Path
) -> None:
    # The environment's editable install points at another clone of the same project, by
    # setuptools' import hook this time (a package directory mapped by name: no .pth path).
    other = GitRepo.copy_of(project, tmp_path / "other-clone")
    pyproject = other.path / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            '[tool.setuptools.packages.find]\nwhere = ["src"]\n',
            '[tool.setuptools]\npackages = ["shapes"]\npackage-dir = {"shapes" = "src/shapes"}\n',
        )
    )
    python = make_venv(tmp_path / "venv", other.path, editable=True)
    assert list((tmp_path / "venv").glob("lib/python*/site-packages/__editable___*finder.py"))
    patch = as_diff(project, RED, tmp_path / "agent.diff")
    found = gate(python, project, tmp_path / "ev", "--patch", os.fspath(patch))
    assert found["verdict"] == "reject", found["replay"]["reason"]
    project.git("checkout", "-q", "-B", "agent", "main")
    try:
        project.write("src/shapes/__init__.py", RED)
        project.commit("clamp: tidy")
        found = gate(python, project, tmp_path / "ev2")
    finally:
        project.git("checkout", "-q", "main")
    assert found["verdict"] == "reject", found["replay"]["reason"]


def test_without_the_sandbox_a_run_of_other_code_is_no_evidence(
    editable: Path, project: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No mount can be made: the tests import the user's work tree (the base), and the
    # record of where each project module came from says so.
    monkeypatch.setenv(sandbox.BWRAP_ENV, "none")
    patch = as_diff(project, RED, tmp_path / "agent.diff")
    found = gate(editable, project, tmp_path / "ev", "--patch", os.fspath(patch))
    assert found["verdict"] == "undecided"
    where = os.fspath(project.path / "src" / "shapes" / "__init__.py")
    assert f"shapes from {where}" in found["replay"]["reason"]
