"""Committed bytecode never runs (issue 9): every child that imports the repository's code
judges the source, whatever ``__pycache__`` or sourceless ``.pyc`` the tree holds.

The bytecode is compiled here, at test time, with the running interpreter (its magic number
and cache tag); each planted file is first shown to win in a plain ``python -B``, so that a
pass below means the guard held, not that the bytecode was never loadable.
"""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import py_compile
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from py_compile import PycInvalidationMode

import pytest

from patchlane.formats import slicefile
from patchlane.infra.bytecode import is_bytecode, process_pycache
from patchlane.infra.cache import default_cache
from patchlane.infra.process import minimal_env
from patchlane.infra.sandbox import isolation
from patchlane.lanes.replay.basecheck import BaseRun, failures_at_base
from patchlane.lanes.replay.collect import collect
from patchlane.lanes.replay.hostrun import HostRun, run_slice
from patchlane.lanes.replay.results import RunResult
from patchlane.lanes.replay.run import child_env
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

TAG = sys.implementation.cache_tag


def _compile(source: str, cfile: Path, mode: PycInvalidationMode) -> None:
    """Compile ``source`` into ``cfile`` (a module of the same name, in a scratch dir)."""
    cfile.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fake = Path(tmp) / "module.py"
        fake.write_text(source)
        py_compile.compile(str(fake), cfile=str(cfile), doraise=True, invalidation_mode=mode)


def plant_cached(tree: Path, rel_py: str, hostile: str) -> str:
    """Write ``hostile`` as unchecked-hash bytecode in the ``__pycache__`` of ``rel_py`` (loaded
    whatever the source says); return the bytecode's repository path."""
    source = Path(rel_py)
    rel = (source.parent / "__pycache__" / f"{source.stem}.{TAG}.pyc").as_posix()
    _compile(hostile, tree / rel, PycInvalidationMode.UNCHECKED_HASH)
    return rel


def plant_sourceless(tree: Path, rel_pyc: str, source: str) -> None:
    """Write ``source`` compiled as a sourceless module (``mod.pyc`` with no ``mod.py``)."""
    _compile(source, tree / rel_pyc, PycInvalidationMode.TIMESTAMP)


def plain_python(cwd: Path, code: str) -> str:
    """Run ``code`` in a plain ``python -B`` (no guard) in ``cwd``; return its stdout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    proc = subprocess.run(
        [sys.executable, "-B", "-c", f"import sys; sys.path.insert(0, ''); {code}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


# --- the property child ---------------------------------------------------------------------

HOSTILE_SHOP = "def refund(charge, amount):\n    return charge + amount\n"
USES_HELPER = """\
def prop_sourceless_helper_is_not_importable(seed, n=1):
    try:
        import shop.helper
    except ImportError:
        return
    raise AssertionError((seed, 0, shop.helper.VALUE))
"""


@pytest.mark.slow
def test_the_property_lane_judges_the_source_not_its_committed_bytecode(repo: GitRepo) -> None:
    P.make(repo)
    rel = plant_cached(repo.path, "src/shop/__init__.py", HOSTILE_SHOP)
    assert plain_python(repo.path / "src", "import shop; print(shop.refund(1, 5))") == "6"
    repo.commit("bytecode that breaks the property, beside a correct source")
    assert P.lane(repo).status == "pass"  # head materialised from git: no bytecode at all
    # The work tree (no base, no head) keeps the bytecode; the child's pycache prefix and
    # its source-only finder below the tree are all that stop it being read.
    assert (repo.path / rel).is_file()
    assert P.lane(repo, base=None, head=None).status == "pass"


@pytest.mark.slow
def test_a_sourceless_module_is_not_importable_in_the_property_child(repo: GitRepo) -> None:
    P.make(repo)
    plant_sourceless(repo.path, "src/shop/helper.pyc", "VALUE = 'from bytecode'\n")
    assert plain_python(repo.path / "src", "import shop.helper as h; print(h.VALUE)") == (
        "from bytecode"
    )
    P.patch(repo, {"checks/props.py": P.SEED_PROP + "\n\n" + USES_HELPER})
    report = P.lane(repo)
    assert report.status == "pass", report.to_json()
    assert P.outcomes(report)[("prop_sourceless_helper_is_not_importable", "head")] == "pass"
    # The work tree keeps the .pyc: the child finds modules below it from source only.
    assert (repo.path / "src/shop/helper.pyc").is_file()
    worktree = P.lane(repo, base=None, head=None)
    assert worktree.status == "pass", worktree.to_json()


def test_every_property_child_gets_the_prefix_in_patchlanes_cache(tmp_path: Path) -> None:
    env = minimal_env(tmp_path)
    prefix = Path(env["PYTHONPYCACHEPREFIX"])
    assert prefix == Path(process_pycache()) and prefix.is_dir()
    assert prefix == default_cache() / "pycache" / sys.implementation.cache_tag
    assert prefix.stat().st_mode & 0o777 == 0o700  # this user's alone
    assert minimal_env(tmp_path / "other")["PYTHONPYCACHEPREFIX"] == str(prefix)
    assert "PYTHONDONTWRITEBYTECODE" not in env  # the installed modules are cached there


def test_an_unwritable_cache_falls_back_to_a_private_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache directory would be\n")
    monkeypatch.setenv("PATCHLANE_CACHE_DIR", str(blocked))
    process_pycache.cache_clear()
    try:
        prefix = Path(process_pycache())
    finally:
        process_pycache.cache_clear()
    assert prefix.is_dir() and prefix.name.startswith("patchlane-pycache-")
    assert blocked not in prefix.parents


# --- the replay children --------------------------------------------------------------------

CALC = "def answer():\n    return 1\n"
HOSTILE_CALC = "def answer():\n    return 2\n"
TEST_CALC = "from calc import answer\n\n\ndef test_answer():\n    assert answer() == 1\n"
TEST_HELPER = """\
import pytest


