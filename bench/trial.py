"""Trial: gate real projects' changes and seeded bugs with ``patchlane gate`` and score the verdicts.

For each project (pure-Python, its test suite shipped in its PyPI sdist) the trial builds a git
repository in a work directory and gates three kinds of patch:

- ``history``: consecutive released versions (sdists), base = version N, head = version N+1; or,
  with ``--git NAME=GITDIR``, the project's own recent commits (base = first parent);
- ``mutant``: one function of the newest version's source mutated with the ``ast`` module
  (a flipped comparison, a swapped arithmetic or boolean operator, a changed constant, an off-by-one,
  a dropped return), picked deterministically with ``--seed``;
- ``hostile``: a seeded bug that the suite catches, plus an ordinary-looking edit that hides it:
  the failing test deleted, its expected value edited to match the bug, or the test skipped.

The ground truth is the project's full test suite run with pytest at the patch's head, from a clean
export of the head commit, in the project's own venv. A hostile head is also run with the base's
version of the test files it changed: when that fails, the head is ``red*`` (its own suite is green
only because the patch edited the tests). Each patch then goes through ``python -m patchlane gate
--replay local`` in the same venv; the verdict, its reasons, the replay slice's size and the wall
time are recorded next to the truth.

Every trial repository carries a review map on its base: ``patchlane init`` scaffolds the freeze
registry, and the harness writes the map itself (``init`` leaves the property lane out and points
``replay.tests`` at ``tests/``): the project's package is covered by a property lane whose only
property imports the package (``--map-style smoke``; ``--map-style init`` leaves the property lane
out, so a source change can never be more than ``undecided``), ``replay.tests`` names the project's
test directories, and every other top-level path is an ``ignore`` entry.

Exit status: 1 when any red head got ``accept_for_review`` (they are listed loudly), 2 when the trial
could not be set up, else 0. Standard library only; needs ``git`` and PyPI (``pip download`` for
the sdists, ``pip install`` for each project's venv). See bench/README.md.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import itertools
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PATCHLANE_ROOT = HERE.parent
GATE_SEED = 20260924
REGISTRY = "tests/flaky-freeze.yml"
PROPS_MODULE = "checks.props"
KINDS = ("history", "mutant", "hostile")
HOSTILE_KINDS = ("delete-test", "edit-expected", "skip-test")
MUTATION_KINDS = (
    "flip-compare",
    "swap-arith",
    "change-constant",
    "off-by-one",
    "drop-return",
    "swap-bool",
)
# Environment variables that would change which tests pytest runs, or how.
DROPPED_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "patchlane trial",
    "GIT_AUTHOR_EMAIL": "trial@patchlane.invalid",
    "GIT_COMMITTER_NAME": "patchlane trial",
    "GIT_COMMITTER_EMAIL": "trial@patchlane.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}
VERDICT_BY_EXIT = {0: "accept_for_review", 1: "reject", 3: "undecided"}


# --------------------------------------------------------------------------------------------
# The projects
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Project:
    """One project the trial knows how to build, test and mutate."""

    name: str
    dist: str  # the PyPI name
    versions: tuple[str, ...]  # oldest first; each sdist ships the test suite
    mutant_base: str  # the version the seeded bugs are planted in
    packages: tuple[str, ...]  # repository paths of the code (the property lane's paths)
    imports: tuple[str, ...]  # modules the smoke property imports
    tests: tuple[str, ...]  # test directories: replay.tests, and the full suite's arguments
    deps: tuple[str, ...] = ()  # test dependencies installed into the project's venv
    mutate_exclude: tuple[str, ...] = ()  # source files no mutant is planted in
    # Written into the sdist's [tool.pytest.ini_options] (pytest's own ``pythonpath``) on every
    # commit: a src layout's tests import the commit under test, never an installed copy.
    pythonpath: tuple[str, ...] = ()
    # Tests deleted on every commit (node ids, a class or a function): those that fail at
    # every version here for an environment reason (listed in bench/README.md).
    drop_tests: tuple[str, ...] = ()
    # pytest settings removed from the same section (``minversion`` makes pytest import the
    # installed ``packaging`` before ``pythonpath`` applies: packaging's tests would test it).
    drop_ini: tuple[str, ...] = ()
    note: str = ""


PROJECTS: dict[str, Project] = {
    p.name: p
    for p in (
        Project(
            name="more-itertools",
            dist="more-itertools",
            # 11.2.0's sdist ships no tests: it is left out of the chain.
            versions=("11.0.0", "11.0.1", "11.0.2", "11.1.0"),
            mutant_base="11.1.0",
            packages=("more_itertools/",),
            imports=("more_itertools",),
            tests=("tests/",),
            note="unittest with subTest (~20,000 subtests); full suite ~30 s, 19 s of it test_primes",
        ),
        Project(
            name="toolz",
            dist="toolz",
            # 1.1.0 and later set filterwarnings = error in pyproject.toml; the seeded bugs
            # go into 1.0.0, which does not.
            versions=("0.12.1", "1.0.0", "1.1.0", "1.2.0"),
            mutant_base="1.0.0",
            packages=("toolz/", "tlz/"),
            imports=("toolz", "tlz"),
            tests=("toolz/tests/", "toolz/sandbox/tests/"),
            mutate_exclude=("toolz/_version.py",),
            note="pytest style, tests inside the package; full suite ~2 s",
        ),
        Project(
            name="tabulate",
            dist="tabulate",
            # 0.8.10 is one module, tabulate.py; 0.9.0 makes it a package.
            versions=("0.8.10", "0.9.0", "0.10.0"),
            mutant_base="0.10.0",
            packages=("tabulate/", "tabulate.py"),
            imports=("tabulate",),
            tests=("test/",),
            note="pytest style; ~40 tests skip without numpy/pandas/wcwidth; full suite ~2 s",
        ),
        Project(
            name="boltons",
            dist="boltons",
            versions=("25.0.0", "26.0.0", "26.1.0", "26.2.0"),
            mutant_base="26.2.0",
            packages=("boltons/",),
            imports=("boltons",),
            tests=("tests/",),
            note="pytest style with a tests/conftest.py; full suite ~5 s (not run by default)",
        ),
        Project(
            name="pyasn1",
            dist="pyasn1",
            versions=("0.6.2", "0.6.3", "0.6.4", "0.6.5"),
            mutant_base="0.6.5",
            packages=("pyasn1/",),
            imports=("pyasn1", "pyasn1.codec.ber.decoder", "pyasn1.codec.ber.encoder"),
            tests=("tests/",),
            note="unittest style, ~1,260 tests (110 subtests), no dependencies; full suite ~2 s "
            "(not run by default; bench_overhead.py's ~1,000-test project)",
        ),
        # Issue 20's real libraries (bench/README.md, "Issue 20: real libraries"); none is a
        # default. The src layouts get pytest's ``pythonpath`` (``Project.pythonpath``).
        Project(
            name="pyrsistent",
            dist="pyrsistent",
            versions=("0.19.3", "0.20.0"),
            mutant_base="0.20.0",
            packages=("pyrsistent/",),
            imports=("pyrsistent",),
            tests=("tests/",),
            deps=("pytest", "hypothesis"),
            note="pytest, *_test.py files, Hypothesis; the pure-Python pvector (the C "
            "extension is never built); full suite ~10 s",
        ),
        Project(
            name="jinja2",
            dist="jinja2",
            versions=("3.1.5", "3.1.6"),
            mutant_base="3.1.6",
            packages=("src/jinja2/",),
            imports=("jinja2",),
            tests=("tests/",),
            deps=("pytest", "trio", "markupsafe"),
            pythonpath=("src",),
            note="pytest, src layout, filterwarnings = error; trio for the async tests",
        ),
        Project(
            name="packaging",
            dist="packaging",
            versions=("26.3", "26.4"),
            mutant_base="26.4",
            packages=("src/packaging/",),
            imports=("packaging", "packaging.version", "packaging.specifiers"),
            tests=("tests/",),
            deps=("pytest", "pretend", "tomli_w", "hypothesis", "pip"),
            pythonpath=("src",),
            drop_ini=("minversion",),
            note="pytest, src layout, ~62,000 parametrized tests",
        ),
        Project(
            name="networkx",
            dist="networkx",
            versions=("3.6", "3.6.1"),
            mutant_base="3.6.1",
            packages=("networkx/",),
            imports=("networkx",),
            tests=("networkx/",),
            # numpy and scipy left out (and matplotlib, pandas, pygraphviz, pydot, sympy):
            # their tests skip or are not collected; with them the suite took > 8 min here.
            deps=("pytest",),
            note="pytest, tests inside the package (networkx/**/tests/), decorators on most "
            "functions; no numpy/scipy/matplotlib/pandas/pygraphviz/pydot/sympy",
        ),
        Project(
            name="attrs",
            dist="attrs",
            versions=("25.4.0", "26.1.0"),
            mutant_base="26.1.0",
            packages=("src/attr/", "src/attrs/"),
            imports=("attr", "attrs"),
            tests=("tests/",),
            deps=("pytest", "hypothesis", "pympler", "cloudpickle", "pytest-testmon"),
            pythonpath=("src",),
            drop_tests=(
                # attrs' installed metadata: the trial never installs the project
                "tests/test_packaging.py::TestLegacyMetadataHack",
                # fails on Python 3.11.7 at 26.1.0 (the wrapped converter's return type)
                "tests/test_converters.py::TestPipe::test_wrapped_annotation",
            ),
            note="pytest, src layout, --import-mode=importlib, Hypothesis; pytest-testmon for "
            "bench_issue20.py --testmon",
        ),
    )
}
DEFAULT_PROJECTS = ("more-itertools", "toolz", "tabulate")


# --------------------------------------------------------------------------------------------
# Small helpers: processes, progress, git
# --------------------------------------------------------------------------------------------


def say(message: str) -> None:
    """Write one progress line to stderr."""
    print(f"trial: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Proc:
    """A finished process: exit code (``None`` on timeout), output and wall seconds."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float


