"""The truth beside a ``triage --tasks`` run: the full plain suite at every accepted head.

patchlane's invariant is that a patch the project's full test suite fails never earns
``accept_for_review``. For each row of a tasks run's ``triage.jsonl`` whose verdict is
``accept_for_review``, this checks the head out in a fresh clone of the task's repository
(the base commit, the prediction's patch applied with ``git apply``) and runs the project's
whole suite there with the task's ``python`` (plain ``python -m pytest -q``, no patchlane),
then prints one line per accepted head and a count. Exit 1 when an accepted head's suite
fails (a red head accepted), 2 when the inputs cannot be read, a head cannot be made or the
base's suite fails as well (the environment's, not the patch's), else 0.

    python3 bench/triage_truth.py --out runs/local/out --tasks inputs/tasks.jsonl \\
        --predictions inputs/predictions.jsonl

Tasks without ``python`` run under this interpreter. It is a tool, not a test: minutes of
plain suites.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


def _head(repo: str, base: str, patch: str, where: Path) -> str | None:
    """Make the head in ``where``; return ``None``, or why it could not be made."""
    for argv in (
        ["git", "clone", "-q", "--no-checkout", repo, os.fspath(where)],
        ["git", "-C", os.fspath(where), "checkout", "-q", base],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode:
            return done.stderr.strip() or f"{argv[1]} failed"
    applied = subprocess.run(
        ["git", "-C", os.fspath(where), "apply", "-"],
        input=patch.encode("utf-8"),
        capture_output=True,
        check=False,
    )
    return applied.stderr.decode(errors="replace").strip() or None if applied.returncode else None


def _suite(python: str, where: Path) -> tuple[bool, str]:
    """Run the plain suite at ``where``; return whether it passed and its last line."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    }
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=where,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
    return done.returncode == 0, tail


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="the run's --out-dir")
    p.add_argument("--tasks", type=Path, required=True)
    p.add_argument("--predictions", type=Path, required=True, nargs="+")
    args = p.parse_args(argv)
    try:
        rows = _lines(args.out / "triage.jsonl")
        tasks = {str(t["instance_id"]): t for t in _lines(args.tasks)}
        patches = {
            (str(x["instance_id"]), str(x["model_name_or_path"])): str(x["model_patch"])
            for f in args.predictions
            for x in _lines(f)
        }
    except (OSError, ValueError, KeyError) as e:
        print(f"triage_truth: cannot read the inputs: {e}", file=sys.stderr)
        return 2
    accepted = [r for r in rows if r.get("verdict") == "accept_for_review"]
    red = 0
    for r in accepted:
        instance, model = str(r["instance_id"]), str(r["model_name_or_path"])
        task = tasks[instance]
        with tempfile.TemporaryDirectory(prefix="truth-") as tmp:
            where = Path(tmp) / "head"
            why = _head(
                str(task["repo"]), str(task["base_commit"]), patches[(instance, model)], where
            )
            if why is not None:
                print(f"{instance}/{model}: cannot make the head: {why}", file=sys.stderr)
                return 2
            python = str(task.get("python") or sys.executable)
            passed, tail = _suite(python, where)
            if not passed:
                # A suite that fails at the base as well is the environment's, not the head's.
                subprocess.run(["git", "-C", os.fspath(where), "checkout", "-q", "."], check=True)
                if not _suite(python, where)[0]:
                    print(f"{instance}/{model}: the base's suite fails too here: {tail}")
                    return 2
        red += not passed
        print(f"{instance}/{model}: full suite {'passes' if passed else 'FAILS'} ({tail})")
    print(f"{len(accepted)} accepted head(s) of {len(rows)} row(s); red heads accepted: {red}")
    return 1 if red else 0


if __name__ == "__main__":
    raise SystemExit(main())
