"""The demo's repository: the bundled example copied into a fresh git repository and
committed on ``main`` with a fixed identity and fixed, increasing dates, so that commit ids
are the same on every machine.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from patchlane.errors import GitError, UsageError
from patchlane.infra.git import git_env

BASE_BRANCH = "main"
_EPOCH = datetime(2026, 9, 24, 12, 0, tzinfo=UTC)

_IDENTITY = {
    "GIT_AUTHOR_NAME": "patchlane demo",
    "GIT_AUTHOR_EMAIL": "demo@patchlane.invalid",
    "GIT_COMMITTER_NAME": "patchlane demo",
    "GIT_COMMITTER_EMAIL": "demo@patchlane.invalid",
    # The user's git configuration (signing, hooks, templates, default branch) must not
    # change what the demo commits.
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
# Copying skips what running the example's tests or importing its modules leaves behind.
_SKIP_NAMES = frozenset({"__pycache__", ".pytest_cache", ".patchlane"})


class DemoError(RuntimeError):
    """A scenario could not be set up: the bundled example and the demo disagree (a bug)."""


class DemoRepo:
    """A git repository holding the example; commits get fixed, increasing dates."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tick = 0

    def env(self) -> dict[str, str]:
        """Return the git environment: ``git_env()`` plus a fixed identity and date."""
        env = git_env()
        env.update(_IDENTITY)
        # One minute per commit: ids differ between commits yet are the same on every run.
        stamp = _EPOCH + timedelta(minutes=self._tick)
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = stamp.isoformat()
        return env

    def git(self, *args: str) -> str:
        """Run git in the repository; return stdout.

        Raises ``GitError`` when git is missing and ``DemoError`` when a command fails.
        """
        try:
            proc = subprocess.run(
                ["git", "-C", os.fspath(self.path), *args],
                env=self.env(),
                capture_output=True,
                check=False,
            )
        except FileNotFoundError as e:
            raise GitError("git is not installed or not on PATH; the demo needs it") from e
        if proc.returncode != 0:
            message = proc.stderr.decode("utf-8", "replace").strip()
            raise DemoError(f"git {' '.join(args)} failed in {self.path}: {message}")
        return proc.stdout.decode("utf-8", "replace")

    def commit(self, message: str) -> str:
        """Commit everything in the work tree; return the new commit id."""
        self._tick += 1
        self.git("add", "-A")
        self.git("-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def example_root() -> Traversable:
    """Return the bundled example as an importlib resource tree."""
    return files("patchlane.demo") / "example"


def _walk(node: Traversable, rel: str = "") -> Iterator[tuple[str, Traversable]]:
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.name in _SKIP_NAMES or child.name.endswith((".pyc", ".pyo")):
            continue
        child_rel = f"{rel}{child.name}"
        if child.is_dir():
            yield from _walk(child, child_rel + "/")
        else:
            yield child_rel, child


def copy_example(dest: Path) -> list[str]:
    """Copy the bundled example into ``dest`` (created); return the files copied, in a
    stable order (names sorted, directories depth first).

    Works from a wheel, a zip or a source tree, because it reads through importlib.resources.
    """
    copied = []
    for rel, node in _walk(example_root()):
        target = dest.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(node.read_bytes())
        copied.append(rel)
    return copied


def prepare_root(keep: Path | None) -> Path:
    """Return the directory the demo works in: ``keep`` (empty or new) or a new temp dir.

    Raises ``UsageError`` when ``keep`` exists and is not an empty directory: the demo never
    writes over someone's files.
    """
    if keep is None:
        return Path(tempfile.mkdtemp(prefix="patchlane-demo-"))
    if keep.exists() or keep.is_symlink():
        if not keep.is_dir() or keep.is_symlink():
            raise UsageError(f"--keep {keep}: exists and is not a directory")
        if any(keep.iterdir()):
            raise UsageError(f"--keep {keep}: not empty; give a new or empty directory")
    keep.mkdir(parents=True, exist_ok=True)
    return keep.resolve()


def make_repo(root: Path) -> DemoRepo:
    """Create ``root/repo`` holding the example, committed on ``main``."""
    repo = DemoRepo(root / "repo")
    repo.path.mkdir(parents=True)
    copy_example(repo.path)
    repo.git("init", "-q", "-b", BASE_BRANCH)
    repo.commit("example project: billing, quota, fixtures, review map")
    return repo
