"""``patchlane fixture check|lock`` through the real CLI (in-process and one subprocess)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from patchlane.lanes.fixture.lane import cache_path
from patchlane.main import main
from tests.gitrepo import GitRepo

ROOT = "tests/fixtures/billing/"
LOCK = "tests/fixtures/billing/LOCK.json"
MAP = f"""\
lanes:
  fixture:
    paths: ["{ROOT}"]
    lock: "{LOCK}"
"""
FILES = {
    f"{ROOT}invoice_min.json": b'{"charge_cents": 1200, "refund_cents": 200}\n',
    f"{ROOT}invoice_max.json": b'{"charge_cents": 10000, "refund_cents": 10000}\n',
}
# The seed's LOCK.json, byte for byte.
SEED_LOCK = (
    "{\n"
    '  "files": [\n'
    "    {\n"
    '      "path": "tests/fixtures/billing/invoice_min.json",\n'
    '      "sha256": "replace-with-64-hex-chars"\n'
    "    }\n"
    "  ]\n"
    "}\n"
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lock_json(files: dict[str, bytes], reason: str | None = "initial") -> str:
    doc: dict[str, Any] = {
        "files": [{"path": p, "sha256": sha(b)} for p, b in sorted(files.items())]
    }
    if reason is not None:
        doc["reason"] = reason
    return json.dumps(doc, indent=2) + "\n"


def project(repo: GitRepo, review_map: str = MAP, files: dict[str, bytes] = FILES) -> None:
    repo.write("review-map.yml", review_map)
    for rel, data in files.items():
        repo.write(rel, data)
    repo.write(LOCK, lock_json(files))


def cli(repo: GitRepo, *args: str) -> int:
    return main(["--repo", os.fspath(repo.path), *args])


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# --- check -----------------------------------------------------------------------------------


def test_check_passes_and_prints_a_summary(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    assert cli(repo, "fixture", "check") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "fixture: pass (work tree): 2 files under 1 root match their locks"
    assert out[1] == f"  lock {LOCK}: 2 files"


def test_check_fails_and_lists_what_differs(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    repo.write(f"{ROOT}invoice_min.json", b"{}")
    repo.write(f"{ROOT}new.json", b"{}")
    repo.remove(f"{ROOT}invoice_max.json")
    assert cli(repo, "fixture", "check") == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(
        "fixture: fail (work tree): 1 changed file, 1 missing file, 1 extra file"
    )
    assert f"  changed: {ROOT}invoice_min.json" in out
    assert f"  missing: {ROOT}invoice_max.json" in out
    assert f"  extra: {ROOT}new.json" in out


def test_a_newline_in_a_file_name_cannot_forge_a_line(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    evil = f"{ROOT}evil\nfixture: pass"
    repo.write(evil, b"x")
    assert cli(repo, "fixture", "check") == 1
    out = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("fixture: pass") for line in out)
    assert "  extra: 'tests/fixtures/billing/evil\\nfixture: pass'" in out


def test_json_output_parses_and_has_the_report_shape(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    repo.write(f"{ROOT}extra.bin", b"x")
    assert cli(repo, "--json", "fixture", "check") == 1
    report = json.loads(capsys.readouterr().out)
    assert list(report)[:5] == ["lane", "status", "reason", "source", "commit"]
    assert report["lane"] == "fixture" and report["status"] == "fail"
    assert report["extra"] == [f"{ROOT}extra.bin"]
    assert report["roots"][0]["lock"] == LOCK


def test_the_report_matches_the_shipped_schema(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    import jsonschema

    import patchlane

    schema_path = Path(patchlane.__file__).parent / "schemas" / "fixture-report.schema.json"
    schema = json.loads(schema_path.read_text())
    project(repo)
    repo.write(f"{ROOT}Invoice_min.json", b"{}")  # extra and a case collision
    os.mkfifo(repo.path / ROOT / "fifo")
    assert cli(repo, "--json", "fixture", "check") == 1
    report = json.loads(capsys.readouterr().out)
    assert report["case_collisions"] and report["unsafe"] and report["extra"]
    jsonschema.validate(report, schema)


def test_out_writes_the_report_atomically(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    target = tmp_path / "reports" / "fixture-report.json"
    assert cli(repo, "fixture", "check", "--out", os.fspath(target)) == 0
    assert json.loads(target.read_text())["status"] == "pass"
    assert [p.name for p in target.parent.iterdir()] == ["fixture-report.json"]


def test_two_runs_are_identical_but_for_timings(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    repo.write(f"{ROOT}z", b"z")
    os.mkfifo(repo.path / ROOT / "fifo")
    runs = []
    for args in (["--no-cache"], []):
        assert cli(repo, "--json", "fixture", "check", *args) == 1
        report = json.loads(capsys.readouterr().out)
        del report["timings"]
        runs.append(json.dumps(report))
    assert runs[0] == runs[1]


def test_no_cache_hashes_everything_and_leaves_the_cache_alone(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    assert cli(repo, "--json", "fixture", "check", "--no-cache") == 0
    assert json.loads(capsys.readouterr().out)["timings"]["cached"] == 0
    assert not cache_path(repo.path).exists()
    assert cli(repo, "fixture", "check") == 0
    assert cache_path(repo.path).exists()


def test_rev_checks_a_commit_not_the_work_tree(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    head = repo.commit("fixtures")
    repo.write(f"{ROOT}invoice_min.json", b"edited, not committed")
    assert cli(repo, "fixture", "check") == 1
    capsys.readouterr()
    assert cli(repo, "--json", "fixture", "check", "--rev", "HEAD") == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["source"], report["commit"]) == ("commit", head)


def test_base_applies_the_lock_update_rule(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    repo.commit("base")
    repo.branch("patch")
    files = {**FILES, f"{ROOT}new.json": b"{}"}
    repo.write(f"{ROOT}new.json", b"{}")
    repo.write(LOCK, lock_json(files, reason="initial"))
    repo.commit("relock, old reason")
    assert cli(repo, "--json", "fixture", "check", "--base", "main", "--rev", "HEAD") == 1
    report = json.loads(capsys.readouterr().out)
    assert "keeps the base's reason 'initial'" in report["lock_errors"][0]["problem"]

    repo.write(LOCK, lock_json(files, reason="add the empty invoice"))
    repo.commit("relock, new reason")
    assert cli(repo, "--json", "fixture", "check", "--base", "main", "--rev", "HEAD") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lock_updates"] == [{"lock": LOCK, "reason": "add the empty invoice"}]
    # The work tree check uses the same rule against the same merge base.
    assert cli(repo, "fixture", "check", "--base", "main") == 0
    out = capsys.readouterr().out
    assert f"  lock update: {LOCK}: add the empty invoice" in out


def test_a_deleted_lock_is_red_with_base(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    project(repo)
    repo.commit("base")
    repo.branch("patch")
    repo.remove(LOCK)
    repo.commit("drop lock")
    assert cli(repo, "fixture", "check", "--base", "main", "--rev", "HEAD") == 1
    assert "lock error: " in capsys.readouterr().out
    assert cli(repo, "fixture", "check", "--rev", "HEAD") == 2  # no base: just absent


# --- bad input: exit 2 with one line ----------------------------------------------------------


def test_the_seed_placeholder_lock_is_refused_naming_the_field(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    repo.write(LOCK, SEED_LOCK)
    assert cli(repo, "fixture", "check") == 2
    assert one_error_line(capsys) == (
        "patchlane: error: tests/fixtures/billing/LOCK.json:5: files[0].sha256: "
        "'replace-with-64-hex-chars' is not a SHA-256 (64 hex characters)"
    )
    repo.write(
        LOCK, SEED_LOCK.replace("replace-with-64-hex-chars", sha(FILES[f"{ROOT}invoice_min.json"]))
    )
    repo.remove(f"{ROOT}invoice_max.json")
    assert cli(repo, "fixture", "check") == 0


@pytest.mark.parametrize(
    ("path", "line", "problem"),
    [
        ("/etc/passwd", 4, "files[0].path: absolute path '/etc/passwd'"),
        ("tests/fixtures/billing/../../../x", 4, "files[0].path: '..' in"),
        (
            "src/billing/core.py",
            4,
            "files[0].path: 'src/billing/core.py' is outside this lock's root",
        ),
    ],
)
def test_unsafe_lock_entries_are_refused_with_file_and_line(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], path: str, line: int, problem: str
) -> None:
    project(repo)
    repo.write(LOCK, json.dumps({"files": [{"path": path, "sha256": "a" * 64}]}, indent=2))
    assert cli(repo, "fixture", "check") == 2
    message = one_error_line(capsys)
    assert message.startswith(f"patchlane: error: {LOCK}:{line}: {problem}")


@pytest.mark.parametrize(
    ("lock", "problem"),
    [
        ("/abs/LOCK.json", "absolute path '/abs/LOCK.json'"),
        ("../outside/LOCK.json", "'..' in '../outside/LOCK.json'"),
    ],
)
def test_an_unsafe_lock_path_in_the_map_is_a_map_error(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], lock: str, problem: str
) -> None:
    project(repo, MAP.replace(LOCK, lock))
    assert cli(repo, "fixture", "check") == 2
    message = one_error_line(capsys)
    assert message.startswith("patchlane: error: review-map.yml:4: lanes.fixture.lock: ")
    assert problem in message


def test_a_map_without_a_fixture_lane_is_bad_input(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("review-map.yml", 'lanes:\n  freeze:\n    registry: "tests/freeze.yml"\n')
    assert cli(repo, "fixture", "check") == 2
    assert one_error_line(capsys) == (
        "patchlane: error: review-map.yml: no fixture lane (lanes.fixture): nothing to check or lock"
    )


def test_a_map_given_with_map_is_used(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    outside = tmp_path / "my-map.yml"
    outside.write_text(MAP.replace(LOCK, "other.json").replace(ROOT, "tests/fixtures/other/"))
    assert cli(repo, "--map", os.fspath(outside), "fixture", "check") == 2
    assert "other.json: no such file" in one_error_line(capsys)


def test_an_unknown_rev_is_bad_input(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    project(repo)
    repo.commit("base")
    assert cli(repo, "fixture", "check", "--rev", "no-such-branch") == 2
    assert "unknown ref 'no-such-branch'" in one_error_line(capsys)


def test_an_action_is_required(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    project(repo)
    assert cli(repo, "fixture") == 2
    assert "required" in capsys.readouterr().err


# --- lock ----------------------------------------------------------------------------------


def test_lock_writes_every_root_and_check_then_passes(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    repo.write(f"{ROOT}new.json", b"{}")
    assert cli(repo, "fixture", "lock", "--reason", "add the empty invoice") == 0
    assert capsys.readouterr().out == f"wrote {LOCK} (3 files)\n"
    doc = json.loads((repo.path / LOCK).read_text())
    assert doc["reason"] == "add the empty invoice"
    assert len(doc["updated"]) == 20 and doc["updated"].endswith("Z")
    assert [f["path"] for f in doc["files"]] == sorted(f["path"] for f in doc["files"])
    assert sorted(p.name for p in (repo.path / ROOT).iterdir() if p.name.startswith(".")) == []
    assert cli(repo, "fixture", "check") == 0


def test_lock_json_output(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    project(repo)
    assert cli(repo, "--json", "fixture", "lock", "--reason", "relock") == 0
    assert json.loads(capsys.readouterr().out) == {"written": [{"lock": LOCK, "files": 2}]}


def test_lock_root_selects_one_lock(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    review_map = """\
lanes:
  fixture:
    roots:
      - {path: "a/", lock: "a/LOCK.json"}
      - {path: "b/", lock: "b/LOCK.json"}
