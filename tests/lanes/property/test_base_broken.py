"""A property module, review map or freeze registry that is broken AT THE BASE is bad input
(exit 2, one line naming the file and the line): the base is the user's, not the patch's.
The same breakage made by the patch stays the patch's (red), as before."""

from __future__ import annotations

import pytest

from tests.gitrepo import GitRepo, run_patchlane, stderr_lines, without_progress
from tests.lanes.property import project as P

SHOP_PATCH = {"src/shop/__init__.py": P.SHOP + "\n\ndef extra():\n    return 1\n"}
DOES_NOT_PARSE = P.SEED_PROP + "\n\ndef broken(:\n    pass\n"
LINE = DOES_NOT_PARSE.count("\n", 0, DOES_NOT_PARSE.index("def broken(")) + 1


def _one_error(*args: str, repo: GitRepo, code: int = 2) -> str:
    proc = run_patchlane(*args, cwd=repo.path)
    assert proc.returncode == code, proc.stdout.decode() + proc.stderr.decode()
    lines = without_progress(stderr_lines(proc))
    assert len(lines) == 1, lines
    assert "Traceback" not in proc.stderr.decode()
    return lines[0]


@pytest.mark.parametrize("command", [("property", "--base", "main"), ("gate",)], ids=" ".join)
def test_a_base_module_that_does_not_parse_is_exit_2(
    repo: GitRepo, command: tuple[str, ...]
) -> None:
    P.make(repo, props=DOES_NOT_PARSE)
    P.patch(repo, SHOP_PATCH)
    line = _one_error(*command, repo=repo)
    assert line.startswith(f"patchlane: error: checks/props.py:{LINE}: invalid syntax (")
    assert "the property module checks.props at the base" in line


def test_a_base_module_that_does_not_import_with_the_bases_code_is_exit_2(
    repo: GitRepo,
) -> None:
    P.make(repo, props="import checks.nowhere\n" + P.SEED_PROP)
    P.patch(repo, SHOP_PATCH)
    line = _one_error("property", "--base", "main", repo=repo)
    assert line.startswith("patchlane: error: checks/props.py: import failed: ModuleNotFoundError")
    assert "(at checks/props.py:1: import checks.nowhere)" in line
    assert "with the base's own code too" in line


def _with_test_file(repo: GitRepo, text: str) -> None:
    """A project whose map names one Hypothesis test file (``lanes.property.tests``)."""
    P.make(repo, files={"tests/test_shop_props.py": text})
    repo.checkout("main")
    lane = '    modules: ["checks.props"]\n'
    tests = '    tests: ["tests/test_shop_props.py"]\n'
    repo.write("review-map.yml", P.review_map().replace(lane, lane + tests))
    repo.commit("the map names the test file")
    repo.git("branch", "-f", "patch", "main")
    repo.checkout("patch")


GIVEN = """\
from hypothesis import given, strategies as st
from shop import refund


@given(st.integers(0, 100))
def test_refund_bounded(charge):
    assert 0 <= refund(charge, 1) <= charge
"""


def test_a_base_test_file_that_does_not_parse_is_exit_2(repo: GitRepo) -> None:
    _with_test_file(repo, GIVEN + "\n\ndef broken(:\n    pass\n")
    P.patch(repo, SHOP_PATCH)
    line = _one_error("property", "--base", "main", repo=repo)
    assert line.startswith("patchlane: error: tests/test_shop_props.py:10: invalid syntax (")
    assert "the test file tests/test_shop_props.py at the base" in line


@pytest.mark.slow
def test_a_patch_that_breaks_the_test_file_is_still_red(repo: GitRepo) -> None:
    _with_test_file(repo, GIVEN)
    P.patch(repo, {"tests/test_shop_props.py": GIVEN + "\n\ndef broken(:\n    pass\n"})
    proc = run_patchlane("property", "--base", "main", cwd=repo.path)
    assert proc.returncode == 1, proc.stdout.decode() + proc.stderr.decode()
    assert "tests/test_shop_props.py:10: invalid syntax" in proc.stdout.decode()


def test_a_patch_that_breaks_the_module_is_still_red(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(repo, {"checks/props.py": DOES_NOT_PARSE})
    proc = run_patchlane("property", "--base", "main", cwd=repo.path)
    assert proc.returncode == 1, proc.stdout.decode() + proc.stderr.decode()
    assert f"checks/props.py:{LINE}: invalid syntax" in proc.stdout.decode()


def test_a_patch_that_breaks_the_base_modules_import_is_still_red(repo: GitRepo) -> None:
    P.make(repo)
    # The base's module imports refund, which the patch removes: the patch's fault.
    P.patch(repo, {"src/shop/__init__.py": "def ratio(a, b):\n    return a / b\n"})
    proc = run_patchlane("property", "--base", "main", cwd=repo.path)
    out = proc.stdout.decode()
    assert proc.returncode == 1, out + proc.stderr.decode()
    assert "import failed: ImportError: cannot import name 'refund'" in out


@pytest.mark.parametrize(
    ("path", "text", "message"),
    [
        (
            "review-map.yml",
            'lanes:\n  property:\n    paths: ["src/shop/"\n',
            "review-map.yml:4: YAML syntax error",
        ),
        (
            "review-map.yml",
            'lanes:\n  property:\n    paths: ["src/shop/"]\n    modules: ["checks.props"]\n'
            "    bogus: 1\n",
            "review-map.yml:5: lanes.property.bogus: unknown key",
        ),
        ("tests/flaky-freeze.yml", "freezes:\n  - id: [\n", "tests/flaky-freeze.yml:3: YAML"),
        (
            "tests/flaky-freeze.yml",
            "freezes:\n  - id: x\n",
            "tests/flaky-freeze.yml:2: freezes[0].nodeid: missing",
        ),
    ],
    ids=["map-yaml", "map-key", "registry-yaml", "registry-record"],
)
def test_a_broken_map_or_registry_at_the_base_is_exit_2(
    repo: GitRepo, path: str, text: str, message: str
) -> None:
    files = {"tests/flaky-freeze.yml": "freezes: []\n"}
    P.make(repo, files=files)
    repo.checkout("main")
    if path == "tests/flaky-freeze.yml":
        repo.write("review-map.yml", P.review_map() + "  freeze:\n    registry: " + path + "\n")
    repo.write(path, text)
    repo.commit("the base breaks its own control file")
    repo.git("branch", "-f", "patch", "main")
    repo.checkout("patch")
    P.patch(repo, SHOP_PATCH)
    line = _one_error("gate", repo=repo)
    assert line.startswith(f"patchlane: error: {message}"), line
    assert "in base " in line, line
