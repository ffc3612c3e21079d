"""The worker side of a tasks run, for real: a mirror and a checkout of a real repository, a
real ``patchlane triage`` child per pair, a real killed child, a real setup command."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

import patchlane
from patchlane.triage.units import BaseSpec, Pair, RunPlan, pair_key
from patchlane.triage.work import SetupFailed, _locked, _mirror, _tar, gate_pair, prepare
from tests.gitrepo import run_patchlane
from tests.triage.project import BREAKS, KEEPS, make_project

GATE = ("--replay", "local", "--today", "2026-09-24")


def _plan(tmp_path: Path, timeout: float = 300.0) -> RunPlan:
    return RunPlan(GATE, str(tmp_path / "work"), 1, timeout)


def _pair(spec: BaseSpec, patch: bytes, name: str = "i-1/m") -> Pair:
    key = pair_key(patchlane.__version__, spec, GATE, patch)
    return Pair("i-1", "m", name, "p.jsonl:1", patch, key)


def _members(evidence: bytes) -> set[str]:
    with tarfile.open(fileobj=io.BytesIO(evidence)) as tar:
        return set(tar.getnames())


@pytest.mark.slow
def test_a_base_with_its_own_map_is_prepared_once_and_gates_its_pairs(tmp_path: Path) -> None:
    repo, _ = make_project(tmp_path / "repo")
    assert run_patchlane("--repo", repo.path, "-q", "init").returncode == 0
    base = repo.commit("the review map")
    spec = BaseSpec(repo=str(repo.path), base_commit=base)
    plan = _plan(tmp_path)
    prepared = prepare(spec, plan)
    assert prepared.gate_base == base  # the base has a map: gated as it is
    assert (Path(prepared.checkout) / "review-map.yml").is_file()
    maps = list((tmp_path / "work" / "maps").rglob(f"maps/{base}/*.json"))
    assert len(maps) == 1  # the dependency map, recorded once for the base

    bad = gate_pair(prepared, _pair(spec, BREAKS), plan)
    assert (bad.verdict, bad.exit_code, bad.infra) == ("reject", 1, False)
    assert "tests/test_app.py::test_add" in bad.reason
    row = json.loads(bad.row)
    assert (row["name"], row["source"], row["evidence"]) == ("i-1/m", "p.jsonl:1", "i-1/m")
    assert {"verdict.json", "receipt.json", "review.md"} <= _members(bad.evidence)

    # A diff that is not one, or is empty, is the row triage gives it: not infrastructure.
    junk = gate_pair(prepared, _pair(spec, b"not a diff\n", "i-1/m-2"), plan)
    assert (junk.verdict, junk.exit_code, junk.infra, junk.evidence) == (
        "does_not_apply",
        2,
        False,
        b"",
    )
    assert junk.reason.startswith("p.jsonl:1: not a patch")
    empty = gate_pair(prepared, _pair(spec, b"", "i-1/m-3"), plan)
    assert (empty.verdict, empty.infra) == ("empty_patch", False)

    again = prepare(spec, plan)  # a second preparation finds the first's work
    assert (again.checkout, again.gate_base) == (prepared.checkout, prepared.gate_base)
    assert len(list((tmp_path / "work" / "maps").rglob(f"maps/{base}/*.json"))) == 1


@pytest.mark.slow
def test_a_base_without_a_map_gets_one_committed_the_same_on_every_machine(
    tmp_path: Path,
) -> None:
    repo, base = make_project(tmp_path / "repo")
    spec = BaseSpec(repo=str(repo.path), base_commit=base)
    one = prepare(spec, _plan(tmp_path / "a"))
    two = prepare(spec, _plan(tmp_path / "b"))
    assert one.gate_base != base
    assert one.gate_base == two.gate_base  # fixed author, date and message: one commit
    show = subprocess.run(
        ["git", "-C", one.checkout, "show", "--stat", "--format=%an %P%n%s", one.gate_base],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert show.startswith(f"patchlane {base}\npatchlane triage --tasks: patchlane init's scaffold")
    assert "review-map.yml" in show
    assert "tests/flaky-freeze.yml" in show

    # The task's own map, from a URL git fetches: that text is what is committed.
    text = (Path(one.checkout) / "review-map.yml").read_text(encoding="utf-8")
    given = text.replace("max_age_days: 14", "max_age_days: 7")
    url = BaseSpec(repo=f"file://{repo.path}", base_commit=base, map_text=given)
    prepared = prepare(url, _plan(tmp_path / "a"))
    committed = subprocess.run(
        ["git", "-C", prepared.checkout, "show", f"{prepared.gate_base}:review-map.yml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert committed == given
    good = gate_pair(prepared, _pair(url, KEEPS), _plan(tmp_path / "a"))
    assert (good.verdict, good.infra) == ("accept_for_review", False), good.reason


@pytest.mark.slow
def test_a_gate_killed_or_past_its_time_is_an_infrastructure_failure(tmp_path: Path) -> None:
    repo, base = make_project(tmp_path / "repo")
    spec = BaseSpec(repo=str(repo.path), base_commit=base)
    prepared = prepare(spec, _plan(tmp_path))
    late = gate_pair(prepared, _pair(spec, BREAKS), _plan(tmp_path, timeout=0.3))
    assert (late.verdict, late.infra, late.row, late.evidence) == ("undecided", True, "", b"")
    assert late.reason == "infrastructure: the gate ran past 0.3 s and was killed"

    killed: list[int] = []
    done = threading.Event()

    def kill_the_gate() -> None:
        # The child is this process's own: found by its parent id, killed by its id.
        while not done.is_set() and not killed:
            for pid in _children():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_gate)
    killer.start()
    try:
        result = gate_pair(prepared, _pair(spec, BREAKS), _plan(tmp_path))
    finally:
        done.set()
        killer.join()
    assert killed
    assert (result.verdict, result.infra) == ("undecided", True)
    assert result.reason == "infrastructure: the gate was killed by SIGKILL"


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me and b"triage" in cmdline:
                found.append(int(entry.name))
    return found


def _script(path: Path, text: str) -> str:
    path.write_text("#!/bin/sh\n" + text, encoding="utf-8")
    path.chmod(0o755)
    return str(path)


@pytest.mark.slow
def test_a_repository_or_commit_that_cannot_be_had_fails_the_setup(tmp_path: Path) -> None:
    repo, base = make_project(tmp_path / "repo")
    missing = BaseSpec(repo=str(tmp_path / "nowhere"), base_commit=base)
    with pytest.raises(SetupFailed, match=r"git fetch .*nowhere exited 128: fatal: "):
        prepare(missing, _plan(tmp_path))
    secret = BaseSpec(repo="https://user:s3cret@127.0.0.1:9/r.git", base_commit=base)
    with pytest.raises(SetupFailed) as caught:
        prepare(secret, _plan(tmp_path))
    assert "s3cret" not in str(caught.value)
    assert "git fetch https://***@127.0.0.1:9/r.git exited 128: fatal: " in str(caught.value)
    absent = BaseSpec(repo=str(repo.path), base_commit="0" * 40)
    with pytest.raises(SetupFailed, match=r"has no commit 0000000000"):
        prepare(absent, _plan(tmp_path))


@pytest.mark.slow
def test_a_given_python_must_import_this_patchlane(tmp_path: Path) -> None:
    repo, base = make_project(tmp_path / "repo")
    plan = _plan(tmp_path)
    spec = BaseSpec(repo=str(repo.path), base_commit=base, python=str(tmp_path / "no-python"))
    with pytest.raises(SetupFailed, match="no such interpreter"):
        prepare(spec, plan)
    bare = _script(tmp_path / "bare", f'exec {sys.executable} -I -S "$@"\n')
    with pytest.raises(SetupFailed) as caught:
        prepare(BaseSpec(repo=str(repo.path), base_commit=base, python=bare), plan)
    assert "cannot import patchlane" in str(caught.value)
    assert f"install it: {bare} -m pip install 'patchlane=={patchlane.__version__}'" in str(
        caught.value
    )
    (tmp_path / "old" / "patchlane").mkdir(parents=True)
    (tmp_path / "old" / "patchlane" / "__init__.py").write_text('__version__ = "0.0.1"\n')
    old = _script(
        tmp_path / "old-py", f'PYTHONPATH={tmp_path / "old"} exec {sys.executable} "$@"\n'
    )
    with pytest.raises(SetupFailed, match=r"has patchlane '0.0.1', not "):
        prepare(BaseSpec(repo=str(repo.path), base_commit=base, python=old), plan)


@pytest.mark.slow
def test_a_setup_makes_an_environment_in_the_sandbox_once_per_base_and_command(
    tmp_path: Path,
) -> None:
    repo, base = make_project(tmp_path / "repo")
    outside = tmp_path / "outside.txt"
    # Installs the project into the environment (a .pth in its site-packages), and tries
    # to write beside the work dir, which the sandbox does not let through.
    setup = (
        "python -c \"import sysconfig,os;open(os.path.join(sysconfig.get_paths()['purelib'],"
        "'app.pth'),'w').write(os.getcwd()+'/src')\" && "
        f"(echo escaped > {outside} || true) && echo ran >> $VIRTUAL_ENV/runs"
    )
    spec = BaseSpec(repo=str(repo.path), base_commit=base, setup=setup)
    plan = _plan(tmp_path)
    prepared = prepare(spec, plan)
    assert prepared.python != sys.executable
    probe = "import app, patchlane; print(app.add(2, 3), patchlane.__version__)"
    # Without PYTHONPATH: patchlane is found through the environment's .pth alone.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    seen = subprocess.run(
        [prepared.python, "-c", probe], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert seen == f"5 {patchlane.__version__}\n"  # its own packages, and patchlane
    assert not outside.exists()
    made = Path(prepared.python).parent.parent
    assert (made / "runs").read_text() == "ran\n"
    again = BaseSpec(repo=f"file://{repo.path}", base_commit=base, setup=setup)
    assert prepare(again, plan).python == prepared.python  # cached by commit and command
    assert (made / "runs").read_text() == "ran\n"

    failing = BaseSpec(repo=str(repo.path), base_commit=base, setup="echo no wheel; exit 3")
    with pytest.raises(SetupFailed, match=r"setup 'echo no wheel; exit 3' exited 3: no wheel"):
        prepare(failing, plan)


@pytest.mark.slow
def test_one_mirror_per_repository_fetched_under_its_lock(tmp_path: Path) -> None:
    repo, first = make_project(tmp_path / "repo")
    repo.write("README", "more\n")
    second = repo.commit("second")
    work = tmp_path / "work"
    specs = [BaseSpec(repo=f"file://{repo.path}", base_commit=c) for c in (first, second)]
    name = _mirror(specs[0], work).name
    lock = work / "mirrors" / name.replace(".git", ".lock")
    got: list[Path] = []
    with _locked(lock):  # another preparation of this repository holds it
        waiting = threading.Thread(target=lambda: got.append(_mirror(specs[1], work)))
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive() and not got
    waiting.join()
    assert got == [work / "mirrors" / name]  # one mirror for both bases
    refs = subprocess.run(
        ["git", "-C", str(got[0]), "for-each-ref", "--format=%(refname)", "refs/patchlane/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(refs) == sorted(f"refs/patchlane/{c}" for c in (first, second))


def test_the_evidence_archive_holds_files_and_folders_never_links(tmp_path: Path) -> None:
    folder = tmp_path / "evidence"
    (folder / "sub").mkdir(parents=True)
    (folder / "verdict.json").write_text("{}")
    (folder / "sub" / "log.txt").write_text("x")
    (folder / "link").symlink_to("/etc/passwd")
    (folder / "sub" / "dirlink").symlink_to(folder)
    assert _members(_tar(folder)) == {"sub", "sub/log.txt", "verdict.json"}
    assert _tar(tmp_path / "absent") == b""
