"""``patchlane triage --tasks`` end to end with the local engine: two real repositories,
three bases, real gates in real children; a rerun over the same out dir that gates
nothing; a gate child killed with SIGKILL mid-run, which the run survives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import GitRepo
from tests.triage.project import BREAKS, KEEPS, make_project

pytestmark = pytest.mark.slow

GATE = ("--replay", "local", "--today", "2026-09-24")
# Applies to no base: its context is not in src/app/__init__.py.
STALE = b"""\
diff --git a/src/app/__init__.py b/src/app/__init__.py
--- a/src/app/__init__.py
+++ b/src/app/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a * b
+    return b * a
"""


def _line(**value: str) -> str:
    return json.dumps(value) + "\n"


def _prediction(instance: str, model: str, patch: bytes) -> str:
    return _line(instance_id=instance, model_name_or_path=model, model_patch=patch.decode())


def _tasks(tmp_path: Path, tasks: list[tuple[str, GitRepo, str]], preds: list[str]) -> Path:
    (tmp_path / "tasks.jsonl").write_text(
        "".join(_line(instance_id=i, repo=str(r.path), base_commit=c) for i, r, c in tasks)
    )
    (tmp_path / "preds.jsonl").write_text("".join(preds))
    return tmp_path


def _command(where: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "patchlane", "triage", "--tasks", str(where / "tasks.jsonl"),
            "--out-dir", str(where / "out"), "--work-dir", str(where / "work"), *GATE, *extra,
            str(where / "preds.jsonl")]  # fmt: skip


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    return env


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "triage.jsonl").read_text().splitlines()]


def test_two_repositories_three_bases_and_a_rerun_that_gates_nothing(tmp_path: Path) -> None:
    one, first = make_project(tmp_path / "one")
    one.write("src/app/extra.py", "def mul(a, b):\n    return a * b\n")
    second = one.commit("a second base")
    two, _ = make_project(tmp_path / "two-template")
    two = GitRepo(tmp_path / "two")
    two.write("src/app/__init__.py", "def add(a, b):\n    return a + b\n")
    two.write("tests/test_app.py", "from app import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n")  # fmt: skip
    two.write("pyproject.toml", '[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    other = two.commit("the other repository's base")
    where = _tasks(
        tmp_path,
        [("one-1", one, first), ("one-2", one, second), ("two-1", two, other)],
        [
            _prediction("one-1", "honest", KEEPS),
            _prediction("one-1", "red", BREAKS),
            _prediction("one-2", "honest", KEEPS),
            _prediction("two-1", "stale", STALE),
            _prediction("two-1", "honest", KEEPS),
            _prediction("one-1", "copy", KEEPS),  # the first's patch under another name
        ],
    )
    proc = subprocess.run(_command(where, "-j", "2"), capture_output=True, env=_env(), check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]  # an accept_for_review
    rows = _rows(where / "out")
    got = {r["name"]: (r["verdict"], r["infra"], r["attempts"]) for r in rows}
    assert got == {
        "one-1/honest": ("accept_for_review", False, 1),
        "one-1/red": ("reject", False, 1),
        "one-2/honest": ("accept_for_review", False, 1),
        "two-1/stale": ("does_not_apply", False, 1),
        "two-1/honest": ("accept_for_review", False, 1),
        "one-1/copy": ("accept_for_review", False, 1),
    }, rows
    assert list(got) == [  # the predictions' order
        "one-1/honest", "one-1/red", "one-2/honest", "two-1/stale", "two-1/honest", "one-1/copy",
    ]  # fmt: skip
    by = {r["name"]: r for r in rows}
    accepted = (where / "out" / "accepted.honest.jsonl").read_text().splitlines()
    assert [json.loads(a)["instance_id"] for a in accepted] == ["one-1", "one-2", "two-1"]
    report = json.loads((where / "out" / "swebench-report.red.json").read_text())
    assert "resolved_ids" not in report
    assert by["one-1/copy"]["same_as"] == "one-1/honest"
    assert by["one-1/copy"]["evidence"] == "one-1/honest"
    assert by["one-1/red"]["reason"].startswith("replay:")
    assert (by["one-2/honest"]["base_commit"], by["one-2/honest"]["repo"]) == (
        second,
        str(one.path),
    )
    for name in ("one-1/honest", "one-1/red", "one-2/honest", "two-1/honest"):
        folder = where / "out" / name
        assert (folder / "verdict.json").is_file() and (folder / "review.md").is_file()
        verdict = json.loads((folder / "verdict.json").read_text())
        assert verdict["verdict"] == by[name]["verdict"]
    assert by["two-1/stale"]["evidence"] is None
    # Each base's dependency map was recorded once, on this machine.
    maps = sorted((where / "work" / "maps").rglob("maps/*/*.json"))
    assert len({m.parent.name for m in maps}) == 3, maps
    table = (where / "out" / "triage.md").read_text()
    assert "3 accept_for_review" in table or "4 accept_for_review" in table
    err = proc.stderr.decode()
    assert "tasks [local]: bases 3/3 ready; pairs 5/5 done" in err, err

    # Again over the same out dir: nothing gated, the same rows, the same exit code.
    again = subprocess.run(_command(where, "-j", "2"), capture_output=True, env=_env(), check=False)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert "bases 0/0 ready; pairs 0/0 done" in again.stderr.decode()
    assert _rows(where / "out") == rows


def _pair_children(work: Path) -> list[tuple[int, bytes]]:
    """The gate children of the run using ``work``: ``patchlane triage`` processes whose
    command line names that work dir's pairs folder."""
    marker = os.fsencode(work / "pairs")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        words = cmdline.split(b"\0")
        if b"patchlane" in words and b"triage" in words and marker in cmdline:
            found.append((int(entry.name), cmdline))
    return found


def test_a_gate_child_killed_mid_run_is_gated_again_and_the_run_finishes(tmp_path: Path) -> None:
    repo, base = make_project(tmp_path / "repo")
    where = _tasks(
        tmp_path,
        [("app-1", repo, base)],
        [_prediction("app-1", "honest", KEEPS), _prediction("app-1", "red", BREAKS)],
    )
    run = subprocess.Popen(
        _command(where), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env()
    )
    killed: list[bytes] = []

    def kill_one() -> None:
        while run.poll() is None and not killed:
            for pid, cmdline in _pair_children(where / "work"):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                killed.append(cmdline)
                break
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one)
    killer.start()
    _, err = run.communicate(timeout=600)
    killer.join()
    assert killed, "no gate child was seen"
    assert run.returncode == 0, err.decode()[-3000:]
    rows = {r["name"]: r for r in _rows(where / "out")}
    hit = [r for r in rows.values() if os.fsencode(r["key"][:12]) in killed[0]]
    assert len(hit) == 1
    assert hit[0]["attempts"] == 2 and hit[0]["infra"] is False  # retried, then judged
    assert {n: r["verdict"] for n, r in rows.items()} == {
        "app-1/honest": "accept_for_review",
        "app-1/red": "reject",
    }
