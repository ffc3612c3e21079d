"""The ``ray`` engine on a real local Ray cluster (tests/triage/conftest.py): the same
verdicts as the worker functions run here, a base that cannot be prepared, a Ray worker
killed mid-gate; and, without Ray, the one line that says how to install it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import patchlane
from patchlane.main import main
from patchlane.triage.engines.ray import INSTALL_HINT, RayEngine
from patchlane.triage.units import BaseEvent, BaseSpec, Pair, PairResult, RunPlan, Unit, pair_key
from patchlane.triage.work import gate_pair, prepare
from tests.gitrepo import run_patchlane
from tests.triage.project import BREAKS, KEEPS, make_project
from tests.triage.raycluster import Cluster

GATE = ("--replay", "local", "--today", "2026-09-24")


def _pair(spec: BaseSpec, patch: bytes, name: str) -> Pair:
    key = pair_key(patchlane.__version__, spec, GATE, patch)
    return Pair(name.split("/")[0], "m", name, f"p.jsonl:{name}", patch, key)


def _base(tmp_path: Path) -> BaseSpec:
    repo, _ = make_project(tmp_path / "repo")
    assert run_patchlane("--repo", repo.path, "-q", "init").returncode == 0
    return BaseSpec(repo=str(repo.path), base_commit=repo.commit("the review map"))


def _run(cluster: Cluster, units: list[Unit], plan: RunPlan) -> list[BaseEvent | PairResult]:
    got: list[BaseEvent | PairResult] = []
    RayEngine(cluster.address).run(units, plan, got.append)
    return got


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_ray_gives_the_verdicts_the_workers_give_here_and_a_lost_base_is_infra(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    spec = _base(tmp_path)
    pairs = (_pair(spec, BREAKS, "i-1/m"), _pair(spec, KEEPS, "i-2/m"))
    missing = BaseSpec(repo=spec.repo, base_commit="0" * 40)  # no such commit: SetupFailed
    lost = (_pair(missing, KEEPS, "i-3/m"),)
    plan = RunPlan(GATE, str(tmp_path / "ray-work"), 2, 300.0)

    got = _run(ray_cluster, [Unit(spec, pairs), Unit(missing, lost)], plan)

    events = {e.base_key: e for e in got if isinstance(e, BaseEvent)}
    results = {r.name: r for r in got if isinstance(r, PairResult)}
    assert sorted(results) == ["i-1/m", "i-2/m", "i-3/m"]  # one result per pair, no more
    assert len(got) == 5
    ready = events[spec.key]
    assert ready.error is None and len(ready.node) == 56  # a Ray node id (28 bytes, hex)
    assert events[missing.key].error is not None
    assert events[missing.key].error.startswith("infrastructure: ")
    assert (
        "set-up failed" in events[missing.key].error and "0000000000" in events[missing.key].error
    )
    gone = results["i-3/m"]
    assert (gone.verdict, gone.infra, gone.exit_code) == ("undecided", True, 3)
    assert gone.reason == events[missing.key].error

    # The same worker functions run in this process, on a work dir of their own.
    here_plan = RunPlan(GATE, str(tmp_path / "here-work"), 1, 300.0)
    prepared = prepare(spec, here_plan)
    for pair in pairs:
        here = gate_pair(prepared, pair, here_plan)
        there = results[pair.name]
        assert (there.verdict, there.exit_code, there.infra, there.attempts) == (
            here.verdict,
            here.exit_code,
            False,
            1,
        )
        assert there.reason == here.reason
        assert there.evidence  # the evidence folder came back over Ray's object store
    assert results["i-1/m"].verdict == "reject"
    assert results["i-2/m"].verdict == "accept_for_review"


def _kill_first_gate_worker(cluster: Cluster, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first Ray worker seen running ``gate_task`` once its gate child runs."""
    while not stop.is_set():
        for pid in cluster.workers_titled("ray::gate_task"):
            gate = _children(pid)
            if gate:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                killed.extend(gate)
                return
        time.sleep(0.05)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_a_worker_killed_mid_gate_is_retried_or_infra_and_the_run_finishes(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    spec = _base(tmp_path)
    pairs = (_pair(spec, KEEPS, "i-1/m"),)
    plan = RunPlan(GATE, str(tmp_path / "work"), 2, 300.0)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_first_gate_worker, args=(ray_cluster, killed, stop))
    killer.start()
    try:
        got = _run(ray_cluster, [Unit(spec, pairs)], plan)
    finally:
        stop.set()
        killer.join()
    assert killed, "no Ray worker was seen running the gate"
    # The gate the dead worker had started (in a session of its own, killed as the worker
    # was, mid-gate) does not run on beside the retry: the retry kills it and removes its
    # folder before it gates (the gate takes seconds; the retry starts within one).
    assert not [p for p in killed[1:] if Path(f"/proc/{p}").exists()]
    assert not list((tmp_path / "work" / "pairs").iterdir())
    # The attempt's mark is gone with it: the work dir keeps none.
    assert not [p for p in (tmp_path / "work" / "ray-attempts").rglob("*") if p.is_file()]
    (result,) = [r for r in got if isinstance(r, PairResult)]
    # Ray ran the task again on the same node (max_retries=1): the retried verdict, counted
    # as a second attempt; or, had the retry failed too, an infrastructure undecided.
    if result.infra:
        assert (result.verdict, result.attempts) == ("undecided", 2)
        assert result.reason.startswith("infrastructure: ")
    else:
        assert (result.verdict, result.attempts) == ("accept_for_review", 2), result.row


