"""Real git repositories in temp dirs, with fixed identities and dates so ids are reproducible."""

from __future__ import annotations

import os
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