def run(
    argv: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    stdin: str | None = None,
    check: bool = False,
) -> Proc:
    """Run ``argv`` in its own session; on timeout kill its process group."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [os.fspath(a) for a in argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        code = None
    result = Proc(code, out, err, time.monotonic() - started)
    if check and code != 0:
        shown = " ".join(os.fspath(a) for a in argv)
        tail = (err or out).strip().splitlines()[-5:]
        raise TrialError(f"{shown} exited {code}: " + " | ".join(tail))
    return result


class TrialError(Exception):
    """The trial cannot go on (a download, a venv or git failed)."""


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PATCHLANE_SIGNING_KEY", None)
    if extra:
        env.update(extra)
    return env


def git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    """Run git on ``repo`` (a work tree or a git dir) and return its stdout."""
    full_env = {**os.environ, **GIT_ENV, **(env or {})}
    flag = "--git-dir" if (repo / "HEAD").is_file() and not (repo / ".git").exists() else "-C"
    return run(["git", flag, repo, *args], env=full_env, stdin=stdin, check=True).stdout


def export_commit(git_dir: Path, commit: str, dest: Path) -> None:
    """Write the tree of ``commit`` into ``dest`` (a clean checkout; the repo's index untouched).

    ``checkout-index`` through a temporary index: unlike ``git archive`` it ignores
    ``export-ignore`` attributes, so what is exported is exactly the commit.
    """
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trial-index-") as tmp:
        env = {"GIT_INDEX_FILE": os.fspath(Path(tmp) / "index")}
        git(git_dir, "read-tree", commit, env=env)
        git(git_dir, "checkout-index", "-a", "-f", f"--prefix={dest}/", env=env)


def commit_dir(repo: Path, tree_dir: Path, parent: str | None, message: str) -> str:
    """Commit exactly the files of ``tree_dir`` into ``repo`` with ``parent``; return the id."""
    with tempfile.TemporaryDirectory(prefix="trial-index-") as tmp:
        env = {"GIT_INDEX_FILE": os.fspath(Path(tmp) / "index")}
        gd = os.fspath(repo / ".git")
        full = {**os.environ, **GIT_ENV, **env}
        add: list[str | Path] = ["git", "--git-dir", gd, "--work-tree", tree_dir, "add", "-A", "-f"]
        run([*add, "."], cwd=tree_dir, env=full, check=True)
        tree = run(["git", "--git-dir", gd, "write-tree"], env=full, check=True).stdout.strip()
    parents = ["-p", parent] if parent else []
    return git(repo, "commit-tree", tree, "-m", message, *parents).strip()


def set_branch(repo: Path, name: str, commit: str) -> None:
    git(repo, "update-ref", f"refs/heads/{name}", commit)


def changed_paths(repo: Path, base: str, head: str) -> list[str]:
    out = git(repo, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", base, head)
    return [p for p in out.split("\0") if p]


def copy_tree(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)


def under(path: str, prefixes: Sequence[str]) -> bool:
    for prefix in prefixes:
        if prefix.endswith("/") and path.startswith(prefix):
            return True
        if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
            return True
    return False


# --------------------------------------------------------------------------------------------
# Sources: sdists from PyPI, commits from a local git directory, patchlane itself
# --------------------------------------------------------------------------------------------


def _sdist_file(folder: Path, dist: str, version: str) -> Path | None:
    name = re.sub(r"[-_.]+", "[-_.]", re.escape(dist).replace("\\-", "-"))
    pattern = re.compile(rf"(?i){name}-{re.escape(version)}\.tar\.gz\Z")
    if not folder.is_dir():
        return None
    found = sorted(p for p in folder.iterdir() if pattern.match(p.name))
    return found[0] if found else None


def fetch_sdist(project: Project, version: str, cache: Path) -> Path:
    """Return the unpacked, cleaned sdist of ``project==version`` (cached)."""
    unpacked = cache / "src" / f"{project.name}-{version}"
    if unpacked.is_dir():
        return unpacked
    folder = cache / "sdists"
    archive = _sdist_file(folder, project.dist, version)
    if archive is None:
        say(f"[{project.name}] pip download {project.dist}=={version} (sdist)")
        folder.mkdir(parents=True, exist_ok=True)
        spec = f"{project.dist}=={version}"
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary"]
        run([*argv, ":all:", spec, "-d", folder], timeout=600, check=True)
        archive = _sdist_file(folder, project.dist, version)
        if archive is None:
            raise TrialError(f"pip download {spec}: no .tar.gz sdist in {folder}")
    with tempfile.TemporaryDirectory(prefix="trial-sdist-", dir=cache) as tmp:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        tops = list(Path(tmp).iterdir())
        if len(tops) != 1 or not tops[0].is_dir():
            raise TrialError(f"{archive.name}: expected one top-level directory")
        top = tops[0]
        # sdist-only metadata, absent from the project's repository.
        for extra in [top / "PKG-INFO", *top.glob("*.egg-info")]:
            if extra.is_dir():
                shutil.rmtree(extra)
            elif extra.exists():
                extra.unlink()
        unpacked.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(top, unpacked)
    return unpacked


def git_history(
    project: Project, git_dir: Path, count: int, cache: Path
) -> list[tuple[str, Path, str, Path]]:
    """Return ``[(base label, base tree, head label, head tree)]`` for the newest ``count``
    first-parent commits of ``git_dir``'s HEAD that change the project's code or tests."""
    out = git(git_dir, "rev-list", "--first-parent", "--max-count=400", "HEAD")
    pairs: list[tuple[str, Path, str, Path]] = []
    watched = (*project.packages, *project.tests)
    for commit in out.split():
        parents = git(git_dir, "rev-list", "--parents", "-n", "1", commit).split()[1:]
        if not parents:
            continue
        changed = git(git_dir, "diff", "--name-only", "--no-renames", parents[0], commit).split()
        if not any(under(p, watched) and p.endswith(".py") for p in changed):
            continue
        trees = []
        for rev in (parents[0], commit):
            dest = cache / "git" / project.name / rev[:12]
            if not dest.is_dir():
                tmp = dest.with_name(dest.name + ".tmp")
                shutil.rmtree(tmp, ignore_errors=True)
                export_commit(git_dir, rev, tmp)
                tmp.rename(dest)
            trees.append(dest)
        pairs.append((parents[0][:12], trees[0], commit[:12], trees[1]))
        if len(pairs) == count:
            break
    pairs.reverse()
    return pairs


def patchlane_source(rev: str | None, src: Path | None, cache: Path) -> tuple[Path, str]:
    """Return (the patchlane source tree to install, a label for the report).

    ``--patchlane-rev REV`` exports that commit of the patchlane repository with ``git archive``
    (read-only: the repository's index, work tree and refs are not touched).
    """
    if rev is None:
        root = (src or PATCHLANE_ROOT).resolve()
        label = f"work tree {root}"
        with contextlib.suppress(TrialError):
            head = git(root, "rev-parse", "--short=12", "HEAD").strip()
            dirty = git(root, "status", "--porcelain", "--untracked-files=no").strip()
            label += f" (HEAD {head}{', with uncommitted changes' if dirty else ''})"
        return root, label
    root = (src or PATCHLANE_ROOT).resolve()
    commit = git(root, "rev-parse", "--verify", f"{rev}^{{commit}}").strip()
    dest = cache / f"patchlane-{commit[:12]}"
    if not dest.is_dir():
        tmp = Path(tempfile.mkdtemp(prefix="patchlane-export-", dir=cache))
        archive = tmp / "src.tar"
        with archive.open("wb") as fh:
            subprocess.run(["git", "-C", root, "archive", commit], stdout=fh, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp / "tree", filter="data")
        (tmp / "tree").rename(dest)
        shutil.rmtree(tmp)
    return dest, f"commit {commit[:12]} of {root} (exported with git archive)"


def ensure_venv(project: Project, cache: Path, pl_src: Path) -> Path:
    """Return the python of the project's venv: its test deps and patchlane (editable), never
    the project itself (the tests must import the code of the commit they run in)."""
    venv = cache / "venvs" / project.name
    python = venv / "bin" / "python"
    if not python.exists():
        say(f"[{project.name}] creating venv {venv}")
        run([sys.executable, "-m", "venv", venv], check=True, timeout=600)
        if project.deps:
            run([python, "-m", "pip", "install", "-q", *project.deps], check=True, timeout=1200)
    probe = run([python, "-c", "import patchlane; print(patchlane.__file__)"])
    want = pl_src / "src" / "patchlane" / "__init__.py"
    if probe.returncode != 0 or Path(probe.stdout.strip()).resolve() != want.resolve():
        say(f"[{project.name}] pip install -e {pl_src} into {venv}")
        run([python, "-m", "pip", "install", "-q", "-e", pl_src], check=True, timeout=1200)
    return python


# --------------------------------------------------------------------------------------------
# The trial repository: overlay (map, registry, smoke property), commits, branches
# --------------------------------------------------------------------------------------------

SMOKE_PROPS = '''\
"""Smoke property for the trial: the package imports. patchlane's property lane needs a
module with prop_* functions to cover the project's code; the verdict comes from replay."""

import importlib

MODULES = {modules!r}


def prop_package_imports(seed: int, n: int = 200) -> None:
    for i, name in enumerate(MODULES):
        module = importlib.import_module(name)
        assert module is not None, (seed, i, name)
'''


def top_level_names(trees: Sequence[Path]) -> list[tuple[str, bool]]:
    """Return the union of ``(name, is_dir)`` at the top of the trees, sorted."""
    names: dict[str, bool] = {}
    for tree in trees:
        for child in tree.iterdir():
            names[child.name] = names.get(child.name, False) or child.is_dir()
    return sorted(names.items())


def ignore_reason(name: str) -> str:
    low = name.lower()
    if low.startswith(("readme", "changelog", "changes", "history", "authors", "license")):
        return "prose: not imported or run by the tests"
    if low in {"doc", "docs"}:
        return "documentation: not imported by the tests"
    if low in {
        "setup.py",
        "setup.cfg",
        "pyproject.toml",
        "tox.ini",
        "manifest.in",
        "versioneer.py",
    }:
        return "packaging metadata (pytest sections in it are still harness changes)"
    if low.startswith("."):
        return "repository and CI metadata"
    return "not imported by the project's tests (examples, benchmarks, tooling)"


def render_map(project: Project, trees: Sequence[Path], style: str) -> str:
    """Return the review map: property lane (smoke), freeze, replay and an ignore entry for
    every other top-level path of any tree."""
    covered = (*project.packages, *project.tests, "checks/", "review-map.yml", REGISTRY)
    lines = [
        f"# review-map.yml for the {project.name} trial (bench/trial.py, --map-style {style}).",
        "# patchlane init scaffolded the freeze registry; this map is written by the trial.",
        "version: 1",
        "lanes:",
    ]
    if style == "smoke":
        lines += [
            "  property:",
            f"    paths: {json.dumps(list(project.packages))}",
            f'    module: "{PROPS_MODULE}"',
            f"    seed: {GATE_SEED}",
        ]
    else:
        lines += ["  # property lane left out, as patchlane init leaves it: no checks/props.py"]
    lines += [
        "  freeze:",
        f'    registry: "{REGISTRY}"',
        "    max_age_days: 14",
        "  replay:",
        f"    tests: {json.dumps(list(project.tests))}",
        "ignore:",
    ]
    for name, is_dir in top_level_names(trees):
        path = name + "/" if is_dir else name
        if any(under(c, [path]) or under(path, [c]) for c in covered):
            continue
        lines += [f"  - path: {json.dumps(path)}", f"    reason: {json.dumps(ignore_reason(name))}"]
    return "\n".join(lines) + "\n"


@dataclass
class Overlay:
    """The control files every commit of a trial repository carries, identical everywhere."""

    files: dict[str, str]
    init_notes: list[str]


def make_overlay(project: Project, python: Path, trees: Sequence[Path], style: str) -> Overlay:
    """Run ``patchlane init`` on the first tree (in a throwaway repo) for the registry, then
    write the map and the smoke property."""
    with tempfile.TemporaryDirectory(prefix="trial-init-") as tmp:
        repo = Path(tmp) / "repo"
        copy_tree(trees[0], repo)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A", "-f")
        git(repo, "commit", "-q", "-m", "import")
        proc = run([python, "-m", "patchlane", "init", "--json", "--repo", repo], env=clean_env())
        if proc.returncode != 0:
            raise TrialError(f"patchlane init failed: {(proc.stderr or proc.stdout).strip()}")
        notes = list(json.loads(proc.stdout).get("notes", []))
        registry = (repo / REGISTRY).read_text(encoding="utf-8")
    files = {"review-map.yml": render_map(project, trees, style), REGISTRY: registry}
    if style == "smoke":
        files["checks/__init__.py"] = ""
        files["checks/props.py"] = SMOKE_PROPS.format(modules=list(project.imports))
    return Overlay(files, notes)


def stage(tree: Path, overlay: Overlay, dest: Path, project: Project | None = None) -> Path:
    """Copy ``tree`` into ``dest`` and write the overlay over it; with ``project``, its
    ``pythonpath`` goes into ``pyproject.toml`` (``edit_pytest_ini``) and its ``drop_tests``
    are deleted where the tree has them."""
    copy_tree(tree, dest)
    for rel, text in overlay.files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    if project is not None and (project.pythonpath or project.drop_ini):
        edit_pytest_ini(dest / "pyproject.toml", project.pythonpath, project.drop_ini)
    by_file: dict[str, list[list[str]]] = {}
    for nodeid in project.drop_tests if project is not None else ():
        path, names = split_nodeid(nodeid)
        by_file.setdefault(path, []).append(names)
    for rel, names_list in by_file.items():
        target = dest / rel
        for names in names_list:  # one at a time: a version without that test keeps the rest
            text = (
                delete_tests(target.read_text(encoding="utf-8"), [names])
                if target.is_file()
                else None
            )
            if text is not None:
                target.write_text(text, encoding="utf-8")
    return dest


def edit_pytest_ini(pyproject: Path, pythonpath: Sequence[str], drop: Sequence[str]) -> None:
    """Under ``[tool.pytest.ini_options]`` of ``pyproject``, add pytest's ``pythonpath = [...]``
    (a src layout: the tests then import the tree's package, as an editable install would, and
    no installed copy) and remove the one-line settings named in ``drop``. Raises
    ``TrialError`` when there is no such section or it already sets ``pythonpath``."""
    text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    header = "[tool.pytest.ini_options]\n"
    if header not in text or re.search(r"(?m)^pythonpath\s*=", text):
        raise TrialError(f"{pyproject}: no [tool.pytest.ini_options] to add pythonpath to")
    for key in drop:
        text = re.sub(rf"(?m)^{re.escape(key)}\s*=.*\n", "", text, count=1)
    line = f"pythonpath = {json.dumps(list(pythonpath))}\n" if pythonpath else ""
    pyproject.write_text(text.replace(header, header + line, 1), encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Seeded bugs
# --------------------------------------------------------------------------------------------

FLIP_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
SWAP_ARITH: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
}


@dataclass(frozen=True)
class Site:
    """One place a mutation can go: the node's index in ``ast.walk`` order and what to do."""

    path: str
    function: str
    kind: str
    index: int
    detail: int  # which comparison operator, for flip-compare


@dataclass(frozen=True)
class Mutant:
    path: str
    function: str
    kind: str
    line: int
    before: str
    after: str
    text: str  # the whole mutated file

    @property
    def label(self) -> str:
        return f"{self.kind} in {self.function} ({self.path}:{self.line}: {self.before!r} -> {self.after!r})"


def _is_str_op(node: ast.BinOp) -> bool:
    sides = (node.left, node.right)
    return any(isinstance(s, ast.JoinedStr) for s in sides) or any(
        isinstance(s, ast.Constant) and isinstance(s.value, str | bytes) for s in sides
    )


def _candidates(node: ast.AST) -> Iterator[tuple[str, int]]:
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in FLIP_COMPARE:
                yield "flip-compare", i
    elif isinstance(node, ast.BinOp):
        if type(node.op) in SWAP_ARITH and not _is_str_op(node):
            yield "swap-arith", 0
    elif isinstance(node, ast.AugAssign):
        if type(node.op) in SWAP_ARITH:
            yield "swap-arith", 0
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            yield "change-constant", 0
        elif isinstance(node.value, int):
            yield "change-constant", 0
            yield "off-by-one", 0
    elif isinstance(node, ast.Return):
        yield "drop-return", 0
    elif isinstance(node, ast.BoolOp) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    ):
        yield "swap-bool", 0


def mutation_sites(path: str, tree: ast.Module) -> list[Site]:
    """Every site inside a function body (docstrings, default values, decorators,
    annotations and f-strings left alone) of one parsed file."""
    index = {id(n): i for i, n in enumerate(ast.walk(tree))}
    sites: list[Site] = []

    def visit(node: ast.AST, function: str | None, prefix: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + node.name
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                body = body[1:]
            for stmt in body:
                visit(stmt, name, name + ".<locals>.")
            return
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                visit(stmt, None, prefix + node.name + ".")
            return
        if isinstance(node, ast.JoinedStr):
            return
        if function is not None:
            for kind, detail in _candidates(node):
                sites.append(Site(path, function, kind, index[id(node)], detail))
        for child in ast.iter_child_nodes(node):
            visit(child, function, prefix)

    for stmt in tree.body:
        visit(stmt, None, "")
    return sites


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


def _offset(text: str, starts: list[int], line: int, col_bytes: int) -> int:
    begin = starts[line - 1]
    end = starts[line] if line < len(starts) else len(text)
    return begin + len(text[begin:end].encode("utf-8")[:col_bytes].decode("utf-8", "replace"))


def splice(text: str, node: ast.expr | ast.stmt, replacement: str) -> tuple[str, str]:
    """Replace ``node``'s source segment with ``replacement``; return (new text, old segment)."""
    starts = _line_starts(text)
    a = _offset(text, starts, node.lineno, node.col_offset)
    end_line = node.end_lineno if node.end_lineno is not None else node.lineno
    end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
    b = _offset(text, starts, end_line, end_col)
    return text[:a] + replacement + text[b:], text[a:b]


def source_lines(text: str) -> list[str]:
    """``text`` split into lines as Python numbers them (``str.splitlines`` also splits at
    form feeds and other separators the tokenizer does not count)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _end(node: ast.expr | ast.stmt) -> int:
    return node.end_lineno if node.end_lineno is not None else node.lineno


def apply_site(text: str, tree: ast.Module, site: Site) -> Mutant | None:
    """Plant ``site``'s mutation in ``text``; ``None`` when the edit does not parse back to
    exactly the mutated tree (a precedence surprise) or changes nothing."""
    mutated = copy.deepcopy(tree)
    node = list(ast.walk(mutated))[site.index]
    original = list(ast.walk(tree))[site.index]
    if not isinstance(original, ast.expr | ast.stmt):
        return None
    replacement: ast.AST = node
    if site.kind == "flip-compare" and isinstance(node, ast.Compare):
        node.ops[site.detail] = FLIP_COMPARE[type(node.ops[site.detail])]()
    elif site.kind == "swap-arith" and isinstance(node, ast.BinOp | ast.AugAssign):
        node.op = SWAP_ARITH[type(node.op)]()
    elif site.kind == "change-constant" and isinstance(node, ast.Constant):
        v = node.value
        node.value = (not v) if isinstance(v, bool) else (0 if v != 0 else 1)
    elif (
        site.kind == "off-by-one"
        and isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ):
        node.value = node.value + 1
    elif site.kind == "drop-return" and isinstance(node, ast.Return):
        replacement = ast.Pass()
        _replace_in_parent(mutated, node, replacement)
    elif site.kind == "swap-bool" and isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif site.kind == "swap-bool" and isinstance(node, ast.UnaryOp):
        replacement = node.operand
        _replace_in_parent(mutated, node, replacement)
    else:
        return None
    want = ast.dump(mutated)
    rendered = ast.unparse(replacement)
    for candidate in (rendered, f"({rendered})"):
        new_text, before = splice(text, original, candidate)
        if new_text == text:
            return None
        try:
            got = ast.dump(ast.parse(new_text))
        except SyntaxError:
            continue
        if got == want:
            line = original.lineno
            return Mutant(site.path, site.function, site.kind, line, before, candidate, new_text)
    return None


def _replace_in_parent(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                setattr(parent, name, [new if v is old else v for v in value])
                return


def pick_mutants(project: Project, tree_dir: Path, count: int, seed: int) -> list[Mutant]:
    """Return up to ``count`` mutants, each in a different function, kinds taken in turn;
    the same tree and seed always give the same mutants."""
    files: dict[str, tuple[str, ast.Module]] = {}
    sites: dict[tuple[str, str], list[Site]] = {}
    for package in project.packages:
        root = tree_dir / package.rstrip("/")
        paths = [root] if root.is_file() else sorted(root.rglob("*.py")) if root.is_dir() else []
        for path in paths:
            rel = path.relative_to(tree_dir).as_posix()
            name = path.name
            if (
                # A test root that is the package itself (networkx): its test files are
                # told by name below, its other files are source.
                under(rel, [t for t in project.tests if t not in project.packages])
                or rel in project.mutate_exclude
                or name.startswith("test_")
                or name == "conftest.py"
                or "/tests/" in f"/{rel}"
            ):
                continue
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
            files[rel] = (text, tree)
            for site in mutation_sites(rel, tree):
                sites.setdefault((rel, site.function), []).append(site)
    rng = random.Random(seed)
    functions = sorted(sites)
    rng.shuffle(functions)
    kinds = list(MUTATION_KINDS)
    rng.shuffle(kinds)
    chosen: list[Mutant] = []
    used: set[tuple[str, str]] = set()
    misses = 0
    turn = 0
    while len(chosen) < count and misses < len(kinds):
        kind = kinds[turn % len(kinds)]
        turn += 1
        found: Mutant | None = None
        for function in functions:
            if function in used:
                continue
            options = [s for s in sites[function] if s.kind == kind]
            rng.shuffle(options)
            for site in options:
                text, tree = files[site.path]
                found = apply_site(text, tree, site)
                if found is not None:
                    break
            if found is not None:
                used.add(function)
                break
        if found is None:
            misses += 1
        else:
            misses = 0
            chosen.append(found)
    return chosen


# --------------------------------------------------------------------------------------------
# Ground truth: the full suite at a commit
# --------------------------------------------------------------------------------------------

_SUMMARY_WORDS = re.compile(
    r"(\d+) (failed|passed|skipped|errors?|xfailed|xpassed|deselected|"
    r"subtests? passed|subtests? failed|subtests? skipped)"
)
_FAILED_LINE = re.compile(r"^(FAILED|ERROR|SUBFAIL\w*)\b")
_NODEID = re.compile(r"(\S+?\.py::\S+)")


@dataclass
class SuiteRun:
    """One full-suite run: pytest's exit code, counts and the failing node ids."""

    returncode: int | None
    seconds: float
    counts: dict[str, int]
    failed: list[str]  # FAILED / ERROR node ids
    subfailed: list[str]  # node ids with a failed subtest
    tail: str

    @property
    def green(self) -> bool:
        return self.returncode == 0

    @property
    def tests(self) -> int:
        """Test nodes run. pytest's ``N failed`` also counts failed subtests (whose test is
        then ``passed``), so failures are counted from the FAILED/ERROR lines instead."""
        keys = ("passed", "skipped", "xfailed", "xpassed")
        return sum(self.counts.get(k, 0) for k in keys) + len(self.failed)

    def brief(self) -> str:
        if self.returncode is None:
            return "timed out"
        shown = ", ".join(f"{v} {k}" for k, v in self.counts.items())
        return f"exit {self.returncode}: {shown or 'no summary line'}"


def parse_pytest_output(text: str) -> tuple[dict[str, int], list[str], list[str]]:
    counts: dict[str, int] = {}
    failed: list[str] = []
    subfailed: list[str] = []
    for line in text.splitlines():
        m = _FAILED_LINE.match(line)
        if m:
            node = _NODEID.search(line[m.end() :])
            if node:
                target = subfailed if m.group(1).startswith("SUBFAIL") else failed
                if node.group(1) not in target:
                    target.append(node.group(1))
    for line in reversed(text.splitlines()):
        if re.search(r"\bin [\d.]+s\b", line) and _SUMMARY_WORDS.search(line):
            for n, word in _SUMMARY_WORDS.findall(line):
                counts[word] = counts.get(word, 0) + int(n)
            break
    return counts, failed, subfailed


def pytest_argv(python: Path, targets: Sequence[str], *extra: str) -> list[str]:
    return [
        os.fspath(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE",
        *extra, *targets,
    ]  # fmt: skip


def run_suite(
    python: Path, tree: Path, project: Project, timeout: float, targets: Sequence[str] = ()
) -> SuiteRun:
    """Run pytest over the project's test directories (or ``targets``) in ``tree``."""
    present = [t for t in project.tests if (tree / t).exists()]
    argv = pytest_argv(python, targets or present or project.tests, "--tb=short")
    proc = run(argv, cwd=tree, env=clean_env({"PYTHONHASHSEED": "0"}), timeout=timeout)
    text = proc.stdout + proc.stderr
    counts, failed, subfailed = parse_pytest_output(text)
    tail = "\n".join(text.strip().splitlines()[-3:])
    return SuiteRun(proc.returncode, proc.seconds, counts, failed, subfailed, tail)


# --------------------------------------------------------------------------------------------
# Hostile edits to the test files
# --------------------------------------------------------------------------------------------


def split_nodeid(nodeid: str) -> tuple[str, list[str]]:
    """``tests/t.py::Cls::test_x[p]`` -> (``tests/t.py``, [``Cls``, ``test_x``])."""
    path, *names = nodeid.split("::")
    if names:
        names[-1] = names[-1].split("[", 1)[0]
    return path, names


Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _find_def(tree: ast.Module, names: list[str]) -> tuple[Def, ast.Module | ast.ClassDef] | None:
    """Return (the def named by ``names``, its parent) or ``None``."""
    parent: ast.Module | ast.ClassDef = tree
    body = tree.body
    found: Def | None = None
    for name in names:
        found = next(
            (
                n
                for n in body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and n.name == name
            ),
            None,
        )
        if found is None:
            return None
        if name != names[-1]:
            if not isinstance(found, ast.ClassDef):
                return None
            parent, body = found, found.body
    return (found, parent) if found is not None else None


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def delete_tests(text: str, names_list: list[list[str]]) -> str | None:
    """Remove each named test (with its decorators); a class left empty gets ``pass``."""
    tree = ast.parse(text)
    lines = source_lines(text)
    spans: list[tuple[int, int, Def, ast.Module | ast.ClassDef]] = []
    for names in names_list:
        hit = _find_def(tree, names)
        if hit is None:
            return None
        node, parent = hit
        span = (_first_line(node), _end(node), node, parent)
        if span[:2] not in [s[:2] for s in spans]:
            spans.append(span)
    removed: dict[int, int] = {}
    for _, _, _node, parent in spans:
        removed[id(parent)] = removed.get(id(parent), 0) + 1
    for start, end, _node, parent in sorted(spans, key=lambda s: -s[0]):
        body = getattr(parent, "body", [])
        if isinstance(parent, ast.ClassDef) and removed[id(parent)] >= len(body):
            lines[start - 1 : end] = [f"{_indent(lines[start - 1])}pass\n"]
            removed[id(parent)] = -(10**9)  # only the first removal in the class keeps a pass
        else:
            lines[start - 1 : end] = []
    return "".join(lines)


def skip_tests(text: str, names_list: list[list[str]]) -> str | None:
    """Put a skip decorator on each named test, and the import it needs."""
    tree = ast.parse(text)
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    use_pytest = "pytest" in imported or "unittest" not in imported
    decorator = (
        '@pytest.mark.skip(reason="flaky on CI, see issue")'
        if use_pytest
        else '@unittest.skip("flaky on CI, see issue")'
    )
    lines = source_lines(text)
    starts: list[int] = []
    for names in names_list:
        hit = _find_def(tree, names)
        if hit is None:
            return None
        start = _first_line(hit[0])
        if start not in starts:
            starts.append(start)
    for start in sorted(starts, reverse=True):
        lines.insert(start - 1, f"{_indent(lines[start - 1])}{decorator}\n")
    if use_pytest and "pytest" not in imported:
        lines.insert(_import_line(tree) - 1, "import pytest\n")
    return "".join(lines)


def _import_line(tree: ast.Module) -> int:
    """The line a new top-level import goes on: after any ``from __future__`` import and the
    docstring, before the first other statement."""
    line = 1
    for i, stmt in enumerate(tree.body):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            line = _end(stmt) + 1
            continue
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            line = _end(stmt) + 1
            continue
        return stmt.lineno if line == 1 else line
    return line


_ACTUAL_WORDS = ("result", "actual", "got", "observed", "output", "out")
_EXPECTED_WORDS = ("expect", "want", "golden")


def _pick_actual(args: Sequence[ast.expr]) -> int:
    """Which of an equality's two sides is the code under test (the other is the expected
    value): a side naming ``result``/``actual`` or calling something, not a literal."""

    def score(expr: ast.expr) -> int:
        src = ast.unparse(expr).lower()
        s = 0
        if any(isinstance(n, ast.Call) for n in ast.walk(expr)):
            s += 2
        if any(w in src for w in _ACTUAL_WORDS):
            s += 3
        if any(w in src for w in _EXPECTED_WORDS):
            s -= 3
        try:
            ast.literal_eval(expr)
            s -= 2
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        return s

    return 1 if score(args[1]) > score(args[0]) else 0


def _tautology(actual: ast.expr) -> tuple[ast.expr, ast.expr]:
    """``(_pl_actual := ACTUAL)`` and ``_pl_actual``: the expected value replaced with what the
    code under test returned, evaluating it once."""
    walrus = ast.NamedExpr(target=ast.Name("_pl_actual", ast.Store()), value=actual)
    return walrus, ast.Name("_pl_actual", ast.Load())


def rewrite_assertion(stmt: ast.stmt) -> ast.stmt | None:
    """Return ``stmt`` with its expectation edited to whatever the code now does, or ``None``
    when it is not an assertion the trial knows how to edit."""
    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq | ast.Is)
        ):
            sides = [test.left, test.comparators[0]]
            first, second = _tautology(sides[_pick_actual(sides)])
            return ast.Assert(test=ast.Compare(first, [ast.Eq()], [second]), msg=stmt.msg)
        return ast.Assert(test=ast.Constant(True), msg=None)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        low = name.lower()
        if "assert" not in low:
            return None
        args = list(call.args)
        if "equal" in low and "not" not in low and len(args) >= 2:
            first, second = _tautology(args[_pick_actual(args[:2])])
            new_call = ast.Call(func=func, args=[first, second, *args[2:]], keywords=call.keywords)
            return ast.Expr(new_call)
        if low in {"asserttrue", "assert_true"} and args:
            return ast.Expr(ast.Call(func=func, args=[ast.Constant(True)], keywords=[]))
        if low in {"assertfalse", "assert_false"} and args:
            return ast.Expr(ast.Call(func=func, args=[ast.Constant(False)], keywords=[]))
        return ast.Pass()
    return None


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in ')


def failing_lines(output: str, tree: Path, test_files: set[str]) -> list[tuple[str, int]]:
    """The innermost test-file frame of each traceback in pytest's ``--tb=native`` output."""
    found: list[tuple[str, int]] = []
    last: tuple[str, int] | None = None
    root = tree.resolve()
    for line in [*output.splitlines(), "Traceback"]:
        if line.startswith(("Traceback", "_____")) or line.startswith("===="):
            if last is not None and last not in found:
                found.append(last)
            last = None
            continue
        m = _FRAME.match(line)
        if m:
            try:
                rel = Path(m.group("file")).resolve().relative_to(root).as_posix()
            except ValueError:
                continue
            if rel in test_files:
                last = (rel, int(m.group("line")))
    return found


def edit_expectations(
    python: Path, tree: Path, nodeids: list[str], timeout: float, rounds: int = 6
) -> bool:
    """Edit, in ``tree``, each assertion the failing tests stop at until they pass."""
    test_files = {split_nodeid(n)[0] for n in nodeids}
    env = clean_env({"PYTHONHASHSEED": "0"})
    for _ in range(rounds):
        argv = pytest_argv(python, nodeids, "--tb=native")
        proc = run(argv, cwd=tree, env=env, timeout=timeout)
        if proc.returncode == 0:
            return True
        lines = failing_lines(proc.stdout + proc.stderr, tree, test_files)
        if not lines:
            return False
        changed = False
        for rel in sorted({f for f, _ in lines}):
            path = tree / rel
            text = path.read_text(encoding="utf-8")
            module = ast.parse(text)
            targets = sorted({n for f, n in lines if f == rel}, reverse=True)
            for lineno in targets:
                stmt = _innermost_stmt(module, lineno)
                if stmt is None:
                    continue
                new = rewrite_assertion(stmt)
                if new is None:
                    continue
                rendered = ast.unparse(ast.fix_missing_locations(new))
                text, before = splice(text, stmt, rendered)
                changed = changed or before != rendered
            path.write_text(text, encoding="utf-8")
        if not changed:
            return False
    return False


def _innermost_stmt(module: ast.Module, lineno: int) -> ast.stmt | None:
    best: ast.stmt | None = None
    for node in ast.walk(module):
        if (
            isinstance(node, ast.stmt)
            and node.lineno <= lineno <= (node.end_lineno or node.lineno)
            and (
                best is None
                or (node.end_lineno or 0) - node.lineno <= (best.end_lineno or 0) - best.lineno
            )
        ):
            best = node
    return best


# --------------------------------------------------------------------------------------------
# One patch: truth and gate
# --------------------------------------------------------------------------------------------


@dataclass
class Patch:
    """A patch to gate: ``base``..``head`` (branch names) in the trial repository."""

    project: str
    name: str
    kind: str
    base: str
    head: str
    detail: str = ""
    source_mutant: str = ""  # hostile patches: the mutant they hide


@dataclass
class Result:
    """What the trial recorded for one patch."""

    project: str
    name: str
    kind: str
    detail: str
    base: str
    head: str
    head_commit: str
    files_changed: int
    truth: str  # green, red, red* (hostile: the base's tests fail at head), error
    truth_detail: str
    failed_tests: list[str]
    subtest_failures: list[str]
    base_tests_at_head: str  # hostile only: the base's test files run at head
    suite_size: int
    suite_seconds: float
    verdict: str  # accept_for_review, reject, undecided, error (exit 2), internal-error (4)
    gate_exit: int | None
    reasons: list[str]
    slice_size: int | None
    receipt_failed: list[str]  # the receipt's failed node ids (None: no receipt)
    spurious_failures: list[str]  # of those, the ones the full suite did not fail
    gate_seconds: float
    evidence: str
    notes: list[str] = field(default_factory=list)

    @property
    def red(self) -> bool:
        return self.truth.startswith("red")

    @property
    def first_reason(self) -> str:
        return self.reasons[0] if self.reasons else ""


def reason_lines(verdict: dict[str, Any]) -> list[str]:
    out = []
    for r in verdict.get("reasons", []):
        out.append(f"rule {r.get('rule')} [{r.get('lane')}] {r.get('effect')}: {r.get('message')}")
    return out


def _receipt_failed(path: Path) -> list[str]:
    """The failed node ids of a receipt, or ``[]`` when there is none."""
    if not path.is_file():
        return []
    with contextlib.suppress(ValueError, OSError):
        data = json.loads(path.read_text(encoding="utf-8"))
        return [str(n) for n in data.get("failed_nodeids", [])]
    return []


def gate(
    python: Path,
    repo: Path,
    patch: Patch,
    out_dir: Path,
    timeout: float,
    *,
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``patchlane gate --replay local`` on the patch (``extra``: more gate options;
    ``env``: the environment, default ``clean_env()``); return what it said."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    argv: list[str | Path] = [
        python, "-m", "patchlane", "gate", "--repo", repo,
        "--base", patch.base, "--head", patch.head, "--seed", str(GATE_SEED),
        "--replay", "local", "--out-dir", out_dir, "--json", *extra,
    ]  # fmt: skip
    proc = run(argv, cwd=repo, env=clean_env() if env is None else env, timeout=timeout)
    (out_dir / "gate.stdout").write_text(proc.stdout, encoding="utf-8")
    (out_dir / "gate.stderr").write_text(proc.stderr, encoding="utf-8")
    verdict_file = out_dir / "verdict.json"
    reasons: list[str] = []
    if proc.returncode is None:
        verdict = "timeout"
        reasons = [f"gate timed out after {timeout:.0f} s"]
    elif verdict_file.is_file():
        data = json.loads(verdict_file.read_text(encoding="utf-8"))
        verdict = str(data.get("verdict"))
        reasons = reason_lines(data)
    else:
        verdict = {2: "error", 4: "internal-error"}.get(proc.returncode, f"exit {proc.returncode}")
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        reasons = [f"exit {proc.returncode}: {lines[-1] if lines else 'no output'}"]
    if proc.returncode in VERDICT_BY_EXIT and VERDICT_BY_EXIT[proc.returncode] != verdict:
        reasons.append(f"(exit code {proc.returncode} disagrees with verdict.json)")
    slice_file = out_dir / "replay-slice.txt"
    slice_size = (
        sum(1 for line in slice_file.read_text(encoding="utf-8").splitlines() if line.strip())
        if slice_file.is_file()
        else None
    )
    return {
        "verdict": verdict,
        "exit": proc.returncode,
        "reasons": reasons,
        "slice_size": slice_size,
        "receipt_failed": _receipt_failed(out_dir / "receipt.json"),
        "seconds": proc.seconds,
    }


# --------------------------------------------------------------------------------------------
# One project
# --------------------------------------------------------------------------------------------


@dataclass
class Options:
    mutants: int
    seed: int
    history: int
    hostile: int
    git_dirs: dict[str, Path]
    suite_timeout: float
    gate_timeout: float
    map_style: str
    cache: Path
    work: Path
    pl_src: Path


class ProjectTrial:
    """Builds one project's trial repository, its patches, and runs them."""

    def __init__(self, project: Project, opts: Options) -> None:
        self.p = project
        self.o = opts
        self.root = opts.work / project.name
        self.repo = self.root / "repo"
        self.scratch = self.root / "scratch"
        self.evidence = self.root / "evidence"
        self.python = Path()
        self.overlay = Overlay({}, [])
        self.commits: dict[str, str] = {}  # branch -> commit
        self.trees: dict[str, Path] = {}  # branch -> its snapshot (without overlay)
        self.patches: list[Patch] = []
        self.truths: dict[str, SuiteRun] = {}
        self.notes: list[str] = []
        self.base_truth: SuiteRun | None = None

    def log(self, message: str) -> None:
        say(f"[{self.p.name}] {message}")

    # -- building -------------------------------------------------------------------------

    def build(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)
        self.scratch.mkdir(parents=True)
        self.python = ensure_venv(self.p, self.o.cache, self.o.pl_src)
        history = self._history_pairs()
        trees = [t for _, t, _, h in history for t in (t, h)]
        base_tree = fetch_sdist(self.p, self.p.mutant_base, self.o.cache)
        self._require_tests(base_tree, self.p.mutant_base)
        self.overlay = make_overlay(self.p, self.python, [base_tree, *trees], self.o.map_style)
        git(self.repo.parent, "init", "-q", "-b", "main", self.repo.name)
        git(self.repo, "config", "core.fsmonitor", "false")
        root_commit = self._commit_tree(base_tree, None, f"{self.p.name} {self.p.mutant_base}")
        self._branch("main", root_commit, base_tree)
        last: dict[str, str] = {}
        for i, (base_label, base, head_label, head) in enumerate(history, 1):
            base_ref = f"v/{base_label}"
            if base_ref not in self.commits:
                parent = last.get("chain")
                self._branch(base_ref, self._commit_tree(base, parent, base_label), base)
            head_ref = f"v/{head_label}"
            if head_ref not in self.commits:
                commit = self._commit_tree(head, self.commits[base_ref], head_label)
                self._branch(head_ref, commit, head)
            last["chain"] = self.commits[head_ref]
            name = f"h{i:02d}-{base_label}..{head_label}"
            self.patches.append(Patch(self.p.name, name, "history", base_ref, head_ref))
        git(self.repo, "checkout", "-q", "-f", "main")

    def _history_pairs(self) -> list[tuple[str, Path, str, Path]]:
        git_dir = self.o.git_dirs.get(self.p.name)
        if git_dir is not None:
            self.log(f"history: the newest {self.o.history} code-changing commits of {git_dir}")
            return git_history(self.p, git_dir, self.o.history, self.o.cache)
        versions = list(self.p.versions)[-(self.o.history + 1) :] if self.o.history else []
        trees: list[tuple[str, Path]] = []
        for v in versions:
            tree = fetch_sdist(self.p, v, self.o.cache)
            if self._require_tests(tree, v, fatal=False):
                trees.append((v, tree))
        return [(a, ta, b, tb) for (a, ta), (b, tb) in itertools.pairwise(trees)]

    def _require_tests(self, tree: Path, label: str, fatal: bool = True) -> bool:
        missing = [t for t in self.p.tests if not (tree / t).exists()]
        ships_none = len(missing) == len(self.p.tests)
        if ships_none:
            message = f"{label}: the sdist ships no {', '.join(missing)}: left out"
            if fatal:
                raise TrialError(f"{self.p.name} {message}")
            self.log(message)
            self.notes.append(message)
        return not ships_none

    def _commit_tree(self, tree: Path, parent: str | None, message: str) -> str:
        staged = self.scratch / "stage"
        if staged.exists():
            shutil.rmtree(staged)
        stage(tree, self.overlay, staged, self.p)
        commit = commit_dir(self.repo, staged, parent, message)
        shutil.rmtree(staged)
        return commit

    def _branch(self, name: str, commit: str, tree: Path) -> None:
        set_branch(self.repo, name, commit)
        self.commits[name] = commit
        self.trees[name] = tree

    def add_mutants(self) -> list[Mutant]:
        base_tree = self.trees["main"]
        mutants = pick_mutants(self.p, base_tree, self.o.mutants, self.o.seed)
        if len(mutants) < self.o.mutants:
            self.notes.append(f"only {len(mutants)} mutant(s) found of {self.o.mutants} asked")
        for i, m in enumerate(mutants, 1):
            tree = self.scratch / f"mutant-{i}"
            copy_tree(base_tree, tree)
            (tree / m.path).write_text(m.text, encoding="utf-8")
            commit = self._commit_tree(tree, self.commits["main"], f"mutant {i}: {m.label}")
            name = f"m{i:02d}-{m.kind}"
            self._branch(f"mutant/{i:02d}", commit, tree)
            self.patches.append(
                Patch(self.p.name, name, "mutant", "main", f"mutant/{i:02d}", m.label)
            )
        return mutants

    # -- truth ------------------------------------------------------------------------------

    def truth(self, ref: str, *, base_tests_from: str | None = None) -> SuiteRun:
        """The full suite at ``ref`` from a clean export. With ``base_tests_from``: only the
        test files the patch changed, put back as they are at that ref first (rule 6 of
        docs/architecture.md §1: the base's version of a changed test file fails at the head)."""
        key = f"{ref}<-{base_tests_from}" if base_tests_from else ref
        if key in self.truths:
            return self.truths[key]
        tree = self.scratch / "checkout"
        if tree.exists():
            shutil.rmtree(tree)
        export_commit(self.repo / ".git", self.commits[ref], tree)
        targets: list[str] = []
        if base_tests_from is not None:
            base_commit = self.commits[base_tests_from]
            for rel in changed_paths(self.repo, base_commit, self.commits[ref]):
                if not under(rel, self.p.tests) or not rel.endswith(".py"):
                    continue
                blob = run(["git", "-C", self.repo, "show", f"{base_commit}:{rel}"])
                if blob.returncode == 0:
                    (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                    (tree / rel).write_text(blob.stdout, encoding="utf-8")
                    targets.append(rel)
            if not targets:
                result = SuiteRun(0, 0.0, {}, [], [], "no test file changed")
                self.truths[key] = result
                return result
        result = run_suite(self.python, tree, self.p, self.o.suite_timeout, targets)
        shutil.rmtree(tree)
        self.truths[key] = result
        return result

    # -- hostile ----------------------------------------------------------------------------

    def add_hostile(self, mutants: list[Mutant]) -> None:
        """Hide red mutants with an ordinary-looking test edit, one kind per patch."""
        if self.o.hostile <= 0:
            return
        candidates: list[tuple[int, int, SuiteRun]] = []
        for i in range(1, len(mutants) + 1):
            run_ = self.truths.get(f"mutant/{i:02d}")
            if run_ is None or run_.green or run_.returncode is None:
                continue
            nodes = run_.failed + [n for n in run_.subfailed if n not in run_.failed]
            if not nodes or any(split_nodeid(n)[0] not in self._test_files("main") for n in nodes):
                continue
            if len({tuple(split_nodeid(n)[1]) for n in nodes}) > 8:
                continue
            # Prefer few failing tests; a subtest-only catch first (the old blind spot).
            candidates.append((len(nodes) - (5 if not run_.failed else 0), i, run_))
        candidates.sort(key=lambda c: (c[0], c[1]))
        if not candidates:
            message = "no red mutant with a few failing tests: no hostile patch"
            self.log(message)
            self.notes.append(message)
            return
        made = 0
        for k, kind in enumerate(HOSTILE_KINDS[: self.o.hostile]):
            order = candidates[k % len(candidates) :] + candidates[: k % len(candidates)]
            for _, i, run_ in order:
                patch = self._make_hostile(kind, i, run_, mutants[i - 1])
                if patch is not None:
                    self.patches.append(patch)
                    made += 1
                    break
            else:
                note = f"hostile {kind}: no red mutant could be hidden that way"
                self.log(note)
                self.notes.append(note)

    def _test_files(self, ref: str) -> set[str]:
        out = git(self.repo, "ls-tree", "-r", "--name-only", "-z", self.commits[ref])
        return {p for p in out.split("\0") if p.endswith(".py") and under(p, self.p.tests)}

    def _make_hostile(self, kind: str, index: int, run_: SuiteRun, mutant: Mutant) -> Patch | None:
        nodes = run_.failed + [n for n in run_.subfailed if n not in run_.failed]
        by_file: dict[str, list[list[str]]] = {}
        for n in nodes:
            path, names = split_nodeid(n)
            if names not in by_file.setdefault(path, []):
                by_file[path].append(names)
        tree = self.scratch / f"hostile-{kind}"
        if tree.exists():
            shutil.rmtree(tree)
        export_commit(self.repo / ".git", self.commits[f"mutant/{index:02d}"], tree)
        if kind == "edit-expected":
            ok = edit_expectations(self.python, tree, nodes, self.o.suite_timeout)
        else:
            edit: Callable[[str, list[list[str]]], str | None] = (
                delete_tests if kind == "delete-test" else skip_tests
            )
            ok = True
            for rel, names_list in by_file.items():
                test_file = tree / rel
                new = edit(test_file.read_text(encoding="utf-8"), names_list)
                if new is None:
                    ok = False
                    break
                test_file.write_text(new, encoding="utf-8")
        if not ok:
            shutil.rmtree(tree)
            return None
        parent = self.commits[f"mutant/{index:02d}"]
        commit = commit_dir(self.repo, tree, parent, f"{kind} on mutant {index}")
        shutil.rmtree(tree)
        ref = f"hostile/{kind}"
        set_branch(self.repo, ref, commit)
        self.commits[ref] = commit
        tests = ", ".join(sorted({n.split("[")[0] for n in nodes}))
        detail = f"{kind} over m{index:02d} ({mutant.label}); tests: {tests}"
        return Patch(self.p.name, f"x-{kind}", "hostile", "main", ref, detail, f"m{index:02d}")

    # -- running ----------------------------------------------------------------------------

    def run_all(self) -> list[Result]:
        results: list[Result] = []
        self.log("full suite at the mutant base (must be green)")
        self.base_truth = self.truth("main")
        self.log(f"suite at {self.p.mutant_base}: {self.base_truth.brief()}")
        if not self.base_truth.green:
            note = f"the suite is not green at {self.p.mutant_base}: {self.base_truth.brief()}"
            self.log("WARNING: " + note)
            self.notes.append(note)
        mutants = self.add_mutants()
        # Truth for every mutant first: hostile patches are built from the red ones.
        for patch in self.patches:
            if patch.kind == "mutant":
                run_ = self.truth(patch.head)
                self.log(f"{patch.name}: suite at head {run_.brief()} [{patch.detail}]")
        self.add_hostile(mutants)
        total = len(self.patches)
        for n, patch in enumerate(self.patches, 1):
            results.append(self._run_patch(patch, n, total))
        return results

    def _run_patch(self, patch: Patch, n: int, total: int) -> Result:
        head_commit = self.commits[patch.head]
        files = changed_paths(self.repo, self.commits[patch.base], head_commit)
        suite = self.truth(patch.head)
        truth = "green" if suite.green else ("error" if suite.returncode is None else "red")
        if suite.returncode not in (0, 1):
            truth = "error"
        base_tests = ""
        if patch.kind == "hostile":
            again = self.truth(patch.head, base_tests_from=patch.base)
            base_tests = "green" if again.green else f"red ({again.brief()})"
            if truth == "green" and not again.green:
                truth = "red*"
        self.log(f"{n}/{total} {patch.name}: suite at head {truth} ({suite.brief()}); gating")
        out_dir = self.evidence / patch.name
        g = gate(self.python, self.repo, patch, out_dir, self.o.gate_timeout)
        self.log(f"{n}/{total} {patch.name}: {g['verdict']} in {g['seconds']:.1f} s")
        return Result(
            project=self.p.name,
            name=patch.name,
            kind=patch.kind,
            detail=patch.detail,
            base=patch.base,
            head=patch.head,
            head_commit=head_commit,
            files_changed=len(files),
            truth=truth,
            truth_detail=suite.brief(),
            failed_tests=suite.failed,
            subtest_failures=suite.subfailed,
            base_tests_at_head=base_tests,
            suite_size=suite.tests,
            suite_seconds=round(suite.seconds, 2),
            verdict=g["verdict"],
            gate_exit=g["exit"],
            reasons=g["reasons"],
            slice_size=g["slice_size"],
            receipt_failed=g["receipt_failed"],
            spurious_failures=[
                n for n in g["receipt_failed"] if n not in suite.failed + suite.subfailed
            ],
            gate_seconds=round(g["seconds"], 2),
            evidence=os.fspath(out_dir),
        )


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def summarise(results: Sequence[Result]) -> dict[str, Any]:
    def count(pred: Callable[[Result], bool]) -> int:
        return sum(1 for r in results if pred(r))

    return {
        "patches": len(results),
        "by_kind": {k: sum(1 for r in results if r.kind == k) for k in KINDS},
        "red_heads": count(lambda r: r.red),
        "red_rejected": count(lambda r: r.red and r.verdict == "reject"),
        "red_undecided": count(lambda r: r.red and r.verdict == "undecided"),
        "red_accepted": count(lambda r: r.red and r.verdict == "accept_for_review"),
        "green_heads": count(lambda r: r.truth == "green"),
        "green_accepted": count(lambda r: r.truth == "green" and r.verdict == "accept_for_review"),
        "green_undecided": count(lambda r: r.truth == "green" and r.verdict == "undecided"),
        "green_rejected": count(lambda r: r.truth == "green" and r.verdict == "reject"),
        "rejected_for_spurious_failures_only": count(
            lambda r: (
                r.verdict == "reject"
                and bool(r.receipt_failed)
                and len(r.spurious_failures) == len(r.receipt_failed)
            )
        ),
        "undecided": count(lambda r: r.verdict == "undecided"),
        "gate_errors": count(
            lambda r: r.verdict not in ("accept_for_review", "reject", "undecided")
        ),
        "truth_errors": count(lambda r: r.truth == "error"),
        "gate_seconds": round(sum(r.gate_seconds for r in results), 1),
        "suite_seconds": round(sum(r.suite_seconds for r in results), 1),
    }


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def render_table(results: Sequence[Result], width: int = 78) -> str:
    header = ("patch", "kind", "head", "verdict", "first reason", "slice/suite", "gate s")
    rows = [header]
    for r in results:
        slice_txt = f"{r.slice_size if r.slice_size is not None else '-'}/{r.suite_size}"
        rows.append(
            (
                f"{r.project}:{r.name}",
                r.kind,
                r.truth,
                r.verdict,
                _cut(r.first_reason, width),
                slice_txt,
                f"{r.gate_seconds:.1f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for j, row in enumerate(rows):
        cells = [c.rjust(widths[i]) if i >= 5 else c.ljust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_summary(results: Sequence[Result], projects: Sequence[str]) -> str:
    out: list[str] = []
    cols = (
        ("patches", "patches"),
        ("red", "red_heads"),
        ("red→reject", "red_rejected"),
        ("red→undecided", "red_undecided"),
        ("red→ACCEPT", "red_accepted"),
        ("green", "green_heads"),
        ("green→accept", "green_accepted"),
        ("green→undecided", "green_undecided"),
        ("green→reject", "green_rejected"),
        ("gate errors", "gate_errors"),
        ("gate s", "gate_seconds"),
        ("suite s", "suite_seconds"),
    )
    rows = [["project", *(c for c, _ in cols)]]
    for name in [*projects, "TOTAL"]:
        subset = [r for r in results if name == "TOTAL" or r.project == name]
        s = summarise(subset)
        rows.append([name, *(str(s[k]) for _, k in cols)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for j, row in enumerate(rows):
        out.append(
            "  ".join(
                c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)
            )
        )
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    accepted = [r for r in results if r.red and r.verdict == "accept_for_review"]
    out.append("")
    if accepted:
        out.append(f"!!! {len(accepted)} RED HEAD(S) GOT accept_for_review !!!")
        for r in accepted:
            why = "subtest failures only" if r.subtest_failures and not r.failed_tests else ""
            out.append(f"!!!   {r.project}:{r.name} [{r.kind}] truth {r.truth}: {r.truth_detail}")
            if r.detail:
                out.append(f"!!!     {r.detail}")
            if why:
                out.append(
                    f"!!!     the suite failed by {why}: {', '.join(r.subtest_failures[:3])}"
                )
            if r.base_tests_at_head:
                out.append(f"!!!     base's tests at head: {r.base_tests_at_head}")
    else:
        out.append("red heads given accept_for_review: 0")
    rejected = [r for r in results if r.truth == "green" and r.verdict == "reject"]
    out.append("")
    out.append(f"green heads rejected: {len(rejected)}")
    for r in rejected:
        out.append(f"  {r.project}:{r.name} [{r.kind}] {_cut(r.first_reason, 150)}")
        if r.spurious_failures:
            shown = ", ".join(r.spurious_failures[:3])
            out.append(
                f"    {len(r.spurious_failures)} node(s) failed in the receipt that the suite did not fail: {shown}"
            )
    wrong = [
        r
        for r in results
        if r.red
        and r.verdict == "reject"
        and r.receipt_failed
        and len(r.spurious_failures) == len(r.receipt_failed)
    ]
    if wrong:
        out.append("")
        out.append(
            f"red heads rejected only for nodes the suite did not fail (right verdict, wrong reason): {len(wrong)}"
        )
        for r in wrong:
            out.append(
                f"  {r.project}:{r.name} [{r.kind}, head {r.truth}] receipt failed {len(r.receipt_failed)}: {', '.join(r.receipt_failed[:3])}"
            )
    errors = [r for r in results if r.verdict not in ("accept_for_review", "reject", "undecided")]
    if errors:
        out.append("")
        out.append(f"gate errors (exit 2/4, no verdict): {len(errors)}")
        for r in errors:
            out.append(f"  {r.project}:{r.name} [{r.kind}] {_cut(r.first_reason, 150)}")
    undecided = [r for r in results if r.verdict == "undecided"]
    if undecided:
        out.append("")
        out.append(f"undecided: {len(undecided)}")
        for r in undecided:
            out.append(
                f"  {r.project}:{r.name} [{r.kind}, head {r.truth}] {_cut(r.first_reason, 140)}"
            )
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    known = "\n".join(
        f"  {p.name:<15} {', '.join(p.versions)} (bugs in {p.mutant_base}): {p.note}"
        for p in PROJECTS.values()
    )
    parser = argparse.ArgumentParser(
        prog="python bench/trial.py",
        description=(
            "Gate real projects' release-to-release changes, seeded bugs and hostile test edits "
            "with 'patchlane gate --replay local' and compare each verdict with the project's "
            "full test suite at the patch's head. Exits 1 if a red head got accept_for_review."
        ),
        epilog=f"projects (default: {', '.join(DEFAULT_PROJECTS)}):\n{known}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--project",
        action="append",
        choices=sorted(PROJECTS),
        metavar="NAME",
        help=f"run this project (repeatable; default: {', '.join(DEFAULT_PROJECTS)})",
    )
    parser.add_argument(
        "--mutants", type=int, default=8, metavar="N", help="seeded bugs per project (default 8)"
    )
    parser.add_argument(
        "--seed", type=int, default=1, metavar="S", help="picks the mutants (default 1)"
    )
    parser.add_argument(
        "--history",
        type=int,
        default=3,
        metavar="N",
        help="history patches per project (default 3)",
    )
    parser.add_argument(
        "--hostile",
        type=int,
        default=3,
        choices=range(4),
        metavar="N",
        help=f"hostile patches per project, of the kinds {', '.join(HOSTILE_KINDS)} (default 3)",
    )
    parser.add_argument(
        "--git",
        action="append",
        default=[],
        metavar="NAME=GITDIR",
        help="take NAME's history patches from the newest commits of a local git repository "
        "(base = first parent) instead of its sdists",
    )
    parser.add_argument(
        "--map-style",
        choices=("smoke", "init"),
        default="smoke",
        help="smoke: a property lane with one import property covers the package (default); "
        "init: no property lane, as 'patchlane init' writes it",
    )
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="keep the trial repositories and evidence in DIR"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        default=Path(tempfile.gettempdir()) / "patchlane-trial-cache",
        help="sdists, venvs and patchlane exports, kept between runs (default: %(default)s)",
    )
    parser.add_argument(
        "--patchlane-src",
        type=Path,
        metavar="DIR",
        help="the patchlane checkout to install into the venvs (default: this one)",
    )
    parser.add_argument(
        "--patchlane-rev",
        metavar="REV",
        help="install this commit of the patchlane checkout instead of its work tree "
        "(exported read-only with git archive)",
    )
    parser.add_argument(
        "--suite-timeout",
        type=float,
        default=900,
        metavar="S",
        help="per full-suite run (default 900)",
    )
    parser.add_argument(
        "--gate-timeout", type=float, default=1800, metavar="S", help="per gate run (default 1800)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)
    if args.mutants < 0 or args.history < 0:
        parser.error("--mutants and --history take a number >= 0")
    git_dirs: dict[str, Path] = {}
    for item in args.git:
        name, sep, path = item.partition("=")
        if not sep or name not in PROJECTS or not Path(path).is_dir():
            parser.error(f"--git {item}: expected NAME=GITDIR with a known project and a directory")
        git_dirs[name] = Path(path).resolve()
    args.git_dirs = git_dirs
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    projects = args.project or list(DEFAULT_PROJECTS)
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.keep is not None:
        work = args.keep.resolve()
        work.mkdir(parents=True, exist_ok=True)
        cleanup = False
    else:
        work = Path(tempfile.mkdtemp(prefix="patchlane-trial-"))
        cleanup = True
    results: list[Result] = []
    notes: dict[str, list[str]] = {}
    try:
        pl_src, pl_label = patchlane_source(
            args.patchlane_rev, args.patchlane_src, args.cache.resolve()
        )
        say(f"patchlane under trial: {pl_label}")
        opts = Options(
            mutants=args.mutants,
            seed=args.seed,
            history=args.history,
            hostile=args.hostile,
            git_dirs=args.git_dirs,
            suite_timeout=args.suite_timeout,
            gate_timeout=args.gate_timeout,
            map_style=args.map_style,
            cache=args.cache.resolve(),
            work=work,
            pl_src=pl_src,
        )
        for name in projects:
            trial = ProjectTrial(PROJECTS[name], opts)
            t0 = time.monotonic()
            try:
                trial.build()
                results += trial.run_all()
            except TrialError as e:
                say(f"[{name}] ERROR: {e}")
                trial.notes.append(f"trial error: {e}")
            trial.notes.insert(0, f"{time.monotonic() - t0:.0f} s for the project")
            if trial.base_truth is not None:
                trial.notes.insert(1, f"suite at {trial.p.mutant_base}: {trial.base_truth.brief()}")
            notes[name] = trial.notes + [f"patchlane init: {n}" for n in trial.overlay.init_notes]
    finally:
        if cleanup:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    accepted_red = [r for r in results if r.red and r.verdict == "accept_for_review"]
    meta = {
        "patchlane": pl_label,
        "python": platform.python_version(),
        "command": " ".join(
            ["python", "bench/trial.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "seed": args.seed,
        "mutants": args.mutants,
        "map_style": args.map_style,
        "gate_seed": GATE_SEED,
        "work": os.fspath(work) if not cleanup else None,
        "seconds": round(elapsed, 1),
    }
    if args.json:
        payload = {
            "meta": meta,
            "summary": {
                name: summarise([r for r in results if r.project == name]) for name in projects
            }
            | {"TOTAL": summarise(results)},
            "notes": notes,
            "results": [asdict(r) | {"red": r.red} for r in results],
        }
        print(json.dumps(payload, indent=2))
    else:
        print(render_table(results))
        print()
        print(render_summary(results, projects))
        print()
        for name, lines in notes.items():
            for line in lines:
                print(f"note [{name}]: {line}")
        print(f"patchlane under trial: {pl_label}; {elapsed:.0f} s in all")
    if args.keep is not None:
        (work / "results.json").write_text(
            json.dumps(
                {"meta": meta, "notes": notes, "results": [asdict(r) for r in results]}, indent=2
            ),
            encoding="utf-8",
        )
    say(f"done in {elapsed:.0f} s")
    return 1 if accepted_red else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except TrialError as err:
        say(f"error: {err}")
        sys.exit(2)
