"""The base's oracle audit (issue 33): a patch that changes no property module and nothing
they import gets the base's findings, made once per base and kept in a sealed cache
(``lanes.property.cache.audits``), so that a near-vacuous base property is flagged on every
patch against that base, a comment-only one too; and the gate starts no thread for it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import patchlane.gate.run
import patchlane.lanes.property.audit
import patchlane.lanes.property.lane
from patchlane.formats.property_report import PropertyReport
from patchlane.infra.cachekey import load_or_create_key
from patchlane.lanes.property.cache import audits, sealed
from patchlane.lanes.property.jobs import guarded
from patchlane.lanes.property.lane import PropertyRequest, run_property_lane
from patchlane.main import main
from patchlane.project.classify import load_map_file
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

# Near-vacuous: it calls the code under test and only checks that a result comes back (no
# exception), so every mutant of ``refund`` survives it.
RETURNS = """\
from shop import refund


def prop_refund_returns(seed, n=200):
    for i in range(n):
        refund(seed + i, i)
"""
# Code under the lane's paths that the property does not import.
OTHER = "def limit():\n    return 10\n"
FINDING = ("prop_refund_returns", "survives_mutants")


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory of this test's own: what the cache holds is this test's."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PATCHLANE_CACHE_DIR", str(cache))
    return cache


def make(repo: GitRepo) -> None:
    """The shop with the near-vacuous property and a module it does not import."""
    P.make(repo, RETURNS, files={"src/shop/other.py": OTHER})


def comment(repo: GitRepo, path: str, text: str = "# Says nothing new.") -> None:
    """Commit a comment-only patch: one comment line on top of ``path``."""
    old = (repo.path / path).read_text(encoding="utf-8")
    P.patch(repo, {path: f"{text}\n{old}"})


def gate(repo: GitRepo, out: Path, *extra: str) -> tuple[int, dict[str, object], str]:
    """Gate the checked-out branch against ``main``; return the exit code, the property
    report and the review note."""
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--replay", "none"]
    code = main([*argv, "--out-dir", str(out), *extra])
    report = json.loads((out / "property-report.json").read_text(encoding="utf-8"))
    note = (out / "review.md").read_text(encoding="utf-8")
    return code, report, note


def lane(repo: GitRepo, changed: frozenset[str], mutants: int = 20) -> PropertyReport:
    return run_property_lane(
        repo.path,
        load_map_file(repo.path / "review-map.yml"),
        PropertyRequest(seed=P.SEED, cases=P.CASES, mutants=mutants, changed=changed),
        base="main",
        head="HEAD",
    )


def findings(report: dict[str, object] | PropertyReport) -> set[tuple[str, str]]:
    data = report.to_json() if isinstance(report, PropertyReport) else report
    found = data["oracle_findings"]
    assert isinstance(found, list)
    return {(f["property"], f["kind"]) for f in found}


def audit_cached(report: PropertyReport) -> list[bool]:
    """Return ``cached`` of the report's audit children (none: no audit child)."""
    return [c.cached for c in report.children if c.mode == "audit"]


@pytest.mark.slow
def test_a_comment_only_patch_gets_survives_mutants_in_its_property_report(
    repo: GitRepo, tmp_path: Path
) -> None:
    # The patch's comment is in code the property does not import: before, the audit said
    # "unchanged" and nothing else, and the hollow base property went unflagged.
    make(repo)
    comment(repo, "src/shop/other.py")
    code, report, note = gate(repo, tmp_path / "ev")
    assert code == 3  # undecided: no replay; the finding never decides
    assert report["status"] == "pass", report
    assert report["oracle_audit"] == "unchanged"
    assert FINDING in findings(report)
    [mutation] = report["mutation"]
    assert mutation["property"] == "prop_refund_returns"
    assert mutation["mutants"] > 0 and mutation["killed"] == 0, mutation
    assert "prop_refund_returns survives_mutants" in note
    # A second comment-only patch against the same base: the base's audit, from the cache.
    repo.branch("again", "main")
    comment(repo, "src/shop/other.py", "# Still nothing new.")
    code, again, note = gate(repo, tmp_path / "ev2")
    assert code == 3 and FINDING in findings(again)
    timings = again["timings"]
    assert isinstance(timings, dict)
    assert [c["cached"] for c in timings["children"] if c["mode"] == "audit"] == [True]
    assert again["mutation"] == report["mutation"]
    assert "prop_refund_returns survives_mutants" in note


@pytest.mark.slow
def test_a_comment_in_the_code_the_property_imports_gets_the_patchs_own_audit(
    repo: GitRepo, tmp_path: Path
) -> None:
    make(repo)
    comment(repo, "src/shop/__init__.py")
    code, report, note = gate(repo, tmp_path / "ev")
    assert code == 3
    assert report["oracle_audit"] == "ran"
    assert FINDING in findings(report)
    assert "prop_refund_returns survives_mutants" in note


