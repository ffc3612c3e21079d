"""The replay cannot be told apart from the project's own run (DESIGN §2): the fingerprint.

A probe test in a real repository records what it can observe (``fingerprint.observe``)
under plain ``python -m pytest``, into the repository's ``.git`` (outside every commit, and
readable from the sandbox, which shows the repository read-only); under the replay the same
probe compares what it sees with that record and fails on any difference ``DECLARED`` does
not allow, so the replay's own outcome (a receipt's failed node, a gate's verdict) is the
evidence. A tell put back (a variable in the replay's environment that the plain run lacks)
makes it fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from patchlane.infra import sandbox
from patchlane.lanes.replay import fingerprint
from tests.gitrepo import GitRepo
from tests.landlock import nested

HOSTS = sandbox.isolation().host_processes

PROBE_ID = "tests/test_probe.py::test_fingerprint"
PROBE = """\
import json
import pathlib

import pkg  # the code under test: a change to it selects this test
from patchlane.lanes.replay import fingerprint

EXPECTED = pathlib.Path({expected!r})


def test_fingerprint(request):
    seen = fingerprint.observe(request.config.pluginmanager)
    if not EXPECTED.exists():  # the plain run: record
        EXPECTED.write_text(json.dumps(seen, indent=1, sort_keys=True))
        return
    problems = fingerprint.undeclared(json.loads(EXPECTED.read_text()), seen)
    assert not problems, "the replay differs from a plain run: " + "; ".join(problems)
"""
MAP = """\
version: 1
lanes:
  property:
    paths: ["pkg/"]
    module: "checks.props"
  replay:
    tests: ["tests/"]
"""
# The project's own configuration. The rerun plugin installed here (pytest-rerunfailures)
# stays loaded in the replay, its reruns taken away: its threads and options are a plain run's.
PYPROJECT = """\
[tool.pytest.ini_options]
testpaths = ["tests"]
"""


def user_env(repo: Path) -> dict[str, str]:
    """The environment of a user in ``repo``'s work tree: this process's, less what the
    pytest running this test adds, with ``PWD`` as a shell sets it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PWD"] = os.fspath(repo)
    return env


def project(repo: GitRepo) -> Path:
    """Commit the probe project on ``main`` (an ``origin`` remote and a tag, as a user's
    clone has), run its plain ``python -m pytest`` once and return the recorded fingerprint's
    path."""
    expected = repo.path / ".git" / "fingerprint.json"
    repo.write("review-map.yml", MAP)
    repo.write("pyproject.toml", PYPROJECT)
    repo.write(".gitignore", "__pycache__/\n")
    repo.write("pkg/__init__.py", "X = 1\n")
    repo.write("checks/__init__.py", "")
    repo.write("checks/props.py", "def prop_x(seed, n=10):\n    pass\n")
    repo.write("tests/test_probe.py", PROBE.format(expected=os.fspath(expected)))
    repo.commit("the project")
    repo.git("tag", "v1.0")
    repo.git("remote", "add", "origin", "https://example.invalid/project.git")
    repo.git("update-ref", "refs/remotes/origin/main", "HEAD")
    return expected


