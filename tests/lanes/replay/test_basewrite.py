"""The base versions of the changed test files are written into the head's tree after its
build ran there (in the sandbox, the patch's own build script, the tree writable): a link
the build left in place of a folder must not carry that write, or its unlink, out of the
tree. Real repository, real build in the real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.lanes.replay.basecheck import BaseRun, ChangedPath, base_versions
from patchlane.project.build import Build
from tests.gitrepo import GitRepo

TEST = "def test_x():\n    assert True\n"


@pytest.mark.slow
def test_a_link_the_build_leaves_never_carries_a_write_out_of_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_x.py").write_text("precious\n")
    (outside / "victim.txt").write_text("precious\n")
    repo = GitRepo(tmp_path / "repo")
    repo.write("tests/sub/test_x.py", TEST)
    repo.write("build.sh", "true\n")
    base = repo.commit("base")
    # The head changes a test file and adds a data file below tests/sub/, and its build
    # script (run by the map's build command) swaps tests/sub/ for a link out of the tree.
    repo.write("tests/sub/test_x.py", TEST + "\n\ndef test_y():\n    assert True\n")
    repo.write("tests/sub/victim.txt", "new\n")
    repo.write("build.sh", f"rm -rf tests/sub && ln -s {outside} tests/sub\n")
    head = repo.commit("head")
    changed = [ChangedPath("M", "tests/sub/test_x.py"), ChangedPath("A", "tests/sub/victim.txt")]
    ran = base_versions(
        BaseRun(repo.path, base, hash_seed=0, timeout_s=60.0, build=Build("sh build.sh")),
        head, changed, (),
    )  # fmt: skip
    assert (outside / "test_x.py").read_text() == "precious\n"
    assert (outside / "victim.txt").read_text() == "precious\n"
    assert sorted(p.name for p in outside.iterdir()) == ["test_x.py", "victim.txt"]
    # The base version was written where it belongs, a real folder in place of the link,
    # and ran there.
    assert ran.at_base == ("tests/sub/test_x.py",)
    assert ran.run is not None and "tests/sub/test_x.py::test_x" in ran.run.results