"""
    repo.write("review-map.yml", review_map)
    repo.write("a/1", b"1")
    repo.write("b/2", b"2")
    assert cli(repo, "fixture", "lock", "--reason", "b", "--root", "b/LOCK.json") == 0
    assert capsys.readouterr().out == "wrote b/LOCK.json (1 files)\n"
    assert not (repo.path / "a/LOCK.json").exists()
    assert cli(repo, "fixture", "lock", "--reason", "c", "--root", "c/LOCK.json") == 2
    assert "--root c/LOCK.json: no fixture root has this lock" in one_error_line(capsys)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reason", ""], "--reason must not be empty"),
        (["--reason", "two\nlines"], "--reason must be one line"),
        ([], "the following arguments are required: --reason"),
    ],
)
def test_lock_reason_rules(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    project(repo)
    before = (repo.path / LOCK).read_bytes()
    assert cli(repo, "fixture", "lock", *args) == 2
    assert message in one_error_line(capsys)
    assert (repo.path / LOCK).read_bytes() == before


def test_lock_refuses_a_symlink_naming_the_file(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    project(repo)
    before = (repo.path / LOCK).read_bytes()
    (repo.path / ROOT / "linked.json").symlink_to("/etc/hostname")
    assert cli(repo, "fixture", "lock", "--reason", "relock") == 2
    assert one_error_line(capsys) == (
        f"patchlane: error: {ROOT}linked.json: symlink (never followed); no lock was written"
    )
    assert (repo.path / LOCK).read_bytes() == before


# --- a real process --------------------------------------------------------------------------


@pytest.mark.slow
def test_python_dash_m_patchlane_fixture_check(repo: GitRepo) -> None:
    project(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PYTHONIOENCODING"] = "utf-8:strict"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "patchlane", *args],
            cwd=repo.path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    ok = run("--json", "fixture", "check")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["status"] == "pass"
    repo.write(f"{ROOT}invoice_min.json", b"{}")
    red = run("fixture", "check")
    assert red.returncode == 1
    assert f"  changed: {ROOT}invoice_min.json" in red.stdout.splitlines()
    # A file name that is not UTF-8 must not break strict UTF-8 stdout, human or JSON.
    repo.write(os.fsencode(ROOT) + b"caf\xe9", b"x")
    odd = run("--json", "fixture", "check")
    assert odd.returncode == 1, odd.stderr
    assert json.loads(odd.stdout)["extra"] == [f"{ROOT}caf\udce9"]
    human = run("fixture", "check")
    assert human.returncode == 1 and f"  extra: '{ROOT}caf\\udce9'" in human.stdout.splitlines()
    repo.write(LOCK, SEED_LOCK)
    bad = run("fixture", "check")
    assert bad.returncode == 2
    assert bad.stderr.strip().endswith(
        "files[0].sha256: 'replace-with-64-hex-chars' is not a SHA-256 (64 hex characters)"
    )
    assert "Traceback" not in bad.stderr
