"""``patchlane triage --tasks``: the command line's refusals (exit 2, one line, before any
base is prepared) and the start-up it must not grow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.main import main
from tests.gitrepo import run_patchlane, stderr_lines

BASE = "b" * 40


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(
        json.dumps({"instance_id": "i-1", "repo": "no-such-repo", "base_commit": BASE}) + "\n"
    )
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        json.dumps({"instance_id": "i-1", "model_name_or_path": "m", "model_patch": "x"}) + "\n"
    )
    return task_file, preds


def refused(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("patchlane: error: "), err
    return lines[0]


def test_base_is_refused_with_tasks(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    task_file, preds = inputs
    out = tmp_path / "out"
    line = refused(
        capsys, "triage", "--tasks", task_file, "--base", "main", preds, "--out-dir", out
    )
    assert "--base with --tasks" in line
    assert not out.exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--engine", "slurm"], "--engine slurm: expected one of local, ray"),
        (["--address", "ray://x:10001"], "--address names a Ray cluster"),
        (["-j", "0"], "-j 0: must be at least 1"),
        (["--cases", "0"], "--cases 0: must be at least 1"),
        (["--failure-log", "log.xml"], "--failure-log with --tasks"),
    ],
)
def test_bad_options_are_one_line(
    capsys: pytest.CaptureFixture[str],
    inputs: tuple[Path, Path],
    tmp_path: Path,
    extra: list[str],
    said: str,
) -> None:
    task_file, preds = inputs
    out = tmp_path / "out"
    line = refused(capsys, "triage", "--tasks", task_file, *extra, preds, "--out-dir", out)
    assert said in line
    assert not out.exists()


def test_tasks_options_without_tasks_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, "triage", "--engine", "ray", "HEAD")
    assert "--engine goes with --tasks FILE" in line


def test_a_malformed_task_or_an_orphan_prediction_names_its_line(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    task_file, preds = inputs
    out = tmp_path / "out"
    with preds.open("a") as f:
        f.write(json.dumps({"instance_id": "i-9", "model_name_or_path": "m", "model_patch": ""}))
    line = refused(capsys, "triage", "--tasks", task_file, preds, "--out-dir", out)
    assert f"{preds}:2" in line and "no task" in line
    task_file.write_text(json.dumps({"instance_id": "i-1", "repo": "r", "base_commit": "HEAD"}))
    line = refused(capsys, "triage", "--tasks", task_file, preds, "--out-dir", out)
    assert f"{task_file}:1" in line and "40 hex" in line
    assert not out.exists()


def test_ray_missing_says_how_to_install_the_extra(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    # A ``ray`` that cannot be imported first on the path: what an install without the
    # extra gives (``ray`` is installed on this machine, for the Ray engine's own tests).
    shim = tmp_path / "shim" / "ray"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    task_file, preds = inputs
    out = tmp_path / "out"
    proc = run_patchlane(
        "triage", "--tasks", task_file, "--engine", "ray", preds, "--out-dir", out,
        env={"PYTHONPATH": f"{shim.parent}:{Path(__file__).resolve().parents[2] / 'src'}"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = stderr_lines(proc)
    assert line.endswith("pip install 'patchlane[ray]'")
    assert not out.exists()


def test_triage_help_imports_no_engine_no_worker_no_ray() -> None:
    code = (
        "import sys\n"
        "from patchlane.main import main\n"
        "assert main(['triage', '--help']) == 0\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.decode().splitlines()
    assert "patchlane.commands.triage" in loaded  # the measurement itself works
    heavy = [
        m
        for m in loaded
        if m.split(".")[0] == "ray"
        or m.startswith(("patchlane.triage.engines", "patchlane.triage.work"))
        or m in ("patchlane.triage.fleet", "patchlane.commands.triage_tasks")
    ]
    assert heavy == []


def test_the_gate_options_become_the_words_every_pairs_gate_takes(tmp_path: Path) -> None:
    from patchlane.commands.triage_tasks import gate_words
    from patchlane.main import _lazy_parser

    argv = ["triage", "--tasks", "t.jsonl", "--seed", "7", "--cases", "30", "--today",
            "2026-09-24", "--mutants", "0", "--test-timeout", "90", "--replay", "local",
            "--public-key", "key.pem", "p.jsonl"]  # fmt: skip
    args = _lazy_parser(argv).parse_args(argv)
    words = gate_words(args)
    assert words[:12] == ("--seed", "7", "--cases", "30", "--today", "2026-09-24",
                          "--mutants", "0", "--test-timeout", "90.0", "--public-key",
                          str(Path.cwd() / "key.pem"))  # fmt: skip
    assert words[12:14] == ("--replay", "local")
    # The words parse back as the same options: what the child gate is given.
    again = _lazy_parser(["triage", *words, "x"]).parse_args(["triage", *words, "x"])
    for name in ("seed", "cases", "today", "mutants", "test_timeout", "replay"):
        assert getattr(again, name) == getattr(args, name)
