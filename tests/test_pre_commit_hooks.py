"""The hooks of .pre-commit-hooks.yaml and the configurations of docs/how-to/pre-commit.md, run
by the real ``pre-commit`` (``try-repo`` and ``run``).

pre-commit installs a ``language: python`` hook from a git repository: here, a temporary
one holding the project's current files (committed or not), so that the test sees the
hooks and the code as they are now. Installing patchlane into pre-commit's environment is
the costly part (a virtualenv and a ``pip install``), from a wheelhouse built once per
module with ``pip wheel`` (``PIP_NO_INDEX``: pre-commit's pip then needs no index).
``try-repo`` installs into a store of its own on every call, so it runs once; ``run``
with the documented configuration shares one ``PRE_COMMIT_HOME``. The repositories the
hooks judge are the sample project (``tests/sample.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gitrepo import FIXED_ENV, GitRepo
from tests.sample import FIXTURES, LOCK, make_billing_repo

pytest.importorskip(
    "pre_commit", reason="pre-commit is a test dependency: pip install -e '.[test]'"
)

# Slow (a virtualenv and a pip install), and on one worker: the environment is built once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pre_commit")]

ROOT = Path(__file__).resolve().parents[1]
# What building patchlane needs, besides src/.
PROJECT_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml")
HOOKS = ("patchlane-check", "patchlane-fixture-check", "patchlane-freeze-registry")
REGISTRY = "tests/flaky-freeze.yml"


def _copy_project(target: Path) -> None:
    """Copy the files a build of patchlane needs into ``target`` and commit them there."""
    target.mkdir()
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, target / name)
    shutil.copytree(ROOT / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__"))
    hooks = GitRepo(target)  # git init, fixed identity
    hooks.commit("patchlane as it is now")


@pytest.fixture(scope="module")
def hooks_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A git repository holding the project, and the environment pre-commit runs in (its
    own home, pip pointed at a wheelhouse of patchlane and its dependencies)."""
    base = tmp_path_factory.mktemp("pre-commit")
    project = base / "patchlane"
    _copy_project(project)
    wheelhouse = base / "wheelhouse"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "-w", wheelhouse, project, "hatchling>=1.21"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"could not build the wheelhouse: {proc.stderr}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(FIXED_ENV)
    env.update(
        PRE_COMMIT_HOME=os.fspath(base / "home"),
        PRE_COMMIT_COLOR="never",
        PIP_FIND_LINKS=os.fspath(wheelhouse),
        PIP_NO_INDEX="1",
    )
    return project, env


def try_repo(
    hooks_env: tuple[Path, dict[str, str]], repo: GitRepo, *hook: str
) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo PROJECT [HOOK] --all-files`` in ``repo``. (try-repo keeps its
    hook environments in a temporary store of its own: every call installs patchlane.)"""
    project, env = hooks_env
    return _pre_commit(env, repo, "try-repo", os.fspath(project), *hook, "--all-files")


def run_hook(
    hooks_env: tuple[Path, dict[str, str]], repo: GitRepo, hook: str, *, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``pre-commit run HOOK --all-files`` in ``repo`` with its ``.pre-commit-config.yaml``
    (environments kept in the module's ``PRE_COMMIT_HOME``: built once); ``path`` is put
    first on ``PATH``."""
    _, env = hooks_env
    if path is not None:
        env = {**env, "PATH": path + os.pathsep + env.get("PATH", "")}
    return _pre_commit(env, repo, "run", hook, "--all-files")


