"""Code without properties, judged by its tests (``lanes.replay.paths``), end to end.

A map with the replay lane alone names the project's code under ``lanes.replay.paths``: a
change there is covered (no rule 5), the property lane is ``not_applicable`` naming the
paths, and the note's property field says the code was judged by the base's tests alone.
The replay then decides as for any code: a green patch is ``accept_for_review``, a red one
``reject``, one no test reaches ``undecided``. A path outside every lane is still rule 5,
whose message names the three ways to cover it. Real git repositories, real gates.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchlane.gate.review import TESTS_ALONE
from patchlane.project.classify import EXTEND_THE_MAP
from tests.gate.evidence import gate, load, reasons, verdict
from tests.gitrepo import GitRepo, run_patchlane

pytestmark = pytest.mark.slow  # whole gates with a local replay

# What ``init`` writes for a project without properties: the replay alone, its seed, and
# the code it judges by the base's tests.
TESTS_ALONE_MAP = """\
version: 1
lanes:
  replay:
    tests: ["tests/"]
    paths: ["src/"]
    seed: 20260924
ignore:
  - path: "docs/"
    reason: "prose only"
"""
CALC = """\
def add(a, b):
    return a + b


def clamp(x, lo, hi):
    return max(lo, min(x, hi))
"""
TEST_CALC = """\
from calc import add, clamp


def test_add():
    assert add(2, 3) == 5
    assert add(-1, 1) == 0


def test_clamp():
    assert clamp(5, 0, 3) == 3
"""
TEST_OTHER = """\
def test_arithmetic():
    assert 1 + 1 == 2
"""


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    """A property-less project on ``main`` (the map above), the ``agent`` branch checked
    out."""
    repo.write("review-map.yml", TESTS_ALONE_MAP)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/calc/__init__.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.write("tests/test_other.py", TEST_OTHER)
    repo.write("docs/calc.md", "# calc\n")
    repo.commit("calc, its tests, a review map with the replay alone")
    repo.branch("agent")
    return repo


def note(out: Path) -> str:
    return (out / "review.md").read_text(encoding="utf-8")


def property_field(out: Path) -> str:
    line = next(x for x in note(out).splitlines() if "Property seed and case count" in x)
    return line.split(":** ", 1)[1]


def test_a_green_code_patch_is_judged_by_the_base_tests_alone_and_accepted(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/calc/__init__.py", CALC.replace("return a + b", "return sum((a, b))"))
    project.commit("refactor add")
    out = tmp_path / "ev"
    assert gate(project, out) == 0
    assert verdict(out) == "accept_for_review"
    cls = load(out, "classify.json")
    assert cls["map_complete"] is True
    assert cls["unmapped"] == []
    assert cls["tests_alone"] == ["src/calc/__init__.py"]
    assert cls["files"][0]["lanes"] == ["replay"]
    prop = load(out, "property-report.json")
    assert prop["status"] == "not_applicable"
    assert "no property covers src/calc/__init__.py" in prop["reason"]
    # Never blank, never a pass: the field says what judged the code.
    assert property_field(out) == f"{TESTS_ALONE} (src/calc/\\_\\_init\\_\\_.py)"
    assert load(out, "replay-report.json")["status"] == "pass"
    # The JSON note says the same, raw.
    json_note = run_patchlane("--repo", project.path, "--json", "review", "--dir", out)
    assert json_note.returncode == 0
    field = json.loads(json_note.stdout)["fields"]["property"]
    assert field == {"text": f"{TESTS_ALONE} (src/calc/__init__.py)", "filled": True}


def test_a_red_code_patch_is_rejected_by_the_base_tests(project: GitRepo, tmp_path: Path) -> None:
    project.write("src/calc/__init__.py", CALC.replace("return a + b", "return a - b"))
    project.commit("break add")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert verdict(out) == "reject"
    assert load(out, "replay-report.json")["failed"] == ["tests/test_calc.py::test_add"]
    assert [r["rule"] for r in load(out, "verdict.json")["reasons"]] == [4]
    assert property_field(out).startswith(TESTS_ALONE)


def test_code_no_test_reaches_stays_undecided(project: GitRepo, tmp_path: Path) -> None:
    # Covered by the map, but no test of the base reaches it: an empty slice is no evidence.
    project.write("src/calc/unused.py", "def spare():\n    return 1\n")
    project.commit("a module nothing imports")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    rules = [r["rule"] for r in load(out, "verdict.json")["reasons"]]
    assert 5 not in rules
    assert any("empty slice" in m for m in reasons(out))
    assert property_field(out) == f"{TESTS_ALONE} (src/calc/unused.py)"


def test_a_path_outside_every_lane_is_still_rule_5_with_the_three_ways(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/calc/__init__.py", CALC.replace("return a + b", "return sum((a, b))"))
    project.write("tools/deploy.sh", "echo deploy\n")
    project.commit("refactor add, and a script")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    cls = load(out, "classify.json")
    assert cls["unmapped"] == ["tools/deploy.sh"]
    assert cls["tests_alone"] == ["src/calc/__init__.py"]
    first = load(out, "verdict.json")["reasons"][0]
    assert first["rule"] == 5
    assert first["message"] == (
        "map incomplete: 1 changed path(s) no lane, lanes.replay.paths or ignore entry "
        f"covers: {EXTEND_THE_MAP}"
    )
    for way in ("lanes.property.paths", "lanes.replay.paths", "in ignore with a reason"):
        assert way in first["message"]
    # The replay still judged the code: its green run is no pass for the script.
    assert load(out, "replay-report.json")["status"] == "pass"


def test_a_patch_that_adds_tests_counts_them_apart_from_the_base_suite(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/calc/__init__.py", CALC.replace("return a + b", "return sum((a, b))"))
    project.write(
        "tests/test_calc.py", TEST_CALC + "\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"
    )
    project.write(
        "tests/test_more.py",
        "from calc import add\n\n\ndef test_a():\n    assert add(1, 1) == 2\n\n\n"
        "def test_b():\n    assert add(2, 2) == 4\n",
    )
    project.commit("refactor add, with three new tests")
    out = tmp_path / "ev"
    # With the base's dependency map the suite is the base's recorded tests (three).
    assert gate(project, out, "--dep-map", "auto", "--dep-cache", str(tmp_path / "c")) == 0
    replay = load(out, "replay-report.json")
    assert replay["suite_size"] == 3
    assert replay["slice_added"] == 3
    assert replay["slice_count"] - replay["slice_added"] <= replay["suite_size"]
    drawn = replay["slice_count"] - 3
    assert f"slice {drawn} of 3 tests (+3 added by the patch)" in note(out)


def test_the_readme_gate_command_runs_on_a_map_with_the_replay_alone(
    project: GitRepo, tmp_path: Path
) -> None:
    # README, Quick start: ``patchlane gate --replay local --patch agent.diff``, no --seed
    # and no --base: the seed is the map's lanes.replay.seed.
    project.write("src/calc/__init__.py", CALC.replace("return a + b", "return sum((a, b))"))
    project.commit("refactor add")
    diff = project.git("diff", "main", "agent")
    project.checkout("main")
    (project.path / "agent.diff").write_text(diff, encoding="utf-8")
    proc = run_patchlane("gate", "--replay", "local", "--patch", "agent.diff", cwd=project.path)
    assert proc.returncode == 0, proc.stderr.decode()
    out = project.path / ".patchlane"
    assert verdict(out) == "accept_for_review"
    assert load(out, "property-report.json")["seed"] == 20260924
    assert load(out, "replay-report.json")["seed"] == 20260924
    assert property_field(out).startswith(TESTS_ALONE)