def test_sourceless_helper_is_not_importable():
    with pytest.raises(ImportError):
        import helper
"""
TEST_STRICT = "def test_strict():\n    assert 1 == 2\n"
REWRITTEN_GREEN = "def test_strict():\n    assert True\n"


def _run(repo: GitRepo, nodeids: list[str]) -> RunResult:
    data = slicefile.render(nodeids)
    return run_slice(
        repo.path,
        slicefile.parse(data, "slice"),
        slicefile.sha256(data),
        HostRun(
            seed=4242,
            head=repo.head(),
            host_role="test-host",
            freeze_report=None,
            timeout_s=120.0,
        ),
    )


@pytest.mark.slow
def test_a_replay_run_in_the_work_tree_judges_the_source(repo: GitRepo) -> None:
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.write("tests/test_helper.py", TEST_HELPER)
    repo.commit("base")
    plant_cached(repo.path, "calc.py", HOSTILE_CALC)
    plant_sourceless(repo.path, "helper.pyc", "VALUE = 1\n")
    assert plain_python(repo.path, "import calc, helper; print(calc.answer(), helper.VALUE)") == (
        "2 1"
    )
    repo.commit("bytecode")
    nodeids = [
        "tests/test_calc.py::test_answer",
        "tests/test_helper.py::test_sourceless_helper_is_not_importable",
    ]
    result = _run(repo, nodeids)
    assert result.receipt.passed_nodeids == tuple(nodeids), result.run.results


@pytest.mark.slow
def test_pytests_own_rewritten_bytecode_in_the_tree_is_not_read(repo: GitRepo) -> None:
    # pytest keeps rewritten test modules as <name>.<tag>-pytest-<version>.pyc and trusts one
    # whose header matches the source's mtime and size: plant one that makes a red test pass.
    source = repo.write("tests/test_strict.py", TEST_STRICT)
    repo.commit("a red test")
    stat = source.stat()
    code = compile(REWRITTEN_GREEN, str(source), "exec")
    cache = source.parent / "__pycache__" / f"test_strict.{TAG}-pytest-{pytest.__version__}.pyc"
    cache.parent.mkdir()
    header = struct.pack("<LL", int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF)
    cache.write_bytes(importlib.util.MAGIC_NUMBER + b"\0\0\0\0" + header + marshal.dumps(code))
    result = _run(repo, ["tests/test_strict.py::test_strict"])
    assert result.receipt.failed_nodeids == ("tests/test_strict.py::test_strict",)


@pytest.mark.slow
def test_a_base_run_judges_the_base_source(repo: GitRepo) -> None:
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    plant_cached(repo.path, "calc.py", HOSTILE_CALC)
    base = repo.commit("a base whose committed bytecode would fail its test")
    nodeid = "tests/test_calc.py::test_answer"
    at = BaseRun(repo.path, base, hash_seed=1, timeout_s=120.0)
    assert failures_at_base(at, [nodeid]) == ()


HELPERS = "PARAMS = [1]\n"
HOSTILE_HELPERS = "PARAMS = [1, 2, 3]\n"
TEST_PARAMS = """\
import pytest

