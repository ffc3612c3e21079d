"""The gate with the base's dependency map (``--dep-map auto``), end to end in real git repos.

The map narrows the slice; the verdicts must stay those of the project's full suite at the
head: a regression is ``reject`` whichever rule finds its test, a deleted failing test is
``undecided``, a harmless patch is ``accept_for_review``. The map is recorded on first use,
reused after, and not used when its bytes changed (the report says so).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.infra.sandbox import isolation
from patchlane.main import main
from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a map recording and a local replay

CALC = """\
RATE = 2


def add(a, b):
    return a + b


def clamp(x, lo, hi):
    return max(lo, min(x, hi))


def scale(x):
    return x * RATE
"""
TEST_CALC = """\
import unittest

from billing.calc import add, clamp


class AddCases(unittest.TestCase):
    def test_add(self):
        for a, b, want in [(1, 2, 3), (0, 0, 0), (-1, 1, 0)]:
            with self.subTest(a=a, b=b):
                self.assertEqual(add(a, b), want)


def test_clamp():
    assert clamp(5, 0, 3) == 3
"""
TEST_SCALE = """\
import pytest

from billing.calc import scale


@pytest.fixture(scope="module")
def doubled():
    return scale(1)


def test_doubled(doubled):
    assert doubled == 2


def test_scale_again(doubled):
    assert scale(doubled) == 4
