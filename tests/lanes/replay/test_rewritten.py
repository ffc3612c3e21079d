"""The store of rewritten test modules (``lanes.replay.rewritten``, ``child.rewritten``):
filled by the gate's own process, read by the test process under the key of the bytes it
reads, never written by it."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

from patchlane.child.rewritten import key
from patchlane.infra.sandbox import isolation
from patchlane.lanes.replay.rewritten import store_for
from tests.gitrepo import GitRepo
from tests.infra.test_bytecode import _run  # a replay run in the work tree

TEST_STRICT = "def test_strict():\n    assert 1 == 2\n"
GREEN = "def test_strict():\n    assert True\n"
NODE = "tests/test_strict.py::test_strict"


def _store() -> Path:
    stores = list((Path(os.environ["PATCHLANE_CACHE_DIR"]) / "rewritten").iterdir())
    assert len(stores) == 1, stores
    return stores[0]


@pytest.mark.slow
def test_the_run_takes_a_modules_code_from_the_store_under_its_bytes_alone(
    repo: GitRepo,
) -> None:
    if not isolation().sandboxed:
        pytest.skip("the store is used only where the sandbox makes it read-only")
    source = repo.write("tests/test_strict.py", TEST_STRICT)
    repo.commit("a red test")
    # A run fills the store with the module's rewritten code, keyed by its path and bytes.
    assert _run(repo, [NODE]).receipt.failed_nodeids == (NODE,)
    store = _store()
    entry = store / key(os.fspath(source), source.read_bytes())
    assert entry.is_file()
    # What the store holds under that key is what runs: code that passes, planted where
    # only patchlane's own process writes, turns the red test green. Proof that the run
    # reads the store, and why nothing but patchlane may write it.
    entry.write_bytes(marshal.dumps(compile(GREEN, os.fspath(source), "exec")))
    assert _run(repo, [NODE]).receipt.passed_nodeids == (NODE,)
    # Other bytes are another key: the planted code is not used, the module is rewritten.
    source.write_text(TEST_STRICT + "\n")
    assert _run(repo, [NODE]).receipt.failed_nodeids == (NODE,)


WRITES_STORE = """\
import os
from pathlib import Path

def test_plants():
    for store in (Path(os.environ.get("PATCHLANE_CACHE_DIR", "/nonexistent")) / "rewritten").glob("*"):
        (store / "planted.code").write_bytes(b"x")
"""


@pytest.mark.slow
def test_the_test_process_cannot_write_the_store(repo: GitRepo) -> None:
    if not isolation().sandboxed:
        pytest.skip("without the sandbox a test process can write anything of the user's")
    repo.write("tests/test_plant.py", WRITES_STORE)
    repo.commit("a test that plants into the store")
    store_for(repo.path, repo.path)
    store = _store()
    result = _run(repo, ["tests/test_plant.py::test_plants"])
    assert not (store / "planted.code").exists()
    assert result.receipt.passed_nodeids == ()


def test_a_configuration_that_may_turn_on_the_pass_hook_gets_no_store(tmp_path: Path) -> None:
    if not isolation().sandboxed:
        pytest.skip("the store is used only where the sandbox makes it read-only")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(TEST_STRICT)
    (tmp_path / "pytest.ini").write_text("[pytest]\nenable_assertion_pass_hook = true\n")
    assert store_for(tmp_path, tmp_path) is None
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    other = tmp_path / "other"
    (other / "tests").mkdir(parents=True)
    (other / "tests" / "test_a.py").write_text(TEST_STRICT)
    store = store_for(other, Path("/seen/at"))
    assert store is not None
    assert (store / key("/seen/at/tests/test_a.py", TEST_STRICT.encode())).is_file()