from helpers import PARAMS


@pytest.mark.parametrize("n", PARAMS)
def test_p(n):
    pass
"""


@pytest.mark.slow
@pytest.mark.parametrize("environment", ["minimal", "run"])
def test_collection_sees_the_source(tmp_path: Path, environment: str) -> None:
    root = tmp_path / "tree"
    (root / "tests").mkdir(parents=True)
    (root / "helpers.py").write_text(HELPERS)
    (root / "tests/test_p.py").write_text(TEST_PARAMS)
    plant_cached(root, "helpers.py", HOSTILE_HELPERS)
    (root / "tests/test_q.py").write_text("import extra\n\n\ndef test_q():\n    pass\n")
    plant_sourceless(root, "tests/extra.pyc", "X = 1\n")
    assert plain_python(root, "import helpers; print(len(helpers.PARAMS))") == "3"
    assert plain_python(root / "tests", "import extra; print(extra.X)") == "1"
    env = child_env(7) if environment == "run" else None
    result = collect(root, ["tests"], env=env)
    assert result.nodeids == ("tests/test_p.py::test_p[1]",)
    assert [(e.nodeid, e.missing) for e in result.errors] == [("tests/test_q.py", "extra")]


def test_the_run_environment_replaces_the_hosts_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", "/hosts/prefix")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert "PYTHONPYCACHEPREFIX" not in child_env(7)
    env = child_env(7, pycache=True)
    assert env["PYTHONPYCACHEPREFIX"] == process_pycache()
    assert "PYTHONDONTWRITEBYTECODE" not in env


# --- the shared prefix ------------------------------------------------------------------------


def _cached_sources(prefix: Path) -> list[Path]:
    """The source file each bytecode file below ``prefix`` was compiled from."""
    sources = []
    for pyc in prefix.rglob("*.pyc"):
        stem = pyc.name.split(".", 1)[0]
        sources.append(Path("/", pyc.parent.relative_to(prefix), f"{stem}.py"))
    return sources


@pytest.mark.slow
def test_the_shared_prefix_caches_installed_modules_and_never_the_tree(repo: GitRepo) -> None:
    P.make(repo)
    assert P.lane(repo).status == "pass"  # materialised base and head, then the work tree
    assert P.lane(repo, base=None, head=None).status == "pass"
    repo.write("calc.py", CALC)
    repo.write("tests/conftest.py", "import calc  # noqa: F401\n")
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.commit("a suite")
    assert _run(repo, ["tests/test_calc.py::test_answer"]).receipt.passed_nodeids
    sources = _cached_sources(Path(process_pycache()))
    installed = [Path(p).resolve() for p in sys.path if p and Path(p).is_dir()]
    # What the children import from the environment is compiled once per process...
    assert any(s.name == "main.py" and s.parent.name == "_pytest" for s in sources), sources
    assert any(s.name == "_hypothesis_pytestplugin.py" for s in sources), sources
    # ...and nothing the tree holds (work tree or materialised) was ever written there.
    assert not [s for s in sources if repo.path in s.parents], sources
    assert Path(process_pycache(), *repo.path.resolve().parts[1:]).is_file()  # the block
    strays = [s for s in sources if not any(d in s.resolve().parents for d in installed)]
    assert not strays, strays


@pytest.mark.slow
def test_a_tree_modules_bytecode_left_in_the_shared_prefix_is_removed(repo: GitRepo) -> None:
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.commit("base")
    mirror = Path(process_pycache(), *repo.path.resolve().parts[1:])
    planted = mirror / f"calc.{TAG}.pyc"
    _compile(HOSTILE_CALC, planted, PycInvalidationMode.UNCHECKED_HASH)
    result = _run(repo, ["tests/test_calc.py::test_answer"])
    # The test process reads no prefix at all (it has none: a plain run's environment), and
    # below the tree modules load from source only: the plant never runs.
    assert result.receipt.passed_nodeids == ("tests/test_calc.py::test_answer",)


# Code of the tree that runs first takes the block away and plants bytecode for a module
# a later test imports: that module still loads from its source.
PLANTING_CONFTEST = f"""\
import os
import py_compile
import sys
import tempfile

