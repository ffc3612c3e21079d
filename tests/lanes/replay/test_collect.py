"""pytest collection in the isolated child: node ids, errors, timeouts, the network guard."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchlane.lanes.replay.collect import CollectionError, collect, pytest_args
from patchlane.lanes.replay.run import child_env
from tests.lanes.replay.trees import wheel_site


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.slow
def test_collects_node_ids_relative_to_the_tree_root(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": "X = 1\n",
            "tests/test_a.py": (
                "import pytest\nimport pkg\n"
                "@pytest.mark.parametrize('n', [1, 2])\ndef test_p(n): pass\n"
                "class TestK:\n    def test_m(self): pass\n"
            ),
        },
    )
    got = collect(root, ["tests/"])
    assert got.nodeids == (
        "tests/test_a.py::test_p[1]",
        "tests/test_a.py::test_p[2]",
        "tests/test_a.py::TestK::test_m",
    )


@pytest.mark.slow
def test_no_paths_and_no_tests_are_an_empty_suite(tmp_path: Path) -> None:
    assert collect(tmp_path, []).nodeids == ()
    root = write(tmp_path, {"tests/test_none.py": "X = 1\n"})
    assert collect(root, ["tests"]).nodeids == ()


@pytest.mark.slow
def test_a_file_that_does_not_import_is_reported_beside_the_tests_that_do(
    tmp_path: Path,
) -> None:
    root = write(
        tmp_path,
        {"tests/test_ok.py": "def test_ok(): pass\n", "tests/test_bad.py": "import nowhere_xyz\n"},
    )
    result = collect(root, ["tests"])
    assert result.nodeids == ("tests/test_ok.py::test_ok",)
    (error,) = result.errors
    assert (error.nodeid, error.missing) == ("tests/test_bad.py", "nowhere_xyz")
    assert "nowhere_xyz" in error.message and "\n" not in error.message


@pytest.mark.slow
def test_a_broken_conftest_is_still_a_collection_error(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "tests/test_ok.py": "def test_ok(): pass\n",
            "tests/conftest.py": "raise SystemError('x')\n",
        },
    )
    with pytest.raises(CollectionError):
        collect(root, ["tests"])


@pytest.mark.slow
def test_a_test_module_that_never_finishes_importing_is_killed(tmp_path: Path) -> None:
    root = write(tmp_path, {"tests/test_slow.py": "import time\ntime.sleep(60)\n"})
    with pytest.raises(CollectionError, match="timed out after 1 s"):
        collect(root, ["tests"], timeout_s=1.0)


@pytest.mark.slow
def test_network_access_during_collection_is_refused_and_reported(tmp_path: Path) -> None:
    code = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=1)\n"
        "except Exception:\n"
        "    pass\n"  # the project swallows the error: the guard still reports it
        "def test_x(): pass\n"
    )
    root = write(tmp_path, {"tests/test_net.py": code})
    with pytest.raises(CollectionError, match="reach the network"):
        collect(root, ["tests"])


@pytest.mark.slow
def test_the_caller_environment_does_not_reach_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHLANE_SELECT_PROBE", "leaked")
    code = (
        "import os\n"
        "if os.environ.get('PATCHLANE_SELECT_PROBE'):\n"
        "    def test_leaked(): pass\n"
        "else:\n"
        "    def test_clean(): pass\n"
    )
    root = write(tmp_path, {"tests/test_env.py": code})
    assert collect(root, ["tests"]).nodeids == ("tests/test_env.py::test_clean",)


@pytest.mark.slow
def test_patchlane_installed_from_a_wheel_collects_where_warnings_are_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No -W of patchlane's outranks the project's filters, and none is needed: the package's
    # docstring keeps pytest from warning that it was imported before rewriting began.
    site = wheel_site(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    root = write(
        tmp_path / "tree",
        {
            "pytest.ini": "[pytest]\nfilterwarnings = error\n",
            "tests/test_a.py": "def test_a(): pass\n",
        },
    )
    assert "-W" not in pytest_args(root, ["tests/"])
    assert collect(root, ["tests/"], env=child_env(1)).nodeids == ("tests/test_a.py::test_a",)
