"""Red-team harness for patchlane's dependency map.

Usage: python3 bench/redteam/harness.py bench/redteam/scenarios/NAME.py [...]
(work directory: $REDTEAM_DIR, else $TMPDIR/redteam-map)

A scenario file is Python defining:
  NAME: str
  BASE: dict[path, text]   (files of the base commit on main, beyond the common skeleton)
  PATCH: dict[path, text | None]  (head overlay; None deletes)
  optional EXTRA_COMMON: bool (default True: add the skeleton: pytest.ini, review map,
      checks/props.py, .gitignore)
  optional PROP: str (checks/props.py text)

For each it builds $REDTEAM_DIR/runs/NAME/repo (main = base, agent = patch), runs the
full suite at the head (python3 -m pytest), then the gate with --dep-map auto (fresh cache
$REDTEAM_DIR/runs/NAME/cache) and with --dep-map off, and prints a summary; the
replay reports are copied to runs/NAME/report-{auto,off}.json.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(os.environ.get("REDTEAM_DIR") or Path(tempfile.gettempdir(), "redteam-map")) / "runs"
GIT = ["git", "-c", "user.name=x", "-c", "user.email=x@y", "-c", "commit.gpgsign=false"]

PYTEST_INI = """[pytest]
pythonpath = src .
testpaths = tests
"""

REVIEW_MAP = """version: 1
lanes:
  property:
    paths: ["src/pkg/"]
    module: "checks.props"
    seed: 1
  replay:
    tests: ["tests/"]
"""

PROP = """import pkg


def prop_imports(seed: int, n: int = 200) -> None:
    assert pkg is not None, (seed, 0)
"""


def write(root: Path, files: dict[str, str | bytes | None]) -> None:
    for path, text in files.items():
        target = root / path
        if text is None:
            if target.exists():
                target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)


def sh(
    cmd: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)


def build(scn: dict) -> Path:
    name = scn["NAME"]
    where = ROOT / name
    if where.exists():
        shutil.rmtree(where)
    repo = where / "repo"
    repo.mkdir(parents=True)
    sh(["git", "init", "-q", "-b", "main"], repo)
    files: dict[str, str | bytes | None] = {}
    if scn.get("EXTRA_COMMON", True):
        files.update(
            {
                "pytest.ini": PYTEST_INI,
                "review-map.yml": REVIEW_MAP,
                "checks/__init__.py": "",
                "checks/props.py": scn.get("PROP", PROP),
                ".gitignore": ".patchlane/\n__pycache__/\n.pytest_cache/\n.hypothesis/\n",
            }
        )
    files.update(scn["BASE"])
    write(repo, files)
    sh(["git", "add", "-A"], repo)
    r = sh([*GIT, "commit", "-q", "-m", "base"], repo)
    assert r.returncode == 0, r.stderr
    sh(["git", "checkout", "-q", "-b", "agent"], repo)
    write(repo, scn["PATCH"])
    sh(["git", "add", "-A"], repo)
    r = sh([*GIT, "commit", "-q", "-m", "patch"], repo)
    assert r.returncode == 0, r.stderr
    # scrub caches the build may have left
    for p in repo.rglob("__pycache__"):
        shutil.rmtree(p, ignore_errors=True)
    return repo


def full_suite(repo: Path, label: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHLANE")}
    r = sh([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], repo, env)
    for p in repo.rglob("__pycache__"):
        shutil.rmtree(p, ignore_errors=True)
    tail = [ln for ln in r.stdout.splitlines() if ln.strip()][-1:] or [""]
    failed = [ln for ln in r.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    return r.returncode, tail[0] + ("\n      " + "\n      ".join(failed) if failed else "")


def gate(repo: Path, mode: str, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHLANE")}
    out = repo.parent / f"evidence-{mode}"
    if out.exists():
        shutil.rmtree(out)
    cmd = [
        sys.executable,
        "-m",
        "patchlane",
        "--repo",
        str(repo),
        "-q",
        "gate",
        "--base",
        "main",
        "--seed",
        "1",
        "--replay",
        "local",
        "--dep-map",
        mode,
        "--dep-cache",
        str(cache),
        "--out-dir",
        str(out),
    ]
    r = sh(cmd, repo, env)
    rep_path = out / "replay-report.json"
    rep = json.loads(rep_path.read_text()) if rep_path.is_file() else {}
    verdict_path = out / "verdict.json"
    verdict = json.loads(verdict_path.read_text()) if verdict_path.is_file() else {}
    if rep_path.is_file():
        shutil.copy(rep_path, repo.parent / f"report-{mode}.json")
    return {
        "rc": r.returncode,
        "stderr": r.stderr.strip()[-600:],
        "report": rep,
        "verdict": verdict,
    }


def summarise(rep: dict) -> str:
    keys = (
        "status",
        "outcome",
        "slice_count",
        "suite_size",
        "slice_rules",
        "dependency_map",
        "failed",
        "passed",
        "unreached",
        "review_events",
        "reason",
    )
    return json.dumps({k: rep.get(k) for k in keys if k in rep}, indent=None)


def main() -> None:
    for file in sys.argv[1:]:
        scn = runpy.run_path(file)
        repo = build(scn)
        code, tail = full_suite(repo, "head")
        print(f"=== {scn['NAME']}  ({file})")
        print(f"  full suite at head: exit {code}: {tail}")
        sh(["git", "checkout", "-q", "main"], repo)
        bcode, btail = full_suite(repo, "base")
        sh(["git", "checkout", "-q", "agent"], repo)
        print(f"  full suite at base: exit {bcode}: {btail.splitlines()[0]}")
        verdicts = {
            0: "accept_for_review",
            1: "reject",
            2: "bad input",
            3: "undecided",
            4: "internal",
        }
        for mode in ("auto", "off"):
            g = gate(repo, mode, repo.parent / "cache")
            print(f"  gate --dep-map {mode}: exit {g['rc']} ({verdicts.get(g['rc'])})")
            if g["rc"] not in (0, 1, 3):
                print("    stderr:", g["stderr"])
            print("    replay:", summarise(g["report"]))
            reasons = g["verdict"].get("reasons") or g["verdict"].get("reason")
            if reasons:
                print("    verdict reasons:", json.dumps(reasons)[:600])
        print(flush=True)


if __name__ == "__main__":
    main()
