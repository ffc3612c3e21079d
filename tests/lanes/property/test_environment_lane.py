"""Faults of the environment or the map are not the patch's (DESIGN.md §2): a third-party
package missing at base and head alike, or a map naming a module at neither commit, is
exit 2 with the fix. A failure the patch causes (it deletes a module, or imports a
package that is not there) stays red. Every case runs the real lane, most through the CLI."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from patchlane.errors import MapError
from patchlane.main import main
from tests.gitrepo import GitRepo, without_progress
from tests.lanes.property import project as P

ABSENT = "patchlane_absent_pkg_q7"
BASE = ("--base", "main")
BROKEN = "def refund(charge, amount):\n    return charge - amount\n"
NEEDS_ABSENT = f"import {ABSENT}\n" + P.SEED_PROP
HYPOTHESIS_PROP = """\
from hypothesis import given, strategies as st
from shop import refund


@given(st.integers(0, 100), st.integers(0, 120))
def prop_refund_bounded(charge, amount):
    assert 0 <= refund(charge, amount) <= charge
"""


@pytest.fixture(autouse=True)
def _absent_is_absent() -> None:
    assert importlib.util.find_spec(ABSENT) is None, f"{ABSENT} must not be installed"


def cli(repo: GitRepo, *args: str) -> int:
    return main(["--repo", os.fspath(repo.path), *args])


def error_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    # A run past a second also says its steps on stderr (the clock's lines): not errors.
    return without_progress(capsys.readouterr().err.splitlines())


def install_hint(where: str = "at base and head alike") -> str:
    return (
        f"patchlane: error: property module checks.props cannot import '{ABSENT}' (not "
        f"installed, not a module of the repository), {where}: install {ABSENT} in the "
        f"environment patchlane runs in ({sys.executable})"
    )


# -- a package missing from the environment: exit 2 -------------------------------------------


@pytest.mark.slow
def test_a_property_module_missing_a_package_at_base_and_head_exits_2(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The patch breaks the code, but nothing can say so while the oracle cannot import.
    P.make(repo, NEEDS_ABSENT)
    P.patch(repo, {"src/shop/__init__.py": BROKEN})
    assert cli(repo, "property", "--base", "main") == 2
    assert error_lines(capsys) == [install_hint()]
    assert cli(repo, "gate", "--base", "main", "--out-dir", os.fspath(tmp_path / "out")) == 2
    assert error_lines(capsys) == [install_hint()]


def test_code_under_test_missing_a_package_at_base_and_head_exits_2(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    shop = f"import {ABSENT}\n\n" + P.SHOP
    P.make(repo, shop=shop)
    P.patch(repo, {"src/shop/__init__.py": shop + "\n\ndef extra():\n    return 1\n"})
    assert cli(repo, "property", "--base", "main") == 2
    assert error_lines(capsys) == [install_hint()]


def test_without_a_base_a_missing_package_exits_2(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    P.make(repo, NEEDS_ABSENT)
    assert cli(repo, "property") == 2
    assert error_lines(capsys) == [install_hint("in the work tree")]
    head = repo.head()
    assert cli(repo, "property", "--head", "HEAD") == 2
    assert error_lines(capsys) == [install_hint(f"at head {head[:12]}")]


@pytest.fixture(scope="module")
def python_without_hypothesis(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real virtual environment holding everything this interpreter has installed
    (patchlane included) except Hypothesis: each site-packages entry is linked in."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    python = root / "bin" / "python"
    ask = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(
        subprocess.run(
            [python, "-c", ask], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    ours = {Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
    # A virtualenv that sees the system's packages has those on sys.path too.
    ours |= {Path(p) for p in sys.path if Path(p).name in ("site-packages", "dist-packages")}
    ours = {p for p in ours if p.is_dir() and p != site}
    for directory in ours:
        for entry in directory.iterdir():
            if entry.name.lower().lstrip("_").startswith("hypothesis"):
                continue
            if not (site / entry.name).exists():
                (site / entry.name).symlink_to(entry)
    probe = "import importlib.util, patchlane; print(importlib.util.find_spec('hypothesis'))"
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"
    return python


@pytest.mark.slow
def test_hypothesis_missing_from_patchlanes_environment_exits_2_with_the_extra(
    repo: GitRepo, python_without_hypothesis: Path
) -> None:
    P.make(repo, HYPOTHESIS_PROP)
    P.patch(repo, {"src/shop/__init__.py": BROKEN})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    proc = subprocess.run(
        [python_without_hypothesis, "-m", "patchlane", "--repo", repo.path, "property", *BASE],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert without_progress(proc.stderr.splitlines()) == [
        "patchlane: error: property module checks.props cannot import 'hypothesis' (not "
        "installed, not a module of the repository), at base and head alike: Hypothesis "
        "runs from patchlane's own environment: pip install 'patchlane[hypothesis]'"
    ]
    # With Hypothesis installed (this interpreter), the same patch is simply red.
    assert P.lane(repo).status == "fail"


# -- what the patch did stays red ---------------------------------------------------------


@pytest.mark.slow
def test_a_patch_that_imports_a_missing_package_in_the_code_is_still_red(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Hostile: base and head runs both fail for want of the package (both import the
    # head's code), but the base's own code imports fine, so the failure is the patch's.
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": "import some_missing_pkg\n\n" + P.SHOP})
    report = P.lane(repo)
    assert report.status == "fail"
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "error",
        ("prop_refund_bounded", "head"): "error",
    }
    failure = P.one_failure(report, "prop_refund_bounded")
    assert failure["message"].startswith(
        "import failed: ModuleNotFoundError: No module named 'some_missing_pkg'"
    )
    assert cli(repo, "property", "--base", "main") == 1
    assert cli(repo, "gate", "--base", "main", "--out-dir", os.fspath(tmp_path / "out")) == 1
    assert error_lines(capsys) == []


def test_a_patch_whose_own_property_needs_a_missing_package_is_red(repo: GitRepo) -> None:
    # The base's property imports fine; the head's version adds the import.
    P.make(repo)
    P.patch(repo, {"checks/props.py": NEEDS_ABSENT})
    report = P.lane(repo)
    assert report.status == "fail"
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "pass",
        ("prop_refund_bounded", "head"): "error",
    }


def test_a_patch_that_deletes_a_project_module_the_property_imports_is_red(
    repo: GitRepo,
) -> None:
    # The missing name is a project module at base: never "third-party".
    props = "from shopext import LIMIT\n" + P.SEED_PROP
    P.make(repo, props, files={"src/shopext.py": "LIMIT = 3\n"})
    P.patch(repo, {"src/shopext.py": None})
    report = P.lane(repo)
    assert report.status == "fail"
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "error",
        ("prop_refund_bounded", "head"): "error",
    }
    assert "No module named 'shopext'" in P.one_failure(report, "prop_refund_bounded")["message"]


# -- a map naming no module: exit 2 -----------------------------------------------------------


def test_a_map_naming_a_module_at_neither_commit_exits_2(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    P.make(repo, modules=("checks.props", "checks.gone"))
    P.patch(repo, {"src/shop/__init__.py": BROKEN})
    message = (
        "review-map.yml:4: lanes.property.modules: no such module 'checks.gone' at base or head"
    )
    assert cli(repo, "property", "--base", "main") == 2
    assert error_lines(capsys) == [f"patchlane: error: {message}"]
    assert cli(repo, "gate", "--base", "main", "--out-dir", os.fspath(tmp_path / "out")) == 2
    assert error_lines(capsys) == [f"patchlane: error: {message}"]


def test_a_single_module_key_is_named_as_written(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    P.make(repo)
    repo.write(
        "review-map.yml",
        P.review_map().replace('modules: ["checks.props"]', 'module: "checks.nope"'),
    )
    repo.commit("map names a module that is not there")
    assert cli(repo, "property") == 2
    assert error_lines(capsys) == [
        "patchlane: error: review-map.yml:4: lanes.property.module: no such module "
        "'checks.nope' in the work tree"
    ]


@pytest.mark.slow
def test_a_module_the_patch_adds_is_run_from_the_head(repo: GitRepo) -> None:
    # At base it is missing, but the patch adds it: nothing for the map to fix.
    P.make(repo, modules=("checks.props", "checks.more"))
    with pytest.raises(MapError, match=r"no such module 'checks\.more' at base or head"):
        P.lane(repo)
    P.patch(repo, {"checks/more.py": "def prop_more(seed, n=200):\n    assert False\n"})
    report = P.lane(repo)
    assert report.status == "fail"
    assert P.outcomes(report)[("prop_more", "head")] == "fail"
