"""``patchlane replay run|verify|merge`` through the real CLI, with real pytest runs and keys."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from patchlane.formats import slicefile
from patchlane.lanes.replay import signing
from patchlane.main import main
from patchlane.schemas import load_schema
from tests.formats.test_receipt import seed_bytes
from tests.gitrepo import GitRepo, run_patchlane, stderr_lines
from tests.keys import write_key_pair
from tests.lanes.replay.test_run import hash_under
from tests.lanes.replay.test_verify import freeze_record, freeze_report

GOOD, BAD, FROZEN = (f"tests/test_x.py::test_{n}" for n in ("good", "bad", "frozen"))
OTHER = "tests/test_x.py::test_other"
TESTS = """\
def test_good():
    pass

def test_other():
    pass

def test_bad():
    assert False

def test_frozen():
    assert False, "flaky"
"""


def review_map(seed: int | None = 4242, require_signature: bool = False) -> str:
    seed_line = f"    seed: {seed}\n" if seed is not None else ""
    return (
        'version: 1\nlanes:\n  property:\n    paths: ["src/"]\n    module: "checks.props"\n'
        f"{seed_line}  replay:\n    require_signature: {str(require_signature).lower()}\n"
    )


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    repo.write("tests/test_x.py", TESTS)
    repo.write("review-map.yml", review_map())
    repo.commit("project")
    return repo


def files(
    tmp_path: Path, nodeids: list[str], freeze: dict[str, Any] | None = None
) -> dict[str, Path]:
    """Write the slice and the freeze report; return where everything goes."""
    out = {
        "slice": tmp_path / "replay-slice.txt",
        "freeze": tmp_path / "freeze-report.json",
        "receipt": tmp_path / "receipt.json",
        "report": tmp_path / "replay-report.json",
    }
    out["slice"].write_bytes(slicefile.render(nodeids))
    out["freeze"].write_text(json.dumps(freeze or freeze_report(freeze_record(FROZEN))))
    return out


def replay(repo: GitRepo, *args: str | Path) -> int:
    return main(["--repo", str(repo.path), "-q", "replay", *map(str, args)])


def run_cmd(repo: GitRepo, f: dict[str, Path], *extra: str | Path, seed: int = 4242) -> int:
    return replay(
        repo, "run", "--slice", f["slice"], "--seed", str(seed), "--freeze-report", f["freeze"],
        "--out", f["receipt"], *extra,
    )  # fmt: skip


def verify_cmd(repo: GitRepo, f: dict[str, Path], *extra: str | Path) -> int:
    return replay(
        repo, "verify", "--slice", f["slice"], "--receipt", f["receipt"], "--freeze-report",
        f["freeze"], "--out", f["report"], *extra,
    )  # fmt: skip


def report(f: dict[str, Path]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(f["report"].read_text())
    return value


def keys(tmp_path: Path, name: str = "host") -> tuple[Path, Path]:
    return write_key_pair(tmp_path, name, ".pub")


@pytest.mark.slow
def test_run_then_verify_a_failure_exits_1_twice(project: GitRepo, tmp_path: Path) -> None:
    f = files(tmp_path, [GOOD, BAD, FROZEN])
    assert run_cmd(project, f) == 1
    receipt = json.loads(f["receipt"].read_text())
    assert receipt["failed_nodeids"] == [BAD]
    assert receipt["skipped_by_freeze"] == [FROZEN]
    assert receipt["passed_nodeids"] == [GOOD]
    assert receipt["head"] == project.head() and receipt["host_role"] == "local"
    assert verify_cmd(project, f) == 1
    r = report(f)
    assert (r["lane"], r["status"], r["outcome"], r["failed"]) == ("replay", "fail", "fail", [BAD])
    assert r["receipt_sha256"] == hashlib.sha256(f["receipt"].read_bytes()).hexdigest()
    assert r["slice_sha256"] == hashlib.sha256(f["slice"].read_bytes()).hexdigest()
    assert (r["seed"], r["head"], r["skipped_by_freeze"]) == (4242, project.head(), [FROZEN])


@pytest.mark.slow
def test_a_clean_run_verifies_with_exit_0_and_json_is_the_report(
    project: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = files(tmp_path, [GOOD, FROZEN])
    assert run_cmd(project, f, "--host-role", "ci-box") == 0
    capsys.readouterr()
    assert main(["--repo", str(project.path), "--json", "replay", "verify", "--slice",
                 str(f["slice"]), "--receipt", str(f["receipt"]), "--freeze-report",
                 str(f["freeze"]), "--out", str(f["report"])]) == 0  # fmt: skip
    assert capsys.readouterr().out == f["report"].read_text()
    assert report(f)["status"] == "pass" and report(f)["refusals"] == []


SEES_SEED = """\
import os