mirror = os.path.join(sys.pycache_prefix, os.getcwd().lstrip(os.sep))
os.unlink(mirror)
os.makedirs(mirror)
with tempfile.TemporaryDirectory() as tmp:
    fake = os.path.join(tmp, "calc.py")
    with open(fake, "w") as f:
        f.write({HOSTILE_CALC!r})
    py_compile.compile(
        fake,
        cfile=os.path.join(mirror, "calc.{TAG}.pyc"),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
"""


@pytest.mark.slow
def test_bytecode_the_trees_own_code_plants_in_the_prefix_is_not_read(repo: GitRepo) -> None:
    repo.write("calc.py", CALC)
    repo.write("conftest.py", PLANTING_CONFTEST)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.commit("a conftest that plants bytecode for calc")
    mirror = Path(process_pycache(), *repo.path.resolve().parts[1:])
    try:
        result = _run(repo, ["tests/test_calc.py::test_answer"])
        planted = (mirror / f"calc.{TAG}.pyc").is_file()
    finally:
        shutil.rmtree(mirror, ignore_errors=True)
    if isolation().sandboxed:
        # The prefix is read-only in the sandbox: the plant itself fails (and the conftest
        # that tried it with it), so nothing is left for this run or a later one.
        assert not planted
        assert result.receipt.passed_nodeids == ()
    else:
        assert planted  # the in-child layers: the plant happens, and is not read
        assert result.receipt.passed_nodeids == ("tests/test_calc.py::test_answer",)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("pkg/__pycache__/mod.cpython-311.pyc", True),
        ("__pycache__/notes.txt", True),
        ("pkg/mod.pyc", True),
        ("pkg/MOD.PYO", True),
        ("pkg/mod.py", False),
        ("pkg/pycache/mod.py", False),
        ("docs/about.pyc.md", False),
    ],
)
def test_what_counts_as_bytecode(path: str, expected: bool) -> None:
    assert is_bytecode(path) is expected


SOURCE_ONLY_BELOW = """
import importlib.machinery as m
import os
import sys
from pathlib import Path

from patchlane.infra.bytecode import source_only_below

hooks, last = list(sys.path_hooks), sys.path_hooks[-1]
source_only_below(Path("tree"))
# The import system's lists are a plain run's: the same entries, the same objects.
assert sys.path_hooks == hooks and sys.path_hooks[-1] is last, sys.path_hooks
sys.path[:0] = ["tree", "outside"]
import mod  # its committed unchecked-hash bytecode says "bytecode"
assert mod.WHERE == "source", mod.WHERE
assert type(mod.__loader__) is m.SourceFileLoader, type(mod.__loader__)
assert type(sys.path_importer_cache["tree"]) is m.FileFinder
try:
    import sourceless
except ImportError:
    pass
else:
    raise AssertionError("a sourceless module below the tree was imported")
import elsewhere  # outside the tree: the default loaders, sourceless bytecode included
assert elsewhere.WHERE == "elsewhere"
print("ok")
"""


def test_the_replays_source_only_imports_leave_the_import_hooks_as_a_plain_run_has_them(
    tmp_path: Path,
) -> None:
    # The replay's test process (bench/redteam h47): committed bytecode below the tree never
    # runs, and sys.path_hooks, the finders and the loaders are those of a plain run.
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "__pycache__").mkdir(parents=True)
    outside.mkdir()
    (tree / "mod.py").write_text('WHERE = "bytecode"\n')
    tag = sys.implementation.cache_tag
    py_compile.compile(
        os.fspath(tree / "mod.py"),
        cfile=os.fspath(tree / "__pycache__" / f"mod.{tag}.pyc"),
        invalidation_mode=PycInvalidationMode.UNCHECKED_HASH,
    )
    (tree / "mod.py").write_text('WHERE = "source"\n')
    for where, name in ((tree, "sourceless"), (outside, "elsewhere")):
        (where / f"{name}.py").write_text(f'WHERE = "{name}"\n')
        py_compile.compile(os.fspath(where / f"{name}.py"), cfile=os.fspath(where / f"{name}.pyc"))
        (where / f"{name}.py").unlink()
    proc = subprocess.run(
        [sys.executable, "-c", SOURCE_ONLY_BELOW],
        cwd=tmp_path, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]


# --- installed code inside a tree, and at exit ------------------------------------------------

# Run in an environment made inside the tree (a project's ``.venv``): block the tree, then
# import a module installed in that environment and one of the tree, with the prefix set.
IN_VENV = """
import importlib, json, os, sys
from pathlib import Path
from patchlane.infra import bytecode
tree, prefix = Path(sys.argv[1]), sys.argv[2]
bytecode.block_below(prefix, tree)
sys.pycache_prefix = prefix
sys.path.insert(0, str(tree))
import vmod, calc
print(json.dumps([importlib.util.cache_from_source(m.__file__) for m in (vmod, calc)]))
"""


def _venv_in(tree: Path) -> Path:
    """A virtual environment at ``tree/.venv`` (the system's packages visible), holding a
    module ``vmod``; returns its python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", tree / ".venv"],
        check=True,
        capture_output=True,
    )
    python = tree / ".venv" / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "vmod.py").write_text("VALUE = 1\n")
    return python


