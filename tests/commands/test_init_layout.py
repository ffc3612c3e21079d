"""``patchlane init`` on the layouts a new user has: a top-level package or a single module
next to ``tests/``, a default branch called master or named by ``origin/HEAD``; and the
``next:`` line it prints, run exactly as printed, reaches a verdict."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.commands.init_layout import default_base, find_code_paths
from patchlane.main import main
from patchlane.project.config import parse_review_map
from tests.gitrepo import GitRepo, git_at, run_patchlane

PACKAGE_PROPS = """\
import random

from pkg.core import add


def prop_add_commutes(seed, n=200):
    rng = random.Random(seed)
    for _ in range(n):
        a, b = rng.randint(-99, 99), rng.randint(-99, 99)
        assert add(a, b) == add(b, a)
"""

MODULE_PROPS = """\
import random

from mymod import double


def prop_double_is_twice(seed, n=200):
    rng = random.Random(seed)
    for _ in range(n):
        x = rng.randint(-99, 99)
        assert double(x) == x + x
"""


def _flat_package(repo: GitRepo, *, props: bool = True) -> None:
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", "def add(a, b):\n    return a + b\n")
    repo.write("tests/__init__.py", "")
    repo.write("tests/test_core.py", "from pkg.core import add\n\n\ndef test_add():\n"
               "    assert add(1, 2) == 3\n")  # fmt: skip
    if props:  # init runs the property module once in the sandbox: a second
        repo.write("checks/__init__.py", "")
        repo.write("checks/props.py", PACKAGE_PROPS)
    # Not code under test: a build script, helper folders with an __init__.py.
    repo.write("setup.py", "from setuptools import setup\nsetup()\n")
    repo.write("scripts/__init__.py", "")
    repo.write("docs/__init__.py", "")
    repo.commit("a flat-layout project")


def _single_module(repo: GitRepo) -> None:
    repo.write("mymod.py", "def double(x):\n    return x + x\n")
    repo.write("tests/test_mymod.py", "from mymod import double\n\n\ndef test_double():\n"
               "    assert double(2) == 4\n")  # fmt: skip
    repo.write("test_top.py", "def test_top():\n    assert True\n")  # a test, not code
    repo.write("conftest.py", "")
    repo.write("noxfile.py", "")
    repo.write("checks/__init__.py", "")
    repo.write("checks/props.py", MODULE_PROPS)
    repo.commit("a single-module project")


def _init_output(repo: GitRepo, *args: str) -> str:
    proc = run_patchlane("init", *args, cwd=repo.path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


def _next_argv(stdout: str) -> list[str]:
    """The command of the ``next:`` line: everything after ``run:``, as a shell splits it."""
    [line] = [line for line in stdout.splitlines() if line.startswith("next: ")]
    argv = shlex.split(line.split(" run: ", 1)[1])
    assert argv[:2] == ["patchlane", "gate"]
    return argv


def _patch_and_run(
    repo: GitRepo, argv: list[str], path: str, text: str
) -> subprocess.CompletedProcess[bytes]:
    """Commit the scaffold where init said, put one commit on a branch, run ``argv``."""
    repo.commit("patchlane init")
    repo.branch("agent")
    repo.write(path, text)
    repo.commit("the agent's patch")
    # argv[0] is the console script; the same program as ``python -m patchlane``.
    return run_patchlane(*argv[1:], cwd=repo.path)


@pytest.mark.slow
def test_flat_package_is_the_property_lane_and_next_reaches_accept(repo: GitRepo) -> None:
    _flat_package(repo)
    stdout = _init_output(repo)
    review_map = parse_review_map((repo.path / "review-map.yml").read_text("utf-8"), "m")
    assert review_map.property is not None
    assert review_map.property.paths == ("pkg/",)
    argv = _next_argv(stdout)
    # main is the default --base, and the map holds the seed and the case count.
    assert argv[2:] == ["--replay", "local"]
    assert (review_map.property.seed, review_map.property.cases) == (20260924, 200)
    proc = _patch_and_run(
        repo, argv, "pkg/core.py", 'def add(a, b):\n    """Sum."""\n    return a + b\n'
    )
    out = proc.stdout.decode()
    assert "map incomplete" not in out
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert out.startswith("verdict: accept_for_review\n")
    assert "replay: pass" in out


@pytest.mark.slow
def test_single_module_is_the_property_lane_and_next_reaches_reject(repo: GitRepo) -> None:
    _single_module(repo)
    repo.git("branch", "-m", "master")  # only master: never told origin/main
    stdout = _init_output(repo)
    assert "origin/main" not in stdout
    review_map = parse_review_map((repo.path / "review-map.yml").read_text("utf-8"), "m")
    assert review_map.property is not None
    assert review_map.property.paths == ("mymod.py",)
    argv = _next_argv(stdout)
    assert argv[2:] == ["--replay", "local"]  # master is the default --base
    proc = _patch_and_run(repo, argv, "mymod.py", "def double(x):\n    return x * 3\n")
    out = proc.stdout.decode()
    assert "map incomplete" not in out
    assert proc.returncode == 1, out + proc.stderr.decode()
    assert out.startswith("verdict: reject\n")
    assert "prop_double_is_twice" in out


def _clone(repo: GitRepo, tmp_path: Path) -> GitRepo:
    """A clone of ``repo`` through a bare upstream: its origin/HEAD names repo's branch."""
    bare = tmp_path / "upstream.git"
    git_at(tmp_path, "clone", "-q", "--bare", os.fspath(repo.path), os.fspath(bare))
    git_at(tmp_path, "clone", "-q", os.fspath(bare), os.fspath(tmp_path / "clone"))
    return GitRepo(tmp_path / "clone")  # re-initialising a clone keeps its branches


