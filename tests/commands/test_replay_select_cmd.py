"""``patchlane replay select`` and ``replay split`` through the real CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from patchlane.formats.slicefile import parse, render
from patchlane.main import main
from tests.gitrepo import GitRepo, run_patchlane, stderr_lines
from tests.lanes.replay.test_select import PROJECT, copy_example, patch, project

# The project, with a test that takes longer than a short recording timeout allows.
PROJECT_WITH_A_SLOW_TEST = {
    **PROJECT,
    "tests/test_slow.py": "import time\n\n\ndef test_slow():\n    time.sleep(30)\n",
}


def select_argv(repo: GitRepo, out: Path, *args: str) -> list[str]:
    return [
        "--repo",
        str(repo.path),
        "replay",
        "select",
        "--base",
        "main",
        "--out",
        str(out),
        *args,
    ]


@pytest.mark.slow
def test_select_writes_the_slice_and_prints_its_sha256(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    out = tmp_path / "replay-slice.txt"
    assert main(select_argv(repo, out)) == 0
    data = out.read_bytes()
    assert data == b"tests/test_a.py::test_a\ntests/test_rel.py::test_rel\n"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == hashlib.sha256(data).hexdigest()
    assert lines[1] == "slice: 2 node ids (40% of 5)"


@pytest.mark.slow
def test_json_gives_slice_hash_count_suite_private_and_reasons(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    out = tmp_path / "s.txt"
    assert main([*select_argv(repo, out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["slice"] == str(out)
    assert doc["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert (doc["count"], doc["suite_size"], doc["private"]) == (2, 5, [])
    assert set(doc["reasons"]) == set(parse(out.read_bytes(), "s"))


@pytest.mark.slow
def test_an_empty_slice_exits_0_with_a_warning(repo: GitRepo, tmp_path: Path) -> None:
    project(repo)
    patch(repo, {"README.md": "prose\n"})
    out = tmp_path / "s.txt"
    proc = run_patchlane(*select_argv(repo, out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == b""
    assert proc.stdout.decode().splitlines()[0] == hashlib.sha256(b"").hexdigest()
    assert any("empty slice is never evidence" in line for line in stderr_lines(proc))


@pytest.mark.slow
def test_failure_log_and_all(repo: GitRepo, tmp_path: Path) -> None:
    project(repo)
    patch(repo, {"README.md": "prose\n"})
    log = tmp_path / "failures.txt"
    log.write_text("FAILED tests/test_other.py::test_o1 - AssertionError\n")
    out = tmp_path / "s.txt"
    assert main([*select_argv(repo, out), "--failure-log", str(log)]) == 0
    assert out.read_bytes() == b"tests/test_other.py::test_o1\n"
    assert main([*select_argv(repo, out), "--all", "-q"]) == 0
    assert len(parse(out.read_bytes(), "s")) == 5


@pytest.mark.slow
def test_a_private_slice_is_said_on_stderr_and_in_json_without_the_secret(
    repo: GitRepo, tmp_path: Path
) -> None:
    token = "gh" + "p_" + "Z9" * 20
    project(repo)
    patch(repo, {"pkg/b.py": f"from pkg.c import C\n\nB = C\nGH = '{token}'\n"})
    out = tmp_path / "s.txt"
    proc = run_patchlane(*select_argv(repo, out), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["private"] == [{"path": "pkg/b.py", "why": "secret (github-token) at line 4"}]
    err = proc.stderr.decode()
    assert "private: pkg/b.py" in err and "never on a shared host" in err
    assert token not in err and token not in proc.stdout.decode()


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--property-report", "{report}"], "expected 'property'"),
        (["--failure-log", "{missing}"], "missing.txt"),
    ],
)
def test_bad_inputs_exit_2_with_one_line(
    repo: GitRepo, tmp_path: Path, extra: list[str], words: str
) -> None:
    project(repo)
    report = tmp_path / "fixture-report.json"
    report.write_text('{"lane": "fixture", "status": "pass", "reason": "ok"}')
    values = {"report": str(report), "missing": str(tmp_path / "missing.txt")}
    args = [a.format(**values) for a in extra]
    proc = run_patchlane(*select_argv(repo, tmp_path / "s.txt", *args))
    assert proc.returncode == 2
    lines = stderr_lines(proc)
    assert len(lines) == 1 and words in lines[0], lines


@pytest.mark.slow
def test_a_property_report_is_accepted(repo: GitRepo, tmp_path: Path) -> None:
    project(repo)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    report = tmp_path / "property-report.json"
    report.write_text('{"lane": "property", "status": "pass", "reason": "ok"}')
    out = tmp_path / "s.txt"
    assert main([*select_argv(repo, out), "--property-report", str(report)]) == 0


def test_without_out_is_a_usage_error(repo: GitRepo) -> None:
    project(repo)
    proc = run_patchlane("--repo", repo.path, "replay", "select", "--base", "main")
    assert proc.returncode == 2
    assert "--out" in stderr_lines(proc)[0]


@pytest.mark.slow
def test_a_test_file_that_no_longer_collects_is_selected_as_its_own_id(
    repo: GitRepo, tmp_path: Path
) -> None:
    project(repo)
    patch(repo, {"tests/test_a.py": "import pkg.nope\n"})
    proc = run_patchlane(*select_argv(repo, tmp_path / "s.txt"))
    assert proc.returncode == 0, proc.stderr
    # It fails on the host (reject), instead of stopping the gate as a usage error.
    assert "tests/test_a.py\n" in (tmp_path / "s.txt").read_text()
    assert b"does not collect at head" in proc.stdout


@pytest.mark.slow
def test_example_slice_fraction(repo: GitRepo, tmp_path: Path) -> None:
    copy_example(repo)
    init = repo.path / "src/quota/__init__.py"
    patch(repo, {"src/quota/__init__.py": init.read_text() + "# c\n"})
    proc = run_patchlane(*select_argv(repo, tmp_path / "s.txt"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines()[1] == "slice: 6 node ids (43% of 14)"


# --- split --------------------------------------------------------------------------------

IDS = [f"tests/test_{i}.py::test_{j}" for i in range(4) for j in range(3)]


def split(tmp_path: Path, shards: int, *extra: str) -> tuple[int, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    whole = tmp_path / "slice.txt"
    whole.write_bytes(render(IDS))
    out_dir = tmp_path / "shards"
    argv = ["replay", "split", "--slice", str(whole), "--shards", str(shards)]
    return main([*argv, "--out-dir", str(out_dir), *extra]), out_dir


def test_split_writes_n_valid_shards_that_cover_the_slice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out_dir = split(tmp_path, 5)
    assert code == 0
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == [f"slice-{k}-of-5.txt" for k in range(1, 6)]
    shards = [parse((out_dir / n).read_bytes(), n) for n in names]
    assert sorted(x for s in shards for x in s) == sorted(IDS)
    assert sum(len(s) for s in shards) == len(IDS)
    printed = capsys.readouterr().out.splitlines()
    for line, name in zip(printed, [f"slice-{k}-of-5.txt" for k in range(1, 6)], strict=True):
        digest, path = line.split("  ")
        assert path.endswith(name)
        assert digest == hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_split_is_deterministic_and_json_lists_the_shards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    split(tmp_path / "a", 3)
    split(tmp_path / "b", 3, "--json")
    for k in (1, 2, 3):
        name = f"slice-{k}-of-3.txt"
        assert (tmp_path / "a/shards" / name).read_bytes() == (
            tmp_path / "b/shards" / name
        ).read_bytes()
    doc = json.loads(capsys.readouterr().out.split("\n", 3)[-1])
    assert doc["shards"] == 3 and doc["count"] == len(IDS)
    assert [f["index"] for f in doc["files"]] == [1, 2, 3]
    assert sum(f["count"] for f in doc["files"]) == len(IDS)


def test_more_shards_than_tests_gives_empty_valid_shards(tmp_path: Path) -> None:
    code, out_dir = split(tmp_path, len(IDS) + 2)
    assert code == 0
    assert (out_dir / f"slice-{len(IDS) + 2}-of-{len(IDS) + 2}.txt").read_bytes() == b""


@pytest.mark.parametrize("shards", ["0", "-1", "1001"])
def test_split_refuses_a_bad_shard_count(tmp_path: Path, shards: str) -> None:
    whole = tmp_path / "slice.txt"
    whole.write_bytes(render(IDS))
    argv = ["replay", "split", "--slice", str(whole), "--shards", shards]
    proc = run_patchlane(*argv, "--out-dir", tmp_path / "d")
    assert proc.returncode == 2
    assert "--shards" in stderr_lines(proc)[0]
    assert not (tmp_path / "d").exists()


def test_split_refuses_a_malformed_slice_naming_file_and_line(tmp_path: Path) -> None:
    whole = tmp_path / "slice.txt"
    whole.write_bytes(b"tests/b.py::t\ntests/a.py::t\n")
    argv = ["replay", "split", "--slice", str(whole), "--shards", "2"]
    proc = run_patchlane(*argv, "--out-dir", tmp_path / "d")
    assert proc.returncode == 2
    (line,) = stderr_lines(proc)
    assert f"{whole}:2: not sorted" in line


@pytest.mark.slow
def test_by_default_the_canary_draws_20_tests_outside_the_slice_and_says_so(
    repo: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PATCHLANE_CANARY")  # the tests' conftest turns the default off
    project(repo)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    out = tmp_path / "s.txt"
    assert main(select_argv(repo, out)) == 0
    # 3 tests outside the selection of 2: fewer than 20, so all of them.
    assert "canary: 3 of 3 tests outside the slice, drawn at random" in capsys.readouterr().out
    assert len(parse(out.read_bytes(), "s")) == 5
    assert main([*select_argv(repo, out), "--json"]) == 0
    canary = json.loads(capsys.readouterr().out)["canary"]
    assert (canary["count"], canary["outside"], canary["source"]) == (3, 3, "default")
    assert (canary["share"], canary["min"]) == (0.05, 20)
    assert main([*select_argv(repo, out), "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["canary"] is None  # the slice is the suite


@pytest.mark.slow
def test_a_map_recording_past_its_timeout_leaves_the_static_rules(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The base's suite takes longer than --dep-map-timeout allows: no map, and the slice
    # keeps to the static rules; the JSON says why.
    project(repo, PROJECT_WITH_A_SLOW_TEST)
    patch(repo, {"pkg/c.py": "C = 3\n"})
    out = tmp_path / "s.txt"
    argv = [*select_argv(repo, out), "--json", "--dep-map", "auto", "--dep-map-timeout", "2"]
    argv += ["--dep-cache", str(tmp_path / "cache")]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dependency_map"].startswith("none") and "timed out" in doc["dependency_map"]
    assert doc["count"] >= 1


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_dep_map_timeout_is_exit_2(repo: GitRepo, tmp_path: Path, value: str) -> None:
    project(repo)
    proc = run_patchlane(*select_argv(repo, tmp_path / "s.txt", "--dep-map-timeout", value))
    assert proc.returncode == 2
    assert "--dep-map-timeout" in stderr_lines(proc)[-1]


def test_a_bad_dep_map_timeout_in_the_environment_is_exit_2(repo: GitRepo, tmp_path: Path) -> None:
    import os

    project(repo)
    env = {**os.environ, "PATCHLANE_DEP_MAP_TIMEOUT": "never", "PATCHLANE_DEP_MAP": "auto"}
    proc = run_patchlane(*select_argv(repo, tmp_path / "s.txt"), env=env)
    assert proc.returncode == 2
    (line,) = stderr_lines(proc)
    assert "PATCHLANE_DEP_MAP_TIMEOUT" in line
