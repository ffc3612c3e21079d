"""The README's two set-up commands, timed as a newcomer runs them (issue 21).

From a fresh clone of this repository and a fresh virtualenv that is not activated (its
``bin/python3`` in place of ``python3``), run each command exactly as the README prints
it and print its wall time and exit code::

    python3 bench/bench_readme.py [--keep DIR]

The clone and the virtualenvs go into a temporary directory (or ``--keep DIR``). The first
command's demo runs with an empty cache of its own (``PATCHLANE_CACHE_DIR``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    """The README's first two ``sh`` blocks' commands, as printed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", text, re.S)[:2]]


def timed(command: str, cwd: Path, venv: Path, env: dict[str, str]) -> tuple[float, int]:
    """Run ``command`` with ``python3`` meaning ``venv``'s interpreter; return its wall
    time and exit code."""
    spelled = command.replace("python3 ", f"{venv / 'bin' / 'python3'} ")
    start = time.perf_counter()
    proc = subprocess.run(["bash", "-c", spelled], cwd=cwd, env=env, check=False)
    return time.perf_counter() - start, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="work here instead of a temporary directory")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="patchlane-readme-"))
    work.mkdir(parents=True, exist_ok=True)
    clone = work / "patchlane"
    subprocess.run(["git", "clone", "-q", os.fspath(ROOT), os.fspath(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATCHLANE_CACHE_DIR"] = os.fspath(work / "cache")
    for i, command in enumerate(readme_commands(), 1):
        venv = work / f"venv{i}"
        subprocess.run([sys.executable, "-m", "venv", os.fspath(venv)], check=True)
        seconds, code = timed(command, clone, venv, env)
        print(f"README command {i}: {seconds:.1f} s, exit {code}: {command}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