def _run_in_shell(line: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run the printed command line verbatim in a POSIX shell, ``patchlane`` being this
    interpreter's ``-m patchlane`` (a shell function, never a PATH lookup)."""
    script = f'patchlane() {{ "$PATCHLANE_PYTHON" -m patchlane "$@"; }}\n{line}\n'
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PATCHLANE_PYTHON"] = sys.executable
    return subprocess.run(["sh", "-c", script], cwd=cwd, env=env, capture_output=True, check=False)


def _next_line(stdout: str) -> str:
    [line] = [line for line in stdout.splitlines() if line.startswith("next: ")]
    return line.split(" run: ", 1)[1]


@pytest.mark.slow
def test_a_local_commit_of_the_scaffold_is_on_the_base_next_names(
    repo: GitRepo, tmp_path: Path
) -> None:
    _flat_package(repo)
    repo.git("branch", "-m", "trunk")  # the remote's default is neither main nor master
    clone = _clone(repo, tmp_path)
    assert git_at(clone.path, "symbolic-ref", "refs/remotes/origin/HEAD").strip().endswith("/trunk")
    git_at(clone.path, "branch", "main")  # a local main does not outrank origin/HEAD
    stdout = _init_output(clone)
    assert "commit the scaffold to trunk;" in stdout
    assert "origin/" not in stdout  # origin/trunk lacks the scaffold until it is pushed
    assert _next_argv(stdout)[2:] == ["--replay", "local"]  # trunk is the default --base
    clone.commit("patchlane init")  # committed locally, never pushed
    assert default_base(clone.path).ref == "trunk"
    assert "review-map.yml" in clone.git("ls-tree", "--name-only", "trunk")
    # The gate's default base is the branch init named, with the map: the patch is judged.
    clone.branch("agent")
    clone.write("pkg/extra.py", "X = 1\n")
    clone.commit("the agent's patch")
    proc = run_patchlane("--json", "classify", cwd=clone.path)
    data = json.loads(proc.stdout)
    assert data["base"] == clone.git("rev-parse", "trunk").strip()
    assert data["map"]["source"] == "base"
    assert data["lanes"]["property"]["files"] == ["pkg/extra.py"]


def test_init_on_another_branch_names_it_as_the_base(repo: GitRepo) -> None:
    _flat_package(repo, props=False)
    repo.branch("setup-patchlane")  # the scaffold is committed here, not on main
    stdout = _init_output(repo)
    assert "commit the scaffold to setup-patchlane;" in stdout
    assert _next_argv(stdout)[2:] == ["--base", "setup-patchlane", "--replay", "local"]


@pytest.mark.slow
def test_the_printed_command_runs_verbatim_after_a_local_commit(
    repo: GitRepo, tmp_path: Path
) -> None:
    _flat_package(repo)
    repo.git("branch", "-m", "master")
    clone = _clone(repo, tmp_path)  # origin/HEAD -> origin/master, which never gets the map
    line = _next_line(_init_output(clone))
    clone.write(".gitignore", ".patchlane/\n")
    clone.commit("patchlane init")
    clone.branch("agent")
    clone.write("pkg/core.py", "def add(a, b):\n    return b + a\n")
    clone.commit("the agent's patch")
    proc = _run_in_shell(line, clone.path)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert out.startswith("verdict: accept_for_review\n")
    classified = json.loads((clone.path / ".patchlane" / "classify.json").read_text("utf-8"))
    assert classified["base"] == clone.git("rev-parse", "master").strip()
    assert classified["map"]["source"] == "base"


def test_default_branch_order(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a.py", "")
    repo.commit("one")
    assert default_base(repo.path).ref == "main"
    repo.git("branch", "master")
    assert default_base(repo.path).ref == "main"  # main before master
    upstream = GitRepo(tmp_path / "upstream")
    upstream.commit("upstream")
    upstream.git("branch", "-m", "master")
    repo.git("remote", "add", "origin", os.fspath(upstream.path))
    repo.git("fetch", "-q", "origin")
    repo.git("remote", "set-head", "origin", "master")
    # origin/HEAD first, as the local branch of its name (where a local commit lands) ...
    assert (default_base(repo.path).ref, default_base(repo.path).found) == ("master", True)
    repo.git("branch", "-D", "master")
    # ... else the remote branch itself.
    assert default_base(repo.path).ref == "origin/master"
    repo.git("remote", "remove", "origin")
    repo.git("branch", "-m", "trunk")
    base = default_base(repo.path)
    assert (base.ref, base.found) == ("trunk", False)


def test_without_a_default_branch_the_note_says_so(repo: GitRepo) -> None:
    _flat_package(repo, props=False)
    repo.git("branch", "-m", "trunk")
    stdout = _init_output(repo)
    assert "note: no origin/HEAD, main or master branch" in stdout
    assert _next_argv(stdout)[2:4] == ["--base", "trunk"]


def test_next_needs_no_seed_without_a_property_lane(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("pkg/__init__.py", "")
    repo.write("tests/test_x.py", "def test_x():\n    assert True\n")
    repo.commit("no property module")
    assert main(["--repo", os.fspath(repo.path), "init"]) == 0
    out = capsys.readouterr().out
    # No lane: the code is judged by its tests, and the seed is in the map.
    assert "the code (pkg/) is judged by the base's tests alone" in out
    assert _next_argv(out)[2:] == ["--replay", "local"]
    review_map = parse_review_map((repo.path / "review-map.yml").read_text("utf-8"), "m")
    assert (review_map.property, review_map.seed) == (None, 20260924)
    assert main(["--repo", os.fspath(repo.path), "--json", "init", "--force"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["next"] == "patchlane gate --replay local"


def test_src_layout_wins_over_top_level_modules(repo: GitRepo) -> None:
    repo.write("src/lib/__init__.py", "")
    repo.write("src/single.py", "")
    repo.write("tools.py", "")  # a helper script next to a src layout is not the code
    repo.write("flat/__init__.py", "")
    assert find_code_paths(repo.path) == ("src/lib/", "src/single.py")
    (repo.path / "src").rename(repo.path / "elsewhere")
    # elsewhere/ has no __init__.py: at the top level it is not taken for a namespace.
    assert find_code_paths(repo.path) == ("flat/", "tools.py")


def test_symlinked_package_is_not_code(repo: GitRepo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "pkg").mkdir(parents=True)
    (outside / "pkg" / "__init__.py").write_text("")
    (repo.path / "linked").symlink_to(outside / "pkg")
    (repo.path / "mod.py").symlink_to(outside / "pkg" / "__init__.py")
    repo.write("real/__init__.py", "")
    assert find_code_paths(repo.path) == ("real/",)


def test_tests_inside_the_package_make_the_package_the_replay_root(repo: GitRepo) -> None:
    # networkx's layout: no top-level tests/, test folders inside the package.
    from patchlane.commands.init_roots import find_test_roots

    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", "def add(a, b):\n    return a + b\n")
    repo.write("pkg/algo/__init__.py", "")
    repo.write(
        "pkg/algo/tests/test_core.py",
        "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    )
    repo.write("other/__init__.py", "")
    assert find_test_roots(repo.path) == ("pkg/",)
    done = run_patchlane("init", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    text = (repo.path / "review-map.yml").read_text()
    assert parse_review_map(text, "review-map.yml").replay.tests == ("pkg/",)
    assert b"note: the tests are in pkg/: lanes.replay.tests" in done.stdout
    repo.write("tests/test_top.py", "def test_top():\n    assert True\n")
    # Both hold tests: both are roots (the package's test folders are still the suite).
    assert find_test_roots(repo.path) == ("pkg/", "tests/")
