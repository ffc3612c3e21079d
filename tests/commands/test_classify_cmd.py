"""``patchlane classify`` end to end: real git, real subprocesses, exit codes and bytes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from tests.gitrepo import (
    CLASSIFY_MAP,
    GitRepo,
    add_symlink,
    git_at,
    make_project,
    run_patchlane,
    start_patch,
    stderr_lines,
)


def _patch(repo: GitRepo, files: dict[str | bytes, str]) -> str:
    make_project(repo)
    start_patch(repo)
    for rel, content in files.items():
        repo.write(rel, content)
    return repo.commit("patch")


def _classify(
    repo: GitRepo, *extra: str | os.PathLike[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return run_patchlane("--repo", repo.path, "classify", "--base", "main", *extra, env=env)


def _one_error_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = stderr_lines(proc)
    assert len(lines) == 1, lines
    assert "Traceback" not in proc.stderr.decode()
    assert proc.stdout == b""
    line: str = lines[0]
    assert line.startswith("patchlane: error: ")
    return line


def test_complete_map_exits_0_and_json_equals_the_file(repo: GitRepo, tmp_path: Path) -> None:
    head = _patch(repo, {"src/billing/core.py": "patched\n"})
    out = tmp_path / "reports" / "classify.json"
    proc = _classify(repo, "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == out.read_bytes()
    data = json.loads(out.read_bytes())
    assert data["head"] == head
    assert data["map_complete"] is True
    assert [f["path"] for f in data["files"]] == ["src/billing/core.py"]


def test_incomplete_map_exits_3(repo: GitRepo, tmp_path: Path) -> None:
    _patch(repo, {"src/billing/core.py": "patched\n", "tools/x.py": "pass\n"})
    out = tmp_path / "classify.json"
    proc = _classify(repo, "--out", out)
    assert proc.returncode == 3, proc.stderr
    assert json.loads(out.read_bytes())["unmapped"] == ["tools/x.py"]
    text = proc.stdout.decode()
    assert "unmapped: tools/x.py" in text
    assert "map_complete: false" in text


def test_empty_and_ignored_only_patches_exit_3(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.commit("empty")
    assert _classify(repo).returncode == 3
    repo.write("docs/guide.md", "prose\n")
    repo.commit("docs only")
    assert _classify(repo).returncode == 3


def test_odd_names_are_reported_exactly(repo: GitRepo, tmp_path: Path) -> None:
    names = [
        b"src/billing/with space.py",
        b"src/billing/new\nline.py",
        b'src/billing/double"quote.py',
        b"src/billing/tab\there.py",
        "src/billing/café.py".encode(),
        b"src/billing/caf\xe9.py",
        b"caf\xe9.txt",
    ]
    _patch(repo, {raw: "x\n" for raw in names})
    out = tmp_path / "classify.json"
    proc = _classify(repo, "--out", out, "--json")
    assert proc.returncode == 3, proc.stderr  # caf\xe9.txt is unmapped
    raw_json = out.read_bytes()
    assert proc.stdout == raw_json
    data = json.loads(raw_json.decode("utf-8"))
    assert sorted(os.fsencode(f["path"]) for f in data["files"]) == sorted(names)
    assert [os.fsencode(p) for p in data["unmapped"]] == [b"caf\xe9.txt"]


def test_human_output_cannot_be_forged_by_a_file_name(repo: GitRepo) -> None:
    _patch(repo, {"tools/x\nmap_complete: true": "x\n", b"tools/\xff\x1b[2J": "x\n"})
    proc = _classify(repo)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stdout.decode("utf-8").splitlines()
    assert "map_complete: true" not in lines
    assert lines[-1].startswith("map_complete: false")
    assert b"\x1b" not in proc.stdout


def test_head_option_and_default_repo(repo: GitRepo) -> None:
    head = _patch(repo, {"src/billing/core.py": "patched\n"})
    repo.checkout("main")
    proc = run_patchlane(
        "--json", "classify", "--base", "main", "--head", "patch", cwd=repo.path / "src"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["head"] == head


def test_unknown_ref_says_what_to_fetch(repo: GitRepo, tmp_path: Path) -> None:
    _patch(repo, {"src/billing/core.py": "patched\n"})
    out = tmp_path / "classify.json"
    proc = run_patchlane("--repo", repo.path, "classify", "--base", "origin/main", "--out", out)
    line = _one_error_line(proc)
    assert "unknown ref 'origin/main'" in line
    assert "git fetch origin main" in line
    assert not out.exists()


def test_shallow_clone_without_merge_base_is_refused(repo: GitRepo, tmp_path: Path) -> None:
    _patch(repo, {"src/billing/core.py": "patched\n"})
    repo.checkout("main")
    repo.write("README.md", "main moves on\n")
    repo.commit("main moves on")
    clone = tmp_path / "clone"
    git_at(
        tmp_path, "clone", "-q", "--depth", "1", "--branch", "main", f"file://{repo.path}", "clone"
    )
    git_at(clone, "fetch", "-q", "--depth", "1", "origin", "patch:refs/remotes/origin/patch")
    out = tmp_path / "classify.json"
    proc = run_patchlane(
        "--repo", clone, "classify", "--base", "origin/main", "--head", "origin/patch", "--out", out
    )
    line = _one_error_line(proc)
    assert "no merge base" in line
    assert "shallow" in line
    assert "git fetch --unshallow" in line
    assert not out.exists()  # no two-dot fallback answer either


def test_callers_git_environment_is_ignored(repo: GitRepo, tmp_path: Path) -> None:
    _patch(repo, {"src/billing/core.py": "patched\n", "tools/x.py": "pass\n"})
    clean = _classify(repo, "--json")
    assert clean.returncode == 3
    other = GitRepo(tmp_path / "other")
    other.write("review-map.yml", "lanes: {}\n")
    other.commit("other")
    hostile = {
        "GIT_DIR": os.fspath(other.path / ".git"),
        "GIT_WORK_TREE": os.fspath(other.path),
        "GIT_INDEX_FILE": os.fspath(tmp_path / "bogus-index"),
    }
    proc = _classify(repo, "--json", env=hostile)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == clean.stdout


def test_external_diff_and_textconv_are_never_run(repo: GitRepo, tmp_path: Path) -> None:
    _patch(repo, {"src/billing/core.py": "patched\n"})
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> '{marker}'\ncat \"$1\" 2>/dev/null\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    repo.git("config", "diff.external", os.fspath(script))
    repo.git("config", "diff.evil.textconv", os.fspath(script))
    repo.git("config", "diff.evil.command", os.fspath(script))
    repo.git("config", "core.fsmonitor", os.fspath(script))
    (repo.path / ".git" / "info" / "attributes").write_text("* diff=evil\n")
    repo.git("diff", "main", "HEAD")  # the trap is armed: plain git runs it
    assert marker.exists()
    marker.unlink()

    proc = _classify(repo, "--json")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()


def test_no_map_at_base_or_head_exits_2(repo: GitRepo) -> None:
    make_project(repo, review_map=None)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    line = _one_error_line(_classify(repo))
    assert "review-map.yml: no review map at base or head" in line


def test_head_map_is_used_when_base_has_none(repo: GitRepo) -> None:
    make_project(repo, review_map=None)
    start_patch(repo)
    repo.write("review-map.yml", CLASSIFY_MAP)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    proc = _classify(repo, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["map"]["source"] == "head"
    assert "review-map.yml" in data["control_plane"]
    assert b"map: review-map.yml (head" in _classify(repo).stdout


def test_map_outside_the_repo(repo: GitRepo, tmp_path: Path) -> None:
    _patch(repo, {"tools/x.py": "pass\n"})
    outside = tmp_path / os.fsdecode(b"m\xe9p.yml")
    outside.write_text(CLASSIFY_MAP + '  - path: "tools/"\n    reason: "scripts"\n')
    proc = _classify(repo, "--map", outside, "--json")
    assert proc.returncode == 3, proc.stderr  # ignored only: nothing mapped
    data = json.loads(proc.stdout)
    assert data["map"]["source"] == "file"
    assert os.fsencode(data["map"]["path"]) == os.fsencode(outside)
    human = run_patchlane("--repo", repo.path, "--map", outside, "classify", "--base", "main")
    assert human.returncode == 3, human.stderr
    assert b"Traceback" not in human.stderr
    assert human.stdout.startswith(b"map: ")


def test_symlinked_map_is_refused(repo: GitRepo) -> None:
    make_project(repo, review_map=None)
    repo.write("maps/real.yml", CLASSIFY_MAP)
    add_symlink(repo, "review-map.yml", "maps/real.yml")
    repo.commit("map via symlink")
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    line = _one_error_line(_classify(repo))
    assert "review-map.yml: not a regular file" in line


def test_unwritable_out_is_a_clear_input_error(repo: GitRepo, tmp_path: Path) -> None:
    _patch(repo, {"src/billing/core.py": "patched\n"})
    blocker = tmp_path / "file"
    blocker.write_text("I am a file\n")
    line = _one_error_line(_classify(repo, "--out", blocker / "classify.json"))
    assert f"{blocker / 'classify.json'}: cannot write: {blocker} is not a directory" in line
    assert blocker.read_text() == "I am a file\n"