def test_without_ray_the_engine_says_in_one_line_how_to_install_it() -> None:
    # An interpreter without site-packages (-S): Ray is not importable there, for real.
    src = str(Path(patchlane.__file__).parents[1])
    code = (
        f"import sys; sys.path.insert(0, {src!r})\n"
        "from patchlane.triage.engines.ray import RayEngine\n"
        "from patchlane.errors import UsageError\n"
        "try:\n    RayEngine()\nexcept UsageError as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == INSTALL_HINT + "\n"
    assert done.stdout.count("\n") == 1


def _tasks_file(tmp_path: Path) -> tuple[Path, Path]:
    """Two repositories, three bases (two in the first), two predictions each: one that
    breaks a test, one that keeps them green."""
    one, _ = make_project(tmp_path / "one")
    assert run_patchlane("--repo", one.path, "-q", "init").returncode == 0
    first = one.commit("the review map")
    one.write("NOTES.md", "a second base\n")
    second = one.commit("notes")
    two, _ = make_project(tmp_path / "two")
    two.write("README.md", "the second repository\n")  # else its commits are the first's
    two.commit("readme")
    assert run_patchlane("--repo", two.path, "-q", "init").returncode == 0
    third = two.commit("the review map")
    tasks = [("one-1", one.path, first), ("one-2", one.path, second), ("two-1", two.path, third)]
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(
        "".join(
            json.dumps({"instance_id": i, "repo": str(r), "base_commit": c}) + "\n"
            for i, r, c in tasks
        )
    )
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"instance_id": i, "model_name_or_path": m, "model_patch": p.decode()})
            + "\n"
            for i, _, _ in tasks
            for m, p in (("breaks", BREAKS), ("keeps", KEEPS))
        )
    )
    return task_file, preds


def _verdicts(out: Path) -> dict[str, tuple[object, ...]]:
    lines = (out / "triage.jsonl").read_text().splitlines()
    return {
        r["name"]: (r["verdict"], r["exit_code"], r["infra"], r["reason"])
        for r in map(json.loads, lines)
    }


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_a_tasks_file_gets_the_same_verdicts_on_ray_as_on_the_local_engine(
    ray_cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_file, preds = _tasks_file(tmp_path)

    def gate(engine: str, *more: str) -> int:
        argv = ["triage", "--tasks", str(task_file), "--engine", engine, *more, "-j", "2"]
        argv += [
            "--out-dir",
            str(tmp_path / engine),
            "--work-dir",
            str(tmp_path / f"{engine}-work"),
        ]
        return main([*argv, *GATE, str(preds)])

    code = gate("local")
    assert gate("ray", "--address", ray_cluster.address) == code
    local, ray = _verdicts(tmp_path / "local"), _verdicts(tmp_path / "ray")
    assert len(ray) == 6 and ray == local
    assert {v[0] for v in ray.values()} == {"reject", "accept_for_review"}
    # Each base's dependency map recorded once, on the node that prepared it.
    maps = list((tmp_path / "ray-work" / "maps").rglob("maps/*/*.json"))
    assert len({m.parent.name for m in maps}) == 3 and len(maps) == 3
    # A second run over the same out dir gates nothing again.
    capsys.readouterr()
    assert gate("ray", "--address", ray_cluster.address) == code
    assert _verdicts(tmp_path / "ray") == local
    assert len((tmp_path / "ray" / "triage.jsonl").read_text().splitlines()) == 6
    assert "pairs 0/0 done" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_without_an_address_a_local_cluster_is_started_for_the_run_and_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    repo, _ = make_project(tmp_path / "repo")
    missing = BaseSpec(repo=str(repo.path), base_commit="0" * 40)  # git fails: no such commit
    pair = _pair(missing, KEEPS, "i-1/m")
    got: list[BaseEvent | PairResult] = []
    RayEngine().run(
        [Unit(missing, (pair,))], RunPlan(GATE, str(tmp_path / "w"), 1, 60.0), got.append
    )
    event, result = got
    assert isinstance(event, BaseEvent) and isinstance(result, PairResult)
    assert event.error is not None and "set-up failed" in event.error
    assert (result.verdict, result.infra, result.attempts) == ("undecided", True, 2)
    import ray

    assert not ray.is_initialized()  # the run's own cluster is shut down
