"""Which isolation ran is in the evidence (verdict.json, the note, the receipt), and a map
with ``isolation: required`` makes a gate without the kernel sandbox undecided
(docs/architecture.md §2)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from patchlane.infra.sandbox import BWRAP_ENV, isolation
from tests.gitrepo import CLASSIFY_MAP, GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real replay

TEST_CHANGE = "def test_invoice_timestamp_order():\n    assert 1 + 1 == 2\n"


def _patched(repo: GitRepo, review_map: str) -> GitRepo:
    make_billing_repo(repo, review_map=review_map)
    repo.branch("agent")
    repo.write("tests/test_billing.py", TEST_CHANGE)
    repo.commit("tidy the clock test")
    return repo


def _gate(repo: GitRepo, out: Path, env: dict[str, str]) -> int:
    argv = [sys.executable, "-m", "patchlane", "--repo", str(repo.path), "-q", "gate"]
    argv += ["--base", "main", "--seed", "7", "--cases", "20", "--replay", "local"]
    argv += ["--out-dir", str(out)]
    return subprocess.run(argv, env=env, capture_output=True, timeout=600, check=False).returncode


def _load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def test_without_the_sandbox_a_map_that_requires_it_is_undecided(
    repo: GitRepo, tmp_path: Path
) -> None:
    _patched(repo, CLASSIFY_MAP + "isolation: required\n")
    out = tmp_path / "ev"
    assert _gate(repo, out, {**os.environ, BWRAP_ENV: "none"}) == 3
    verdict = _load(out, "verdict.json")
    assert verdict["isolation"]["kind"] in ("netns", "none")
    assert verdict["isolation"]["required"] is True
    [reason] = [r for r in verdict["reasons"] if r["lane"] == "isolation"]
    assert reason["rule"] == 6
    assert (
        "isolation: required, but the patch's code ran with no kernel sandbox (PATCHLANE_BWRAP=none)"
        in reason["message"]
    )
    # Every other lane was green: the missing sandbox alone keeps it from a person.
    assert [r["lane"] for r in verdict["reasons"]] == ["isolation"]
    assert _load(out, "receipt.json")["isolation"] in ("netns", "none")
    note = (out / "review.md").read_text(encoding="utf-8")
    assert "isolation: no kernel sandbox (PATCHLANE_BWRAP=none)" in note


def test_the_fallback_is_named_where_the_map_only_prefers_the_sandbox(
    repo: GitRepo, tmp_path: Path
) -> None:
    _patched(repo, CLASSIFY_MAP)
    out = tmp_path / "ev"
    assert _gate(repo, out, {**os.environ, BWRAP_ENV: "none"}) == 0
    verdict = _load(out, "verdict.json")
    assert verdict["verdict"] == "accept_for_review"
    assert verdict["isolation"]["required"] is False
    assert "no kernel sandbox" in (out / "review.md").read_text(encoding="utf-8")


@pytest.mark.skipif(not isolation().sandboxed, reason="no kernel sandbox on this machine")
def test_with_the_sandbox_every_record_says_bwrap(repo: GitRepo, tmp_path: Path) -> None:
    _patched(repo, CLASSIFY_MAP + "isolation: required\n")
    out = tmp_path / "ev"
    assert _gate(repo, out, dict(os.environ)) == 0
    assert _load(out, "verdict.json")["isolation"]["kind"] == "bwrap"
    assert _load(out, "receipt.json")["isolation"] == "bwrap"
    assert "isolation: bwrap" in (out / "review.md").read_text(encoding="utf-8")


def test_a_hosts_receipt_without_the_sandbox_is_undecided_where_the_map_requires_it(
    repo: GitRepo, tmp_path: Path
) -> None:
    _patched(repo, CLASSIFY_MAP + "isolation: required\n")
    out = tmp_path / "ev"
    # The host is this machine, told to run without bwrap: its receipt says so.
    host = f"env {BWRAP_ENV}=none {shlex.quote(sys.executable)} -m patchlane --repo {{repo}}"
    command = f"{host} replay run --slice {{slice}} --seed 7 --out {{receipt}}"
    argv = [sys.executable, "-m", "patchlane", "--repo", str(repo.path), "-q", "gate"]
    argv += ["--base", "main", "--seed", "7", "--cases", "20", "--replay", command]
    argv += ["--out-dir", str(out)]
    proc = subprocess.run(argv, capture_output=True, timeout=600, check=False)
    assert proc.returncode == 3, proc.stderr
    assert _load(out, "receipt.json")["isolation"] in ("netns", "none")
    messages = [r["message"] for r in _load(out, "verdict.json")["reasons"]]
    assert any("the host's receipt says isolation" in m for m in messages), messages
