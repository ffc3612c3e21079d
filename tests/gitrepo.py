"""Real git repositories in temp dirs, with fixed identities and dates so ids are reproducible."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

FIXED_ENV = {
    "GIT_AUTHOR_NAME": "Agent Smith",
    "GIT_AUTHOR_EMAIL": "agent@example.invalid",
    "GIT_COMMITTER_NAME": "Agent Smith",
    "GIT_COMMITTER_EMAIL": "agent@example.invalid",
    "GIT_AUTHOR_DATE": "2026-09-24T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-09-24T12:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C",
}


class GitRepo:
    """A git work tree for tests: write files, commit, branch, and run git."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tick = 0
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "commit.gpgsign", "false")

    @classmethod
    def copy_of(cls, template: GitRepo, path: Path) -> GitRepo:
        """A byte-for-byte copy of ``template`` at ``path`` (its objects, refs, index and
        work tree, and its clock): the same commit ids, without running git again."""
        import shutil

        shutil.copytree(template.path, path, symlinks=True)
        repo = cls.__new__(cls)
        repo.path = path
        repo._tick = template._tick
        return repo

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(FIXED_ENV)
        # Each commit one minute later, so that ids differ yet stay reproducible.
        stamp = f"2026-09-24T12:{self._tick:02d}:00+00:00"
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = stamp
        return env

    def git(self, *args: str | bytes, check: bool = True, stdin: bytes | None = None) -> str:
        proc = subprocess.run(
            ["git", "-C", os.fspath(self.path), *args],
            env=self.env(),
            capture_output=True,
            input=stdin,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args!r} failed: {proc.stderr.decode(errors='replace')}")
        return proc.stdout.decode("utf-8", "surrogateescape")

    def write(self, rel: str | bytes, content: str | bytes = "") -> Path:
        path = self.path / os.fsdecode(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def remove(self, rel: str) -> None:
        (self.path / rel).unlink()

    def commit(self, message: str = "change") -> str:
        self._tick += 1
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def branch(self, name: str, start: str = "HEAD") -> None:
        self.git("checkout", "-q", "-b", name, start)

    def checkout(self, ref: str) -> None:
        self.git("checkout", "-q", ref)


# --- Helpers shared by the foundation tests (config, git, classify, CLI) ---------------------

CLASSIFY_MAP = """\
version: 1
lanes:
  property:
    paths: ["src/billing/", "src/quota/"]
    module: "checks.billing_props"
  fixture:
    paths: ["tests/fixtures/billing/"]
    lock: "tests/fixtures/billing/LOCK.json"
  freeze:
    registry: "tests/flaky-freeze.yml"
    max_age_days: 14
ignore:
  - path: "docs/"
    reason: "prose only"
"""

PROJECT_FILES = {
    "src/billing/core.py": "def net(charge, refund):\n    return charge - refund\n",
    "src/quota/limits.py": "LIMIT = 10\n",
    "checks/__init__.py": "",
    "checks/billing_props.py": "def prop_refund_never_exceeds_charge(seed, n=200):\n    pass\n",
    "tests/test_billing.py": "def test_invoice_timestamp_order():\n    assert True\n",
    "tests/fixtures/billing/invoice_min.json": '{"charge_cents": 1200}\n',
    "tests/fixtures/billing/LOCK.json": '{"files": []}\n',
    "tests/flaky-freeze.yml": "freezes: []\n",
    "docs/guide.md": "# Guide\n",
    "README.md": "readme\n",
}


def make_project(repo: GitRepo, review_map: str | None = CLASSIFY_MAP) -> str:
    """Commit a small seed-shaped project on ``main`` (with ``review_map`` unless ``None``)
    and return the commit id. Patches are then made on a branch (see ``start_patch``)."""
    for rel, content in PROJECT_FILES.items():
        repo.write(rel, content)
    if review_map is not None:
        repo.write("review-map.yml", review_map)
    return repo.commit("base")


def start_patch(repo: GitRepo, name: str = "patch") -> None:
    """Create and check out the branch that holds the agent's patch."""
    repo.branch(name)


def git_at(path: Path, *args: str, check: bool = True) -> str:
    """Run git in ``path`` (a clone not made by ``GitRepo``) with the fixed test identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(FIXED_ENV)
    proc = subprocess.run(
        ["git", "-C", os.fspath(path), *args], env=env, capture_output=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {args!r} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def add_symlink(repo: GitRepo, rel: str | bytes, target: str) -> Path:
    """Create a symlink ``rel -> target`` in the work tree (replacing a file there)."""
    path = repo.path / os.fsdecode(rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)
    return path


def add_gitlink(repo: GitRepo, rel: str, oid: str = "1" * 40) -> None:
    """Stage a submodule entry (mode 160000) at ``rel`` pointing at commit ``oid``."""
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{oid},{rel}")


def run_patchlane(
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m patchlane ARGS`` in a real subprocess and return it (never raises).

    The environment is the caller's without ``GIT_*`` plus ``env``; stdout is strict UTF-8 so
    that an unescaped non-UTF-8 path would fail loudly rather than pass as a raw byte.
    """
    import sys

    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full["PYTHONIOENCODING"] = "utf-8:strict"
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "patchlane", *(os.fspath(a) for a in args)],
        cwd=cwd,
        env=full,
        capture_output=True,
        check=False,
    )


def stderr_lines(proc: subprocess.CompletedProcess[bytes]) -> list[str]:
    """Return the non-empty lines of a finished process's stderr."""
    return [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line]


def move(repo: GitRepo, old: str, new: str) -> None:
    """Rename a work-tree file (creating the new parent); the next commit records a rename."""
    target = repo.path / new
    target.parent.mkdir(parents=True, exist_ok=True)
    (repo.path / old).rename(target)


def commit_staged(repo: GitRepo, message: str = "change") -> str:
    """Commit the index as it is (no ``git add -A``, which would drop a bare gitlink)."""
    repo.git("commit", "-q", "--allow-empty", "-m", message)
    return repo.head()


_CLOCK_LINE = re.compile(
    r"^patchlane: (?!error: |internal error).+"
    r"(?: \.\.\.|: \d+\.\d\d s|: running for \d+ s \.\.\.|: \d+ of \d+)$"
)


def without_progress(lines: list[str]) -> list[str]:
    """Return ``lines`` of stderr less the step clock's progress lines (``NAME ...``,
    ``NAME: 1.23 s``, ``NAME: running for 10 s ...``), which any command that runs past a
    second prints on a terminal or not: a test of what a command says on failure reads
    the rest, however loaded the machine is."""
    return [line for line in lines if not _CLOCK_LINE.match(line)]