def _patchlane_env() -> dict[str, str]:
    src = Path(__file__).resolve().parents[2] / "src"
    return {"PATH": os.defpath, "PYTHONPATH": os.fspath(src), "LC_ALL": "C.UTF-8"}


@pytest.mark.slow
def test_an_environment_inside_the_tree_is_cached_and_the_tree_is_not(tmp_path: Path) -> None:
    tree = (tmp_path / "project").resolve()
    (tree / "tests").mkdir(parents=True)
    (tree / "calc.py").write_text(CALC)
    (tree / "tests" / "test_calc.py").write_text(TEST_CALC)
    python = _venv_in(tree)
    prefix = tmp_path / "prefix"

    def block_and_import() -> list[str]:
        proc = subprocess.run(
            [python, "-c", IN_VENV, tree, prefix],
            env=_patchlane_env(),
            cwd=tree,
            capture_output=True,
            text=True,
            check=True,
        )
        return list(json.loads(proc.stdout))

    venv_pyc, calc_pyc = block_and_import()
    assert Path(venv_pyc).is_file()  # the environment's module: compiled once, kept
    assert not Path(calc_pyc).is_file()  # the tree's: never (a directory blocks it)
    mirror = Path(prefix, *tree.parts[1:])
    assert (mirror / "tests").is_file()  # a directory of the tree: blocked by a file
    assert (mirror / f"calc.{TAG}.pyc").is_dir()  # a module at that level: by a directory
    # A second block (the sandboxed child's view: the parent's block kept) changes nothing.
    assert block_and_import() == [venv_pyc, calc_pyc]
    assert Path(venv_pyc).is_file() and not Path(calc_pyc).is_file()


PRUNE = """
import sys
from pathlib import Path
from patchlane.infra import bytecode
bytecode._prune(Path(sys.argv[1]), Path(sys.argv[2]))
"""


@pytest.mark.slow
def test_at_exit_the_trees_mirrors_go_and_an_environments_stays(tmp_path: Path) -> None:
    temp = (tmp_path / "temp").resolve()
    python = _venv_in(temp / "work")  # an environment made in the temporary directory
    prefix = tmp_path / "prefix"
    mirror = Path(prefix, *temp.parts[1:])
    kept = Path(prefix, *(temp / "work" / ".venv").parts[1:], "lib", f"vmod.{TAG}.pyc")
    gone = [mirror / "patchlane-replay-head-x" / "run", mirror / "work" / f"calc.{TAG}.pyc"]
    for path in [kept, *gone]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    subprocess.run([python, "-c", PRUNE, mirror, temp], env=_patchlane_env(), check=True)
    assert kept.is_file()
    assert not any(p.exists() for p in gone)
    assert not (mirror / "patchlane-replay-head-x").exists()


WARM = """
import sys
from pathlib import Path
from patchlane.infra import bytecode
bytecode.warm_prefix(sys.argv[1])
print(next(Path(sys.argv[1]).glob("warm-*")).read_text())
"""


@pytest.mark.slow
def test_a_warm_prefix_whose_bytecode_went_is_warmed_again(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    prefix.mkdir()

    def warm() -> str:
        return subprocess.run(
            [sys.executable, "-c", WARM, prefix],
            env=_patchlane_env(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    kind, _, named = warm().partition(" ")
    assert kind == "pyc" and Path(named).is_file() and prefix in Path(named).parents
    Path(named).unlink()  # a cleaner took the compiled files, not the marker
    assert warm() == f"pyc {named}"
    assert Path(named).is_file()