"""


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.write("tests/test_scale.py", TEST_SCALE)
    repo.commit("calc and its tests")
    repo.branch("agent")
    return repo


def gate(repo: GitRepo, out: Path, cache: Path, verbosity: str = "-q") -> int:
    argv = ["--repo", str(repo.path), verbosity, "gate", "--base", "main", "--seed", "7"]
    argv += ["--cases", "20", "--replay", "local", "--out-dir", str(out)]
    return main([*argv, "--dep-map", "auto", "--dep-cache", str(cache)])


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def test_a_regression_in_a_subtest_is_rejected_from_a_slice_the_map_narrowed(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write(
        "src/billing/calc.py", CALC.replace("return a + b", "return a + b if a >= 0 else b")
    )
    project.commit("optimise add")
    out = tmp_path / "ev"
    assert gate(project, out, tmp_path / "cache") == 1
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_calc.py::AddCases::test_add"]
    # The map's recording saw it pass at the base: it is not run there again.
    assert replay["base_from_map"] == ["tests/test_calc.py::AddCases::test_add"]
    assert replay["fail_at_base_too"] == []
    assert replay["dependency_map"].endswith("recorded now")
    assert replay["slice_rules"]["ran changed code"] >= 1
    # Only the tests that ran add: not clamp's, not scale's.
    assert replay["slice_count"] < replay["suite_size"]
    assert "dependency map" in (out / "review.md").read_text(encoding="utf-8")
    timings = load(out, "verdict.json")["timings"]
    assert {"classify", "replay: dependency map", "replay: selection", "replay: run"} <= set(
        timings
    )
    assert timings["replay: dependency map"] <= timings["total"]


def test_a_module_level_change_reaches_a_fixtures_users_and_is_rejected(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("RATE = 2", "RATE = 3"))
    project.commit("a new rate")
    out = tmp_path / "ev"
    assert gate(project, out, tmp_path / "cache") == 1
    failed = load(out, "replay-report.json")["failed"]
    assert failed == ["tests/test_scale.py::test_doubled", "tests/test_scale.py::test_scale_again"]


def test_a_harmless_change_is_accepted_and_the_map_is_reused(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("return x * RATE", "return RATE * x"))
    project.commit("commute")
    cache = tmp_path / "cache"
    assert gate(project, tmp_path / "first", cache) == 0
    assert gate(project, tmp_path / "second", cache) == 0
    second = load(tmp_path / "second", "replay-report.json")
    assert not second["dependency_map"].endswith("recorded now")
    assert second["slice_count"] == 2  # the two tests that ran scale, its fixture's included


def test_deleting_the_failing_test_is_undecided_with_the_map(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("min(x, hi)", "x"))
    project.write("tests/test_calc.py", TEST_CALC.split("def test_clamp")[0])
    project.commit("clamp is simpler now")
    out = tmp_path / "ev"
    assert gate(project, out, tmp_path / "cache") == 3
    assert load(out, "replay-report.json")["deleted_tests"] == ["tests/test_calc.py::test_clamp"]


def test_a_map_whose_bytes_changed_is_not_used_and_the_report_says_so(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("return x * RATE", "return RATE * x"))
    project.commit("commute")
    cache = tmp_path / "cache"
    assert gate(project, tmp_path / "first", cache) == 0
    (recorded,) = cache.glob("maps/*/*.json")
    recorded.write_bytes(recorded.read_bytes().replace(b'"blind":[]', b'"blind":[0]'))
    assert gate(project, tmp_path / "second", cache) == 0
    note = load(tmp_path / "second", "replay-report.json")["dependency_map"]
    entry = f"maps/{recorded.parent.name[:12]}/{recorded.name}"
    assert note.endswith(f"recorded now; cache entry {entry} did not verify: not used")


ADD_AND_CLAMP = ("AddCases::test_add", "test_clamp")


def test_a_map_an_earlier_patch_rewrote_does_not_narrow_the_next_patchs_slice(
    project: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The hostile pass's route (issue 19): a test of one patch emptied the cached map of the
    # base and named it by its new bytes; the next patch, which breaks add(), then got a
    # slice without add's tests and was accepted. Now the forged map does not verify.
    from tests.formats.test_depmap import _forge

    project.write("src/billing/calc.py", CALC.replace("return x * RATE", "return RATE * x"))
    project.commit("commute")
    cache = tmp_path / "cache"
    assert gate(project, tmp_path / "first", cache) == 0
    (recorded,) = cache.glob("maps/*/*.json")
    # Every line add() ran is charged to test_clamp instead: a slice of clamp's test alone.
    doc = json.loads(recorded.read_bytes())
    add, clamp = (doc["tests"].index(f"tests/test_calc.py::{t}") for t in ADD_AND_CLAMP)
    calc = {
        n: [clamp] if add in contexts else contexts
        for n, contexts in doc["lines"]["src/billing/calc.py"].items()
    }
    forged = _forge(recorded, {"lines": {**doc["lines"], "src/billing/calc.py": calc}})
    project.checkout("main")
    project.branch("second")
    project.checkout("second")
    project.write(
        "src/billing/calc.py", CALC.replace("return a + b", "return a + b if a >= 0 else b")
    )
    project.commit("optimise add")
    capsys.readouterr()
    out = tmp_path / "second"
    assert gate(project, out, cache, "-v") == 1
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_calc.py::AddCases::test_add"]
    entry = f"maps/{forged.parent.name[:12]}/{forged.name}"
    assert replay["dependency_map"].endswith(
        f"recorded now; cache entry {entry} did not verify: not used"
    )
    assert f"cache entry {entry} did not verify: not used" in capsys.readouterr().err
    assert "did not verify: not used" in (out / "review.md").read_text(encoding="utf-8")


def test_a_map_the_heads_property_forges_during_the_gate_is_not_the_one_used(
    project: GitRepo, tmp_path: Path
) -> None:
    # The head's property module writes, into the gate's --dep-cache, a well-formed and
    # hash-named map of the base that says no test ran add(). The gate obtained its map
    # before any lane ran the head's code, so it records (and uses) the true one.
    from patchlane.lanes.replay import maprecord
    from patchlane.project.config import parse_review_map

    base = project.head()
    review_map = parse_review_map(project.path.joinpath("review-map.yml").read_text(), "map")
    true = maprecord.record(project.path, review_map, base, seed=7)
    add_lines = range(5, 6)  # ``return a + b`` in CALC
    forged = dataclasses.replace(
        true,
        lines={
            **true.lines,
            "src/billing/calc.py": {
                n: () if n in add_lines else c for n, c in true.lines["src/billing/calc.py"].items()
            },
        },
    )
    data = forged.to_bytes()
    cache = tmp_path / "cache"
    target = cache / "maps" / base / f"{hashlib.sha256(data).hexdigest()}.json"
    prop = (
        "from pathlib import Path\n\n\ndef prop_refund_never_exceeds_charge(seed, n=200):\n"
        f"    target = Path({str(target)!r})\n"
        "    target.parent.mkdir(parents=True, exist_ok=True)\n"
        f"    target.write_bytes({data!r})\n"
    )
    project.write("checks/billing_props.py", prop)
    project.write(
        "src/billing/calc.py", CALC.replace("return a + b", "return a + b if a >= 0 else b")
    )
    project.commit("optimise add, and a property")
    out = tmp_path / "ev"
    assert gate(project, out, cache) == 1
    if isolation().sandboxed:
        # The cache is out of the sandbox's reach: the forgery fails (read-only) or lands in
        # the child's own /tmp, and the host's cache never holds it.
        assert not target.exists()
        assert load(out, "verdict.json")["verdict"] == "reject"
        return
    assert target.is_file()  # the property did write its map, after the lookup
    replay = load(out, "replay-report.json")
    assert replay["dependency_map"].endswith("recorded now")
    assert replay["failed"] == ["tests/test_calc.py::AddCases::test_add"]


def test_a_test_that_failed_when_the_map_was_recorded_is_still_run_at_the_base(
    project: GitRepo, tmp_path: Path
) -> None:
    # A test this machine cannot pass (here: a variable it lacks) fails in the recording too,
    # so the map knows nothing of its base outcome; the base run finds it fails there too.
    project.git("checkout", "-q", "main")
    project.write(
        "tests/test_env.py",
        "import os\n\nfrom billing.calc import add\n\n\n"
        "def test_needs_a_service():\n    assert add(1, 1) == 2\n"
        "    assert os.environ.get('BILLING_SERVICE_URL')\n",
    )
    project.commit("a test that needs a service")
    project.git("checkout", "-q", "agent")
    project.git("merge", "-q", "--ff-only", "main")
    project.write("src/billing/calc.py", CALC.replace("return a + b", "return b + a"))
    project.commit("commute add")
    out = tmp_path / "ev"
    assert gate(project, out, tmp_path / "cache") == 3
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "fails_at_base"
    assert replay["fail_at_base_too"] == ["tests/test_env.py::test_needs_a_service"]
    assert replay["base_from_map"] == []