def plain_run(repo: GitRepo, expected: Path) -> dict[str, Any]:
    """Run ``python -m pytest`` as the user would; return what the probe recorded."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest"],
        cwd=repo.path,
        env=user_env(repo.path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout.decode(errors="replace")[-3000:]
    recorded: dict[str, Any] = json.loads(expected.read_text())
    return recorded


def patchlane(repo: GitRepo, *args: str, extra: dict[str, str] | None = None) -> int:
    env = {**user_env(repo.path), **(extra or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "patchlane", "--repo", os.fspath(repo.path), *args],
        cwd=repo.path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    return proc.returncode


def replay_run(repo: GitRepo, tmp: Path, extra: dict[str, str] | None = None) -> dict[str, Any]:
    """``replay run`` of the probe in the work tree; return its receipt."""
    slice_file, receipt = tmp / "slice.txt", tmp / "receipt.json"
    slice_file.write_text(PROBE_ID + "\n")
    code = patchlane(
        repo, "replay", "run", "--slice", os.fspath(slice_file), "--seed", "7",
        "--out", os.fspath(receipt), extra=extra,
    )  # fmt: skip
    assert code in (0, 1)
    result: dict[str, Any] = json.loads(receipt.read_text())
    return result


@pytest.mark.slow
def test_the_replay_run_looks_like_the_projects_own_run(repo: GitRepo, tmp_path: Path) -> None:
    expected = project(repo)
    plain = plain_run(repo, expected)
    # What the probe sees at all (a probe that saw nothing would agree with anything).
    assert plain["argv"][1:] == [] and plain["cmdline"][1:3] == ["-m", "pytest"]
    assert plain["git.branch"] == "main" and plain["git.commits"] == "1"
    assert plain["env.PWD"] == "<cwd>" and plain["home.listing"] is not None
    receipt = replay_run(repo, tmp_path)
    assert receipt["passed_nodeids"] == [PROBE_ID], receipt


@pytest.mark.slow
def test_the_gates_replay_looks_like_the_projects_own_run(repo: GitRepo, tmp_path: Path) -> None:
    expected = project(repo)
    repo.branch("agent")
    repo.write("pkg/__init__.py", "X = 2\n")
    repo.commit("the patch")
    # The user's own run of the head, on its branch.
    plain = plain_run(repo, expected)
    assert (plain["git.branch"], plain["git.commits"]) == ("agent", "2")
    out = tmp_path / "ev"
    code = patchlane(repo, "gate", "--base", "main", "--seed", "7", "--replay", "local",
                     "--out-dir", os.fspath(out))  # fmt: skip
    receipt = json.loads((out / "receipt.json").read_text())
    assert receipt["passed_nodeids"] == [PROBE_ID], (out / "replay-report.json").read_text()
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "accept_for_review"
    assert code == 0


@pytest.mark.slow
def test_a_tell_put_back_fails_the_probe(repo: GitRepo, tmp_path: Path) -> None:
    # A variable in the replay's environment that the plain run lacks: the probe says so.
    expected = project(repo)
    plain_run(repo, expected)
    receipt = replay_run(repo, tmp_path, extra={"PATCHLANE_SEED": "5"})
    assert receipt["failed_nodeids"] == [PROBE_ID]
    assert receipt["passed_nodeids"] == []


@pytest.mark.slow
@pytest.mark.skipif(not HOSTS, reason="needs bwrap and Landlock ABI >= 6")
def test_the_pid_namespace_put_back_fails_the_probe(repo: GitRepo, tmp_path: Path) -> None:
    # Where the launcher cannot confine itself (here: under the kernel's 16 stacked Landlock
    # domains), the replay's test process keeps a pid namespace of its own: the probe sees
    # its pid, its parent, pid 1 and the count, and fails (decision 0032).
    expected = project(repo)
    plain_run(repo, expected)
    slice_file, receipt = tmp_path / "slice.txt", tmp_path / "receipt.json"
    slice_file.write_text(PROBE_ID + "\n")
    argv = [
        sys.executable,
        "-m",
        "patchlane",
        "--repo",
        os.fspath(repo.path),
        "replay",
        "run",
        "--slice",
        os.fspath(slice_file),
        "--seed",
        "7",
        "--out",
        os.fspath(receipt),
        "-v",
    ]
    proc = subprocess.run(
        nested(argv), cwd=repo.path, env=user_env(repo.path), stdin=subprocess.DEVNULL,
        capture_output=True, check=False,
    )  # fmt: skip
    said = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 1, said[-3000:]
    assert json.loads(receipt.read_text())["failed_nodeids"] == [PROBE_ID]
    assert "process.ppid_is_1: plain False != replay True" in said
    assert "process.visible: plain '30+' != replay 'under 10'" in said, said[-3000:]


def test_only_declared_differences_are_allowed() -> None:
    plain = {"env.HOME": "/home/u", "env.GITHUB_TOKEN": "x", "process.parent.comm": "bash", "a": 1}
    same = dict(plain)
    assert fingerprint.undeclared(plain, same) == []
    # Declared: the sandbox's launcher as the parent; a credential variable removed.
    replay = {**plain, "process.parent.comm": "python3"}
    del replay["env.GITHUB_TOKEN"]
    assert fingerprint.undeclared(plain, replay) == []
    # Not declared: a variable added, one changed, a fact missing.
    replay = {**plain, "env.PATCHLANE_SEED": "5", "env.HOME": "/tmp/x"}
    del replay["a"]
    assert fingerprint.undeclared(plain, replay) == [
        "a: plain 1 != replay None",
        "env.HOME: plain '/home/u' != replay '/tmp/x'",
        "env.PATCHLANE_SEED: plain None != replay '5'",
    ]
    # The process tree of a pid namespace is not declared (decision 0032).
    for key, value in [
        ("process.ppid_is_1", True),
        ("process.pid1_cmdline", ["bwrap"]),
        ("process.visible", "under 10"),
        ("process.pid_below_100", True),
    ]:
        assert fingerprint.undeclared({key: None}, {key: value}) != []
    # A credential-looking name *added* to the replay is not excused.
    assert fingerprint.undeclared({}, {"env.API_TOKEN": "x"}) == [
        "env.API_TOKEN: plain None != replay 'x'"
    ]


def test_observe_sees_this_process() -> None:
    seen = fingerprint.observe()
    assert seen["cmdline"] and seen["executable"] == sys.executable
    assert seen["env.PATH"] == os.environ["PATH"]
    assert seen["home.path"] == os.fspath(Path.home())
    assert "pytest" in seen["modules"] and "os" not in seen["modules"]
    assert isinstance(seen["umask"], int) and seen["process.pid_below_100"] in (True, False)


# Facts patchlane closed (compared: a difference fails the probe), and those it declares (the
# sandbox's own and the replay's plugins: each with its reason in trust-model.md).
CLOSED = (
    "plugin_module", "import.path_hooks", "import.meta_path", "import.finder_types",
    "import.tree_loaders", "threads.count", "threads.names", "modules.count", "modules.loaded",
    "git.reflog", "git.hooks", "fs.cwd_readonly", "ns.pid", "ns.time",
)  # fmt: skip
SANDBOX = (
    "dev.listing", "tmp.entries", "fs.cwd_is_mount", "fs.prefix_readonly", "ns.user", "ns.mnt",
    "ns.net", "ns.uts", "ns.ipc", "ns.cgroup", "machinery.replaced", "pytest.plugins",
)  # fmt: skip


def test_the_probe_records_every_tell_found(request: pytest.FixtureRequest) -> None:
    seen = fingerprint.observe(request.config.pluginmanager)
    assert set(CLOSED) | set(SANDBOX) <= set(seen)
    assert "null" in seen["dev.listing"] and seen["tmp.entries"][0] in ("none", "1-4", "5+")
    assert seen["fs.prefix_readonly"] in (True, False) and seen["fs.cwd_is_mount"] is False
    assert seen["ns.user"].startswith("user:[")
    assert seen["threads.count"] == threading.active_count()
    assert "MainThread" in seen["threads.names"]
    assert seen["import.path_hooks"] == [
        f"{h.__module__}.{getattr(h, '__qualname__', type(h).__qualname__)}" for h in sys.path_hooks
    ]
    assert seen["modules.count"] == len(seen["modules.loaded"]) >= len(sys.stdlib_module_names) / 20
    assert "patchlane.lanes.replay.fingerprint" in seen["modules.loaded"]
    # patchlane's plugin is loaded in every pytest run of this environment (pytest11).
    assert seen["plugin_module"]["take_job"] == ["function", "int"]  # its default fd
    assert "_frozen_importlib_external.SourceFileLoader" in seen["import.tree_loaders"]
    assert seen["git.reflog"] is None or seen["git.reflog"] >= 1
    assert "patchlane.pytest_plugin" in seen["pytest.plugins"]
    assert "_pytest.config.PytestPluginManager" in seen["pytest.plugins"]


def test_a_closed_tell_fails_the_probe_and_the_sandboxs_own_are_declared() -> None:
    for key in CLOSED:
        assert fingerprint.undeclared({key: 1}, {key: 2}) != [], key
    for key in SANDBOX:
        assert fingerprint.undeclared({key: 1}, {key: 2}) == [], key


def test_job_state_a_module_holds_is_seen_wherever_it_is_kept() -> None:
    # h46: a global holding the job, or a function's closure or default holding it.
    def shape(**names: object) -> object:
        module = types.ModuleType("m")
        vars(module).update(names)
        return fingerprint._module_shape(module)

    def hook(job: object) -> Callable[[], object]:
        return lambda: job

    plain = shape(_REPLAY=None, f=hook(None), g=lambda j=None: j)
    assert shape(_REPLAY=None, f=hook(None), g=lambda j=None: j) == plain
    assert shape(_REPLAY=object(), f=hook(None), g=lambda j=None: j) != plain
    assert shape(_REPLAY=None, f=hook(object()), g=lambda j=None: j) != plain
    assert shape(_REPLAY=None, f=hook(None), g=lambda j=object(): j) != plain  # noqa: B008