def _pre_commit(env: dict[str, str], repo: GitRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args, "--color", "never"],
        cwd=repo.path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def doc_configs() -> list[dict[str, Any]]:
    """The ``.pre-commit-config.yaml`` examples of docs/how-to/pre-commit.md, parsed."""
    text = (ROOT / "docs" / "how-to" / "pre-commit.md").read_text("utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def write_config(repo: GitRepo, config: dict[str, Any]) -> None:
    repo.write(".pre-commit-config.yaml", yaml.safe_dump(config, sort_keys=False))


def remote_config(hooks_env: tuple[Path, dict[str, str]]) -> dict[str, Any]:
    """The documented configuration that installs the hooks from patchlane's repository,
    pointed at the project's copy (its path and commit) and listing every hook."""
    project, _ = hooks_env
    config = doc_configs()[0]
    (entry,) = config["repos"]
    assert {h["id"] for h in entry["hooks"]} <= set(HOOKS)
    entry["repo"] = os.fspath(project)
    entry["rev"] = GitRepo(project).head()
    entry["hooks"] = [{"id": hook} for hook in HOOKS]
    return config


@pytest.fixture
def sample(repo: GitRepo) -> GitRepo:
    """The sample project with one freeze in force (expiring in a week, real time: a hook
    cannot be given a review date)."""
    make_billing_repo(repo)
    expires = (datetime.now(UTC).date() + timedelta(days=7)).isoformat()
    repo.write(
        REGISTRY,
        "freezes:\n"
        "  - id: clock-skew\n"
        "    nodeid: tests/test_billing.py::test_invoice_timestamp_order\n"
        "    owner: billing-team\n"
        "    reason: the runner's clock skews\n"
        f"    expires: {expires}\n"
        "    required_properties: [prop_refund_never_exceeds_charge]\n"
        f"    fixture_lock: {LOCK}\n",
    )
    repo.commit("a freeze")
    return repo


def break_registry(repo: GitRepo) -> None:
    """Make the freeze record's owner a list: line 4 of the registry."""
    text = (repo.path / REGISTRY).read_text()
    repo.write(REGISTRY, text.replace("    owner: billing-team\n", "    owner: [a, b]\n"))


def test_the_hooks_file_declares_the_documented_hooks() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    assert [h["id"] for h in hooks] == list(HOOKS)
    for hook in hooks:
        assert hook["language"] == "python"
        assert hook["pass_filenames"] is False
        assert hook["entry"].startswith("patchlane ")


def test_try_repo_passes_every_hook_on_a_clean_repository(
    hooks_env: tuple[Path, dict[str, str]], sample: GitRepo
) -> None:
    proc = try_repo(hooks_env, sample)  # no hook id: every hook of the file
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passed = [line for line in proc.stdout.splitlines() if line.endswith("Passed")]
    assert len(passed) == len(HOOKS), proc.stdout


def test_the_documented_config_fails_the_fixture_hooks_on_a_changed_byte(
    hooks_env: tuple[Path, dict[str, str]], sample: GitRepo
) -> None:
    write_config(sample, remote_config(hooks_env))
    for hook in HOOKS:
        proc = run_hook(hooks_env, sample, hook)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    path = "tests/fixtures/billing/invoice_min.json"
    sample.write(path, FIXTURES[path].replace("1200", "1201"))
    proc = run_hook(hooks_env, sample, "patchlane-fixture-check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "- hook id: patchlane-fixture-check\n- exit code: 1\n" in proc.stdout
    assert f"  changed: {path}" in proc.stdout.splitlines()
    proc = run_hook(hooks_env, sample, "patchlane-check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{path}: changed: its SHA-256 differs from {LOCK}" in proc.stdout
    # The registry hook leaves the fixture bytes alone.
    assert run_hook(hooks_env, sample, "patchlane-freeze-registry").returncode == 0


def test_the_documented_config_fails_the_registry_hooks_on_a_malformed_record(
    hooks_env: tuple[Path, dict[str, str]], sample: GitRepo
) -> None:
    write_config(sample, remote_config(hooks_env))
    break_registry(sample)
    for hook in ("patchlane-check", "patchlane-freeze-registry"):
        proc = run_hook(hooks_env, sample, hook)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"- hook id: {hook}\n- exit code: 2\n" in proc.stdout
        assert f"{REGISTRY}:4: freezes[0].owner: " in proc.stdout


def test_the_documented_local_hook_runs_the_installed_patchlane(
    hooks_env: tuple[Path, dict[str, str]], sample: GitRepo
) -> None:
    config = doc_configs()[1]
    assert config["repos"][0]["repo"] == "local"
    write_config(sample, config)
    scripts = os.fspath(Path(sys.executable).parent)  # where this environment's patchlane is
    proc = run_hook(hooks_env, sample, "patchlane-check", path=scripts)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    break_registry(sample)
    proc = run_hook(hooks_env, sample, "patchlane-check", path=scripts)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{REGISTRY}:4: freezes[0].owner: " in proc.stdout