def test_seed():
    with open("seen-hash-seed.txt", "w") as f:
        f.write(str(hash("patchlane")))
"""


@pytest.mark.slow
def test_each_run_draws_a_hash_seed_and_hash_seed_reproduces_one(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("tests/test_seed.py", SEES_SEED)
    project.commit("a test that says what its PYTHONHASHSEED is")
    seen = project.path / "seen-hash-seed.txt"
    # What the test writes is ignored: replay run refuses a tree that holds more than HEAD.
    with (project.path / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("seen-hash-seed.txt\n")
    f = files(tmp_path, ["tests/test_seed.py::test_seed"])
    drawn = []
    for _ in range(2):
        assert run_cmd(project, f) == 0
        receipt = json.loads(f["receipt"].read_text())
        assert receipt["seed"] == 4242 and seen.read_text() == hash_under(receipt["hash_seed"])
        drawn.append(receipt["hash_seed"])
    assert drawn[0] != drawn[1] and 4242 not in drawn  # afresh, and never the public seed
    assert run_cmd(project, f, "--hash-seed", str(drawn[0])) == 0  # a person reproducing it
    assert json.loads(f["receipt"].read_text())["hash_seed"] == drawn[0]
    assert seen.read_text() == hash_under(drawn[0])
    assert verify_cmd(project, f) == 0  # nothing is checked against the drawn seed
    assert report(f)["hash_seed"] == drawn[0]
    assert replay(project, "run", "--slice", f["slice"], "--seed", "1", "--hash-seed",
                  str(2**32), "--out", f["receipt"]) == 2  # fmt: skip


@pytest.mark.slow
def test_a_tampered_receipt_is_refused_with_exit_3(project: GitRepo, tmp_path: Path) -> None:
    f = files(tmp_path, [GOOD, BAD])
    run_cmd(project, f)
    value = json.loads(f["receipt"].read_text())
    value["failed_nodeids"], value["passed_nodeids"] = [], [GOOD, BAD]
    value["seed"] = 1
    f["receipt"].write_text(json.dumps(value))
    assert verify_cmd(project, f) == 3
    r = report(f)
    assert (r["status"], r["outcome"]) == ("error", "refused")
    assert any("seed 1" in x for x in r["refusals"])


@pytest.mark.parametrize("data", [b"{", b'{"seed": 1, "seed": 1}', b"[]"])
def test_a_malformed_receipt_is_refused_not_bad_input(
    project: GitRepo, tmp_path: Path, data: bytes
) -> None:
    f = files(tmp_path, [GOOD])
    f["receipt"].write_bytes(data)
    assert verify_cmd(project, f) == 3
    assert report(f)["refusals"][0].startswith(str(f["receipt"]))


@pytest.mark.slow
def test_a_different_head_is_refused(project: GitRepo, tmp_path: Path) -> None:
    first = project.head()
    project.write("README.md", "x\n")
    project.commit("later")
    f = files(tmp_path, [GOOD])
    run_cmd(project, f)
    assert verify_cmd(project, f) == 0
    assert verify_cmd(project, f, "--head", first) == 3
    assert "is not the patch's head" in report(f)["refusals"][0]


@pytest.mark.slow
def test_the_seed_defaults_to_the_maps_and_can_be_given(project: GitRepo, tmp_path: Path) -> None:
    f = files(tmp_path, [GOOD])
    run_cmd(project, f, seed=99)
    assert verify_cmd(project, f) == 3  # the map says 4242
    assert verify_cmd(project, f, "--seed", "99") == 0


def test_without_a_seed_in_the_map_seed_is_required(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("tests/test_x.py", TESTS)
    repo.write("review-map.yml", review_map(seed=None))
    repo.commit("project")
    f = files(tmp_path, [GOOD])
    f["receipt"].write_text("{}")
    assert verify_cmd(repo, f) == 2
    assert "--seed is required" in capsys.readouterr().err


def test_the_seed_receipt_verifies_as_printed_and_its_placeholder_is_refused(
    repo: GitRepo, tmp_path: Path
) -> None:
    node = "tests/test_billing.py::test_invoice_timestamp_order"
    repo.write("review-map.yml", review_map(seed=20260924))
    repo.commit("map")
    f = files(tmp_path, [node], freeze_report(freeze_record(node)))
    f["receipt"].write_bytes(seed_bytes())
    assert verify_cmd(repo, f) == 3
    assert "slice_sha256" in report(f)["refusals"][0]
    digest = hashlib.sha256(f["slice"].read_bytes()).hexdigest().encode()
    f["receipt"].write_bytes(seed_bytes().replace(b"hash-of-replay-slice.txt", digest))
    # Well formed, but the slice's only node was skipped: nothing passed, not evidence.
    assert verify_cmd(repo, f) == 3
    assert report(f)["outcome"] == "no_evidence"
    assert report(f)["skipped_by_freeze"] == [node]


@pytest.mark.slow
def test_signed_runs_verify_with_the_public_key_only(project: GitRepo, tmp_path: Path) -> None:
    project.write("review-map.yml", review_map(require_signature=True))
    project.commit("require signatures")
    private, public = keys(tmp_path)
    _, other = keys(tmp_path, "other")
    f = files(tmp_path, [GOOD])
    assert run_cmd(project, f, "--signing-key", private) == 0
    assert json.loads(f["receipt"].read_text())["signature"]["payloadType"] == signing.PAYLOAD_TYPE
    assert verify_cmd(project, f, "--public-key", public) == 0
    assert report(f)["signature"] == "verified"
    assert verify_cmd(project, f, "--public-key", other) == 3  # another key
    assert verify_cmd(project, f) == 3  # required, but nothing to check it with
    assert run_cmd(project, f) == 0  # unsigned now
    assert verify_cmd(project, f, "--public-key", public) == 3
    assert "not signed" in report(f)["refusals"][0]


@pytest.mark.slow
def test_the_signing_key_can_come_from_the_environment(
    project: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private, public = keys(tmp_path)
    monkeypatch.setenv(signing.KEY_ENV, str(private))
    f = files(tmp_path, [GOOD])
    assert run_cmd(project, f) == 0
    assert verify_cmd(project, f, "--public-key", public) == 0
    assert report(f)["signature"] == "verified"


@pytest.mark.slow
def test_a_bad_signature_is_refused_even_when_not_required(
    project: GitRepo, tmp_path: Path
) -> None:
    private, public = keys(tmp_path)
    f = files(tmp_path, [GOOD, BAD])
    run_cmd(project, f, "--signing-key", private)
    value = json.loads(f["receipt"].read_text())
    value["failed_nodeids"], value["passed_nodeids"] = [], [BAD, GOOD]
    f["receipt"].write_text(json.dumps(value))
    assert verify_cmd(project, f) == 0  # not required and no key: not checked
    assert verify_cmd(project, f, "--public-key", public) == 3


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--slice", "missing.txt", "no such file"),
        ("--freeze-report", "bad.json", "bad.json"),
        ("--signing-key", "bad.pem", "bad.pem"),
        ("--timeout", "0", "--timeout"),
    ],
)
def test_bad_input_to_run_exits_2_on_one_line(
    project: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    value: str,
    message: str,
) -> None:
    f = files(tmp_path, [GOOD])
    (tmp_path / "bad.json").write_text('{"lane": "freeze"}')
    (tmp_path / "bad.pem").write_text("not a key")
    options: dict[str, str | Path] = {"--slice": f["slice"], "--freeze-report": f["freeze"]}
    options[option] = value if option == "--timeout" else tmp_path / value
    argv = [x for pair in options.items() for x in pair]
    assert replay(project, "run", "--seed", "1", "--out", f["receipt"], *argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not f["receipt"].exists()


def test_an_empty_slice_is_not_run(project: GitRepo, tmp_path: Path) -> None:
    f = files(tmp_path, [])
    assert run_cmd(project, f) == 2


@pytest.mark.slow
def test_merge_two_signed_shards_into_a_receipt_that_verifies(
    project: GitRepo, tmp_path: Path
) -> None:
    private, public = keys(tmp_path)
    whole = files(tmp_path, [GOOD, OTHER, BAD, FROZEN])
    shards: list[str | Path] = []
    for name, ids in (("one", [GOOD, FROZEN]), ("two", [OTHER, BAD])):
        d = tmp_path / name
        d.mkdir()
        f = files(d, ids)
        run_cmd(project, f, "--signing-key", private, "--host-role", name)
        shards += ["--shard", f["slice"], f["receipt"]]
    code = replay(
        project, "merge", "--slice", whole["slice"], *shards, "--public-key", public,
        "--signing-key", private, "--out", whole["receipt"],
    )  # fmt: skip
    assert code == 1  # written, and BAD failed
    merged = json.loads(whole["receipt"].read_text())
    assert merged["host_role"] == "one+two"
    assert merged["passed_nodeids"] == sorted([GOOD, OTHER])
    assert verify_cmd(project, whole, "--public-key", public) == 1
    assert report(whole)["failed"] == [BAD]


@pytest.mark.slow
def test_merge_refuses_an_incomplete_partition_with_exit_3(
    project: GitRepo, tmp_path: Path
) -> None:
    whole = files(tmp_path, [GOOD, OTHER])
    d = tmp_path / "one"
    d.mkdir()
    f = files(d, [GOOD])
    run_cmd(project, f)
    code = replay(
        project, "merge", "--slice", whole["slice"], "--shard", f["slice"], f["receipt"],
        "--out", whole["receipt"],
    )  # fmt: skip
    assert code == 3
    assert not whole["receipt"].exists()


def test_the_real_cli_in_a_subprocess(project: GitRepo, tmp_path: Path) -> None:
    f = files(tmp_path, [GOOD])
    f["receipt"].write_text("{}")
    proc = run_patchlane(
        "--repo", project.path, "replay", "verify", "--slice", f["slice"], "--receipt",
        f["receipt"], "--freeze-report", f["freeze"],
    )  # fmt: skip
    assert proc.returncode == 3
    assert stderr_lines(proc) == []
    assert b"receipt refused" in proc.stdout


@pytest.mark.slow
def test_what_the_commands_write_matches_the_shipped_schemas(
    project: GitRepo, tmp_path: Path
) -> None:
    private, public = keys(tmp_path)
    f = files(tmp_path, [GOOD, BAD, FROZEN])
    run_cmd(project, f, "--signing-key", private)
    jsonschema.validate(json.loads(f["receipt"].read_text()), load_schema("receipt"))
    verify_cmd(project, f, "--public-key", public)
    jsonschema.validate(report(f), load_schema("replay-report"))
    f["receipt"].write_text("{}")
    verify_cmd(project, f)
    jsonschema.validate(report(f), load_schema("replay-report"))


@pytest.mark.slow
def test_run_with_a_base_runs_the_patchs_test_files_apart_and_says_so(
    project: GitRepo, tmp_path: Path
) -> None:
    base = project.head()
    project.write("src/limits.py", "LIMIT = 9\n")
    project.write(
        "tests/test_limit.py",
        "import limits\n\n\ndef test_limit():\n    assert limits.LIMIT == 10\n",
    )
    project.write("pytest.ini", "[pytest]\npythonpath = src\n")
    project.commit("the limit")
    project.branch("patch")
    project.checkout("patch")
    project.write("src/limits.py", "LIMIT = 8\n")
    # Puts the old value back at import: beside it, in one process, test_limit would pass.
    project.write(
        "tests/test_zz.py", "import limits\n\nlimits.LIMIT = 10\n\n\ndef test_z():\n    pass\n"
    )
    project.commit("a lower limit")
    f = files(tmp_path, ["tests/test_limit.py::test_limit", "tests/test_zz.py::test_z"])
    merge_base = project.git("rev-parse", "HEAD~1").strip()
    assert run_cmd(project, f, "--base", "HEAD~1") == 1
    receipt = json.loads(f["receipt"].read_text())
    assert receipt["failed_nodeids"] == ["tests/test_limit.py::test_limit"]
    assert receipt["passed_nodeids"] == ["tests/test_zz.py::test_z"]
    assert receipt["split_base"] == merge_base != base
    jsonschema.validate(receipt, load_schema("receipt"))
    # Without --base: one process, and the receipt does not claim a split.
    assert run_cmd(project, f) == 0
    assert "split_base" not in json.loads(f["receipt"].read_text())


def test_run_with_an_unknown_base_is_bad_input(project: GitRepo, tmp_path: Path) -> None:
    f = files(tmp_path, [GOOD])
    assert run_cmd(project, f, "--base", "no-such-ref") == 2


@pytest.mark.parametrize(
    ("path", "change"),
    [
        ("tests/test_x.py", "modified"),  # an uncommitted fix
        ("tests/test_x.py", "staged"),
        ("conftest.py", "untracked"),  # a hook pytest would load from the work tree
        ("src/helper.py", "untracked"),
    ],
)
def test_run_refuses_a_work_tree_that_differs_from_head(
    project: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    path: str,
    change: str,
) -> None:
    # The receipt names HEAD: a tree holding more than HEAD would vouch for an untested commit.
    f = files(tmp_path, [GOOD, BAD])
    project.write(path, "def test_bad():\n    pass\n")
    if change == "staged":
        project.git("add", path)
    assert run_cmd(project, f) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    what = "is untracked" if change == "untracked" else "differs from HEAD"
    assert f"{path} {what}" in err
    assert "commit or stash it" in err and "clean checkout of the head" in err
    assert not f["receipt"].exists()


@pytest.mark.slow
def test_run_in_a_clean_tree_beside_its_evidence_and_ignored_files(
    project: GitRepo, tmp_path: Path
) -> None:
    # The gate's evidence directory, the files given on the command line and what git
    # ignores are not differences from HEAD; the slice runs.
    project.write(".gitignore", "*.log\n")
    project.commit("ignore logs")
    project.write("build.log", "ignored\n")
    evidence = project.path / ".patchlane"
    evidence.mkdir()
    (evidence / "classify.json").write_text("{}\n")
    f = files(evidence, [GOOD, FROZEN])
    assert run_cmd(project, f) == 0
    given = files(tmp_path, [GOOD])
    inside = {"slice": project.path / "slice.txt", "receipt": project.path / "receipt.json"}
    inside["slice"].write_bytes(given["slice"].read_bytes())
    assert run_cmd(project, {**given, **inside}) == 0
    assert json.loads(inside["receipt"].read_text())["passed_nodeids"] == [GOOD]
    assert run_cmd(project, {**given, **inside}) == 0  # its own receipt from before, too


def test_run_never_takes_a_failing_git_status_for_a_clean_tree(
    project: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = files(tmp_path, [GOOD])
    (project.path / ".git" / "index").write_bytes(b"not an index")
    assert run_cmd(project, f) == 2
    assert "git status failed" in capsys.readouterr().err
    assert not f["receipt"].exists()


@pytest.mark.slow
def test_run_on_a_host_bounds_each_test_a_loop_fails_timed_out(
    repo: GitRepo, tmp_path: Path
) -> None:
    import time

    loops = TESTS + "\ndef test_loops():\n    while True:\n        pass\n"
    repo.write("tests/test_x.py", loops)
    repo.write("review-map.yml", review_map())
    repo.commit("a test that loops")
    looping = "tests/test_x.py::test_loops"
    f = files(tmp_path, [GOOD, looping, OTHER])
    begun = time.monotonic()
    assert run_cmd(repo, f, "--test-timeout", "3") == 1
    assert time.monotonic() - begun < 60  # not --timeout's 1,800 s
    receipt = json.loads(f["receipt"].read_text())
    # The looping test and what the stopped run left unjudged: failed, never passed.
    assert looping in receipt["failed_nodeids"] and receipt["passed_nodeids"] == []
    assert repo.head() == receipt["head"]
