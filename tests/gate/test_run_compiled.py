"""Compiled code, end to end: a real project with a C extension, a real hostile patch to its C
source, the real gate with ``--replay local`` (docs/architecture.md §2, "Compiled code").

The extension ``_fastadd`` is built with ``python setup.py build_ext --inplace``. Without
``lanes.replay.build`` the replay imports a build of the base (here one on ``PYTHONPATH``, as
an installed build would be) and cannot see the patch: ``undecided``. With it, the head is
rebuilt in the sandbox and the broken extension fails its test: ``reject``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.slow  # the gate end to end, with real builds and a real replay

BUILD = "python setup.py build_ext --inplace"
MAP = """\
version: 1
lanes:
  property:
    paths: ["fastmath/", "csrc/"]
    module: "checks.props"
  replay:
    tests: ["tests/"]
{build}ignore:
  - path: "setup.py"
    reason: "build configuration (the replay's build runs it)"
"""
C_SOURCE = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
#ifdef FASTADD_LEGACY
    return PyLong_FromLong(a - b);
#endif
    return PyLong_FromLong(a + b);
}

static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastadd", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fastadd(void) { return PyModule_Create(&module); }
"""
SETUP = """\
from setuptools import Extension, setup

setup(
    name="fastmath",
    version="0",
    packages=["fastmath"],
    ext_modules=[Extension("_fastadd", ["csrc/fastadd.c"])],
)
"""
FILES = {
    "csrc/fastadd.c": C_SOURCE,
    "setup.py": SETUP,
    "fastmath/__init__.py": "from _fastadd import add\n",
    "checks/__init__.py": "",
    "checks/props.py": "def prop_nothing(seed, n=200):\n    pass\n",
    "tests/test_add.py": "from fastmath import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "pytest.ini": "[pytest]\npythonpath = .\n",
}


def project(repo: GitRepo, build: str | None, files: dict[str, str] | None = None) -> GitRepo:
    """Commit the project on ``main`` (``files`` written over ``FILES``); check out ``agent``."""
    line = "" if build is None else f"    build: {json.dumps(build)}\n"
    repo.write("review-map.yml", MAP.format(build=line))
    for path, text in {**FILES, **(files or {})}.items():
        repo.write(path, text)
    repo.commit("fastmath with its C extension")
    repo.branch("agent")
    return repo


def hostile(repo: GitRepo, old: str = "a + b", new: str = "a - b") -> None:
    """The agent's patch: the C source changes, nothing else."""
    repo.write("csrc/fastadd.c", C_SOURCE.replace(old, new))
    repo.commit("faster add")


def gate(repo: GitRepo, out: Path, *extra: str) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7", *extra]
    return main([*argv, "--cases", "5", "--replay", "local", "--out-dir", str(out)])


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def reasons(out: Path) -> list[str]:
    return [r["message"] for r in load(out, "verdict.json")["reasons"]]


def test_without_a_build_command_a_c_patch_is_undecided_although_the_stale_build_passes(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(repo, build=None)
    # The base's extension, built once where the tests' imports find it (as an installed or
    # an in-place build would be): the replay passes against it.
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "csrc").mkdir()
    (stale / "csrc" / "fastadd.c").write_text(C_SOURCE)
    (stale / "setup.py").write_text(SETUP.replace('packages=["fastmath"]', "packages=[]"))
    subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=stale,
        check=True,
        capture_output=True,
    )
    monkeypatch.setenv("PYTHONPATH", f"{stale}:{os.environ.get('PYTHONPATH', '')}")
    # The patch turns a macro on in the build configuration (the map ignores setup.py) and
    # touches the Python side, so that the slice holds the test: before issue 19 this patch
    # earned accept_for_review, replayed against the stale build.
    repo.write("fastmath/__init__.py", '"""Fast maths."""\n\nfrom _fastadd import add\n')
    legacy = '["csrc/fastadd.c"], define_macros=[("FASTADD_LEGACY", "1")]'
    repo.write("setup.py", SETUP.replace('["csrc/fastadd.c"]', legacy))
    repo.commit("faster add")
    out = tmp_path / "ev"
    assert gate(repo, out) == 3
    replay = load(out, "replay-report.json")
    assert replay["status"] == "pass"  # the stale build cannot see the patch
    assert reasons(out) == [
        "compiled source changed: replay would run the base's build (setup.py); name the "
        "command that builds it in the base's map (lanes.replay.build, e.g. \"python setup.py "
        'build_ext --inplace") so that the replay rebuilds the head'
    ]


def test_with_a_build_command_the_head_is_rebuilt_and_the_broken_extension_is_rejected(
    repo: GitRepo, tmp_path: Path
) -> None:
    project(repo, build=BUILD)
    hostile(repo)
    out = tmp_path / "ev"
    assert gate(repo, out) == 1
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_add.py::test_add"]
    assert not any("compiled source changed" in m for m in reasons(out))
    assert "replay: build" in load(out, "verdict.json")["timings"]


def test_with_a_dependency_map_a_c_patch_still_runs_every_test(
    repo: GitRepo, tmp_path: Path
) -> None:
    # The map is recorded on the base, built first; no coverage line of it names the C
    # source, yet every test file is collected and every test runs.
    project(repo, build=BUILD, files={"tests/test_other.py": "def test_other():\n    pass\n"})
    hostile(repo)
    out = tmp_path / "ev"
    assert gate(repo, out, "--dep-map", "auto", "--dep-cache", str(tmp_path / "cache")) == 1
    replay = load(out, "replay-report.json")
    assert replay["dependency_map"].endswith("recorded now")
    assert replay["failed"] == ["tests/test_add.py::test_add"]
    assert replay["slice_count"] == 2


def test_a_build_that_fails_only_at_the_head_is_the_patchs(repo: GitRepo, tmp_path: Path) -> None:
    project(repo, build=BUILD)
    hostile(repo, "return PyLong_FromLong(a + b);", "return PyLong_FromLong(a + b)")
    out = tmp_path / "ev"
    assert gate(repo, out) == 1
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "build_failed"
    assert "succeeds at the base" in replay["reason"]


def test_a_build_that_fails_at_the_base_and_the_head_is_the_environments(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo, build=f"{BUILD} && exit 3")
    hostile(repo)
    assert gate(repo, tmp_path / "ev") == 2
    err = capsys.readouterr().err
    assert "lanes.replay.build fails at the base and the head alike" in err
    assert "without a network" in err


def test_with_a_build_command_a_harmless_c_patch_is_accepted(repo: GitRepo, tmp_path: Path) -> None:
    project(repo, build=BUILD)
    hostile(repo, "static PyObject *add(", "/* the sum */\nstatic PyObject *add(")
    out = tmp_path / "ev"
    assert gate(repo, out) == 0, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["passed"] == ["tests/test_add.py::test_add"]
    assert replay["slice_rules"] == {"compiled code": 1}


def test_with_a_build_command_properties_call_the_rebuilt_extension(
    repo: GitRepo, tmp_path: Path
) -> None:
    # The property imports the extension: the property lane's head tree is built too, so a
    # harmless patch is accepted and the hostile one is caught by the property itself.
    props = "from _fastadd import add\n\n\ndef prop_add(seed, n=200):\n    assert add(2, 3) == 5\n"
    project(repo, build=BUILD, files={"checks/props.py": props})
    hostile(repo)
    out = tmp_path / "ev"
    assert gate(repo, out) == 1
    assert load(out, "verdict.json")["reasons"][0]["rule"] == 1
    failure = load(out, "property-report.json")["failures"][0]
    assert (failure["property"], failure["kind"]) == ("prop_add", "assertion")
