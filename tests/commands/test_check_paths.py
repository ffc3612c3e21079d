"""``patchlane check`` refuses a map path that is a placeholder or names nothing (exit 2, one
line naming review-map.yml, the line and the path), in the work tree and with ``--rev``."""

from __future__ import annotations

import os

import pytest

from patchlane.main import main
from tests.gitrepo import GitRepo, run_patchlane

GOOD = """\
version: 1
lanes:
  property:
    paths: ["src/shop/", "src/extra.py"]
    tests: ["tests/test_shop.py::test_refund"]
    seed: 1
  replay:
    tests: ["tests/"]
    paths: ["src/legacy/"]
    seed: 1
ignore:
  - path: "docs/"
    reason: "prose only"
"""


def _project(repo: GitRepo, review_map: str = GOOD) -> None:
    repo.write("src/shop/__init__.py", "")
    repo.write("src/extra.py", "")
    repo.write("src/legacy/__init__.py", "")
    repo.write("tests/test_shop.py", "def test_refund():\n    assert True\n")
    repo.write("docs/index.md", "# docs\n")
    repo.write("review-map.yml", review_map)
    repo.commit("project")


def _check(repo: GitRepo, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["--repo", os.fspath(repo.path), "-q", "check", *args])
    return code, capsys.readouterr().out.splitlines()


def test_a_map_whose_paths_all_exist_passes(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    assert _check(repo, capsys) == (0, [])
    assert _check(repo, capsys, "--rev", "HEAD") == (0, [])


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        (
            '"src/extra.py"]',
            '"src/extra.py", "PACKAGE/"]',
            4,
            "lanes.property.paths: 'PACKAGE/' is a placeholder (PACKAGE): name the real path",
        ),
        (
            'paths: ["src/legacy/"]',
            'paths: ["src/legcy/"]',
            9,
            "lanes.replay.paths: 'src/legcy/' names nothing in the work tree",
        ),
        (
            '"tests/test_shop.py::test_refund"',
            '"tests/test_shp.py::test_refund"',
            5,
            "lanes.property.tests: 'tests/test_shp.py' names nothing in the work tree",
        ),
        (
            'tests: ["tests/"]',
            'tests: ["testing/"]',
            8,
            "lanes.replay.tests: 'testing/' names nothing in the work tree",
        ),
        (
            'path: "docs/"',
            'path: "CHANGELOG.md"',
            12,
            "ignore.path: 'CHANGELOG.md' names nothing in the work tree",
        ),
        (
            '"src/extra.py"]',
            '"src/extra.py/"]',
            4,
            "lanes.property.paths: 'src/extra.py/' ends in '/' but is a file in the work tree",
        ),
    ],
    ids=["placeholder", "replay-paths", "node-id-file", "replay-tests", "ignore", "slash"],
)
def test_a_bad_map_path_is_exit_2_naming_the_file_line_and_path(
    repo: GitRepo,
    capsys: pytest.CaptureFixture[str],
    old: str,
    new: str,
    line: int,
    message: str,
) -> None:
    assert old in GOOD
    _project(repo, GOOD.replace(old, new))
    code, out = _check(repo, capsys)
    assert (code, out) == (2, [f"review-map.yml:{line}: {message}"])


def test_fixture_roots_are_checked_too(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.write("data/golden/LOCK.json", '{"files": []}\n')
    repo.write("data/LOCK.json", '{"files": []}\n')
    fixture = (
        "  fixture:\n    roots:\n"
        '      - path: "data/golden/"\n        lock: "data/golden/LOCK.json"\n'
        '      - path: "tests/fixtures/NAME/"\n        lock: "data/LOCK.json"\n'
    )
    _project(repo, GOOD.replace("  replay:\n", fixture + "  replay:\n"))
    code, out = _check(repo, capsys, "--no-fixtures")
    assert code == 2
    assert "review-map.yml:11: lanes.fixture.roots.path: 'tests/fixtures/NAME/' is a " in out[0]


def test_with_rev_the_commit_decides_not_the_work_tree(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    base = repo.head()
    repo.remove("src/extra.py")
    repo.commit("extra.py removed, the map not updated")
    assert _check(repo, capsys, "--rev", base) == (0, [])
    code, out = _check(repo, capsys, "--rev", "HEAD")
    short = repo.head()[:12]
    assert code == 2
    assert out == [
        f"review-map.yml:4: lanes.property.paths: 'src/extra.py' names nothing in commit {short}"
    ]
    # The work tree agrees, in its own words.
    code, out = _check(repo, capsys)
    assert out == [
        "review-map.yml:4: lanes.property.paths: 'src/extra.py' names nothing in the work tree"
    ]


def test_through_the_cli_the_problem_is_one_line_and_no_traceback(repo: GitRepo) -> None:
    _project(repo, GOOD.replace('"src/legacy/"', '"PACKAGE/"'))
    proc = run_patchlane("check", cwd=repo.path)
    assert proc.returncode == 2
    assert proc.stdout.decode().splitlines()[0] == (
        "review-map.yml:9: lanes.replay.paths: 'PACKAGE/' is a placeholder (PACKAGE): "
        "name the real path"
    )
    assert b"Traceback" not in proc.stderr