def test_the_base_audit_is_made_once_per_base_and_options(repo: GitRepo, own_cache: Path) -> None:
    make(repo)
    comment(repo, "src/shop/other.py")
    changed = frozenset({"src/shop/other.py"})
    first = lane(repo, changed, mutants=5)
    assert first.oracle_audit == "unchanged" and FINDING in findings(first)
    assert audit_cached(first) == [False]
    second = lane(repo, changed, mutants=5)
    assert audit_cached(second) == [True]
    assert (second.oracle_findings, second.mutation) == (first.oracle_findings, first.mutation)
    # Another option is another audit.
    assert audit_cached(lane(repo, changed, mutants=4)) == [False]
    # Another base tree too: main moves on (a README), the patch is the same.
    repo.checkout("main")
    repo.write("README.md", "The shop.\n")
    repo.commit("readme")
    repo.checkout("patch")
    moved = lane(repo, changed, mutants=5)
    assert audit_cached(moved) == [False] and FINDING in findings(moved)
    assert len(list((own_cache / audits.FOLDER).iterdir())) == 3


def test_the_patchlane_version_is_part_of_the_key(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(repo)
    comment(repo, "src/shop/other.py")
    changed = frozenset({"src/shop/other.py"})
    assert audit_cached(lane(repo, changed, mutants=3)) == [False]
    versions = audits.versions()
    monkeypatch.setattr(audits, "versions", lambda: {**versions, "patchlane": "9.9.9"})
    assert audit_cached(lane(repo, changed, mutants=3)) == [False]
    assert audit_cached(lane(repo, changed, mutants=3)) == [True]


def test_without_the_cache_the_base_audit_is_made_every_time(
    repo: GitRepo, own_cache: Path
) -> None:
    make(repo)
    comment(repo, "src/shop/other.py")
    request = PropertyRequest(
        seed=P.SEED,
        cases=P.CASES,
        mutants=3,
        changed=frozenset({"src/shop/other.py"}),
        result_cache=False,
    )
    review_map = load_map_file(repo.path / "review-map.yml")
    for _ in range(2):
        report = run_property_lane(repo.path, review_map, request, base="main", head="HEAD")
        assert report.oracle_audit == "unchanged" and FINDING in findings(report)
        assert audit_cached(report) == [False]
    assert not (own_cache / audits.FOLDER).exists()


def test_a_forged_base_audit_is_not_used(repo: GitRepo, own_cache: Path) -> None:
    # An entry that hides the finding, sealed with a key that is not the user's.
    from patchlane.infra.cachekey import CacheKey

    make(repo)
    comment(repo, "src/shop/other.py")
    changed = frozenset({"src/shop/other.py"})
    lane(repo, changed, mutants=3)
    [path] = (own_cache / audits.FOLDER).glob("*/*.json")
    entry = json.loads(path.read_text())
    entry["findings"] = []
    body = {k: v for k, v in entry.items() if k != "mac"}
    forger = CacheKey(b"\x01" * 32)
    entry["mac"] = forger.mac(audits.PURPOSE, path.parent.name, sealed.canonical(body))
    path.write_text(json.dumps(entry))
    again = lane(repo, changed, mutants=3)
    assert FINDING in findings(again) and audit_cached(again) == [False]
    # The user's key makes it a hit: the MAC, not the content, is what is checked.
    [path] = (own_cache / audits.FOLDER).glob("*/*.json")
    entry = json.loads(path.read_text())
    entry["findings"] = []
    body = {k: v for k, v in entry.items() if k != "mac"}
    key = load_or_create_key()
    entry["mac"] = key.mac(audits.PURPOSE, path.parent.name, sealed.canonical(body))
    path.write_text(json.dumps(entry))
    hit = lane(repo, changed, mutants=3)
    assert audit_cached(hit) == [True] and hit.oracle_findings == ()


def test_the_children_may_not_write_the_base_audits(own_cache: Path) -> None:
    assert str((own_cache / audits.FOLDER).resolve()) in guarded()


def test_a_red_lane_in_the_gate_is_not_audited(repo: GitRepo, tmp_path: Path) -> None:
    # The verdict is reject already: the audit only informs, so it does not run.
    make(repo)
    P.patch(repo, {"checks/props.py": RETURNS + "\n\ndef prop_red(seed, n=1):\n    assert False\n"})
    code, report, _ = gate(repo, tmp_path / "ev", "--mutants", "3")
    assert code == 1
    assert report["oracle_audit"] == "stopped"
    assert report["oracle_findings"] == [] and report["mutation"] == []
    timings = report["timings"]
    assert isinstance(timings, dict)
    assert [c for c in timings["children"] if c["mode"] == "audit"] == []


@pytest.mark.parametrize(
    "module", [patchlane.gate.run, patchlane.lanes.property.lane, patchlane.lanes.property.audit]
)
def test_no_thread_or_future_holds_the_audit(module: object) -> None:
    # The gate and the lane are a sequence of steps, each run to its end.
    path = Path(str(getattr(module, "__file__", "")))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {
        alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not {n for n in imported if "threading" in n or "concurrent" in n}, imported
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Try) and n.finalbody]
