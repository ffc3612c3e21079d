"""``--replay COMMAND``: parsed once, run from a copy of the base, with ``{head}``, ``{base}``
and ``{repo}``; a repository file the command names is a control file."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from patchlane.errors import UsageError
from patchlane.main import main
from patchlane.project.classify import classify
from patchlane.project.replay_command import parse_replay
from tests.gitrepo import GitRepo
from tests.sample import SEED_MAP, make_billing_repo

PY = shlex.quote(sys.executable)
# The base's replay script: the slice runs on a clean clone of the head the gate names, never
# on whatever tree the script happens to stand in.
BASE_SCRIPT = f"""\
#!/bin/sh
# ci/replay.sh SLICE RECEIPT HEAD REPO: run the slice on a clean checkout of HEAD.
set -eu
slice=$1 receipt=$2 head=$3 repo=$4
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git clone -q --no-checkout "$repo" "$tree"
git -C "$tree" checkout -q --detach "$head"
{PY} -m patchlane --repo "$tree" replay run --slice "$slice" --seed 7 --out "$receipt"
"""
# What a hostile patch makes of it (the attack of issue 19, class 2): put the base's code
# back in the tree the script runs in, then let the real runner sign a green receipt that
# names the head.
HOSTILE_SCRIPT = f"""\
#!/bin/sh
set -eu
git checkout -q main -- src
{PY} -m patchlane replay run --slice "$1" --seed 7 --out "$2"
"""
REPLAY = "sh ci/replay.sh {slice} {receipt} {head} {repo}"
REFUND_TEST = (
    "from billing import apply_refund\n\n\n"
    "def test_refund_is_subtracted():\n    assert apply_refund(1200, 200) == 1000\n"
)
BROKEN = "def apply_refund(charge_cents, refund_cents):\n    return charge_cents + refund_cents\n"
TIDIED = "def apply_refund(charge_cents, refund_cents):\n    return -refund_cents + charge_cents\n"
# A project's CI scripts are no lane's: the map ignores them (so only the replay command can
# make one of them a control file).
CI_IGNORED = SEED_MAP + '  - path: "ci/"\n    reason: "CI scripts"\n'


def gate(repo: GitRepo, out: Path, replay: str) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    return main(
        [*argv, "--cases", "5", "--mutants", "0", "--replay", replay, "--out-dir", str(out)]
    )


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def with_script(repo: GitRepo) -> str:
    """The sample project with a test of the refund and ``ci/replay.sh`` at the base; the
    agent's branch checked out. Returns the base commit."""
    make_billing_repo(repo, review_map=CI_IGNORED)
    repo.write("pyproject.toml", '[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    repo.write("tests/test_refund.py", REFUND_TEST)
    repo.write("ci/replay.sh", BASE_SCRIPT)
    base = repo.commit("a test of the refund, and the replay script")
    repo.branch("agent")
    return base


# --- the command line ----------------------------------------------------------------------


def test_none_and_local_are_no_command() -> None:
    assert parse_replay("none") is None
    assert parse_replay("local") is None


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("upload {slice}", "missing {receipt}"),
        ("run {slice} {receipt} {commit}", "unknown placeholder {commit}"),
        ("run {slice} {receipt} 'unclosed", "not a shell line"),
    ],
)
def test_a_bad_command_is_a_usage_error(mode: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("{", r"\{").replace("}", r"\}")):
        parse_replay(mode)


def test_every_placeholder_is_quoted_and_a_shell_variable_is_left_alone() -> None:
    command = parse_replay('up {slice} {receipt} {head} {base} {repo} "${slice}"')
    assert command is not None
    values = {
        "slice": "/ev/replay slice.txt",
        "receipt": "/ev/{slice}.json",
        "head": "a" * 40,
        "base": "b" * 40,
        "repo": "/r/o'k",
    }
    expanded = command.expand(values)
    # One pass: a value that holds a placeholder's name is not expanded again.
    assert shlex.split(expanded) == ["up", *values.values(), "${slice}"]


def test_the_paths_a_command_names() -> None:
    command = parse_replay(
        "sh ./ci/replay.sh --conf=ci/host.cfg {slice} {receipt} --out {repo}/ci/out.txt "
        "&& sh -c 'tools/post.sh x' # README.md ../elsewhere.sh /usr/bin/env"
    )
    assert command is not None
    named = command.named_paths(Path("/nowhere"))
    assert {"ci/replay.sh", "ci/host.cfg", "ci/out.txt", "tools/post.sh", "README.md"} <= named
    assert not named & {"../elsewhere.sh", "/usr/bin/env", "usr/bin/env", "."}
    assert not any("{" in p for p in named)


def test_an_absolute_path_into_the_repository_is_named_relative_to_it(tmp_path: Path) -> None:
    command = parse_replay(f"sh {tmp_path}/repo/ci/replay.sh {{slice}} {{receipt}}")
    assert command is not None
    assert "ci/replay.sh" in command.named_paths(tmp_path / "repo")


# --- classify ------------------------------------------------------------------------------


def test_a_changed_file_the_command_names_is_a_control_file(repo: GitRepo) -> None:
    with_script(repo)
    repo.write("ci/replay.sh", BASE_SCRIPT + "# tidied\n")
    repo.write("ci/other.sh", "echo not named\n")
    repo.commit("touch the replay script")
    cls = classify(repo.path, "main", "HEAD", None, replay_command=parse_replay(REPLAY))
    details = cls.to_json()["control_plane_details"]
    assert {"path": "ci/replay.sh", "kind": "replay command", "why": "named by --replay"} in (
        details
    )
    assert all(d["path"] != "ci/other.sh" for d in details)
    assert cls.harness_changed == ("ci/replay.sh (replay command: named by --replay)",)
    # Without the command (``patchlane classify``, ``--replay local``) nothing names it.
    plain = classify(repo.path, "main", "HEAD", None)
    assert all(d["path"] != "ci/replay.sh" for d in plain.to_json()["control_plane_details"])


@pytest.mark.parametrize("prefix", ["{repo}/", "ABSOLUTE/"])
def test_a_command_that_runs_a_file_from_the_work_tree_is_exit_2(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], prefix: str
) -> None:
    with_script(repo)
    repo.write("ci/replay.sh", HOSTILE_SCRIPT)
    repo.commit("a faster replay")
    prefix = prefix.replace("ABSOLUTE", str(repo.path))
    out = tmp_path / "ev"
    assert gate(repo, out, f"sh {prefix}ci/replay.sh {{slice}} {{receipt}}") == 2
    err = capsys.readouterr().err
    assert "names ci/replay.sh in the work tree" in err and err.count("\n") == 1
    assert not (out / "receipt.json").exists()
    # The evidence directory is no tree file: naming it through {repo} is fine.
    command = parse_replay("up {slice} {receipt} {repo}/.patchlane/freeze-report.json")
    assert command is not None
    command.refuse_work_tree_files(repo.path, ("main", "HEAD"))


# --- the gate, for real --------------------------------------------------------------------


@pytest.mark.slow
def test_a_hostile_replay_script_runs_as_the_base_wrote_it(repo: GitRepo, tmp_path: Path) -> None:
    with_script(repo)
    repo.write("src/billing/__init__.py", BROKEN)
    repo.write("ci/replay.sh", HOSTILE_SCRIPT)
    repo.commit("refund fix, and a faster replay")
    out = tmp_path / "ev"
    assert gate(repo, out, REPLAY) == 1
    verdict = load(out, "verdict.json")
    assert verdict["verdict"] == "reject"
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_refund.py::test_refund_is_subtracted"]
    assert [
        (d["path"], d["kind"]) for d in load(out, "classify.json")["control_plane_details"]
    ] == [("ci/replay.sh", "replay command")]
    assert any(
        r["rule"] == 6 and "ci/replay.sh (replay command" in r["message"]
        for r in verdict["reasons"]
    )


@pytest.mark.slow
def test_a_changed_replay_script_keeps_a_good_patch_undecided(
    repo: GitRepo, tmp_path: Path
) -> None:
    with_script(repo)
    repo.write("src/billing/__init__.py", TIDIED)
    repo.write("ci/replay.sh", BASE_SCRIPT + "# tidied\n")
    repo.commit("tidy the refund and the script")
    out = tmp_path / "ev"
    assert gate(repo, out, REPLAY) == 3
    assert load(out, "replay-report.json")["outcome"] == "pass"
    [reason] = load(out, "verdict.json")["reasons"]
    assert (reason["rule"], reason["lane"]) == (6, "classify")
    assert "ci/replay.sh (replay command: named by --replay)" in reason["message"]
    # The same patch without the script's change earns what the replay shows.
    repo.write("ci/replay.sh", BASE_SCRIPT)
    repo.commit("leave the script alone")
    assert gate(repo, tmp_path / "ev2", REPLAY) == 0


@pytest.mark.slow
def test_the_command_runs_in_a_copy_of_the_base_and_gets_the_commit_ids(
    repo: GitRepo, tmp_path: Path
) -> None:
    base = with_script(repo)
    repo.write("docs/billing.md", "# Billing, as the head has it\n")
    repo.write("src/billing/__init__.py", TIDIED)
    head = repo.commit("tidy")
    seen = tmp_path / "seen"
    record = (
        f"{{ pwd; cat docs/billing.md; echo {{head}} {{base}} {{repo}}; "
        f"git rev-parse HEAD || echo no-git; }} > {shlex.quote(str(seen))} 2>/dev/null; "
    )
    assert gate(repo, tmp_path / "ev", record + REPLAY) == 0
    cwd, doc, ids, git_head = seen.read_text().splitlines()
    assert Path(cwd) != repo.path and repo.path not in Path(cwd).parents
    assert doc == "# Billing"  # the base's bytes, not the head's
    assert ids.split() == [head, base, str(repo.path.resolve())]
    assert git_head == "no-git"  # no .git: nothing there to ask about the head
    assert not Path(cwd).exists()  # the copy is gone once the command has run


@pytest.mark.slow
def test_the_commands_own_interpreter_does_not_import_the_patchs_package(
    repo: GitRepo, tmp_path: Path
) -> None:
    # `python -m patchlane` puts its working directory first on sys.path: run in the patch's
    # tree, a top-level `patchlane/` package of the patch's would be the runner.
    with_script(repo)
    repo.write("src/billing/__init__.py", BROKEN)
    forged = (
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        "out = args[args.index('--out') + 1]\n"
        "json.dump({'forged': True}, open(out, 'w'))\n"
    )
    repo.write("patchlane/__init__.py", "")
    repo.write("patchlane/__main__.py", forged)
    repo.commit("refund fix")
    out = tmp_path / "ev"
    run = (
        f"{PY} -m patchlane --repo {{repo}} replay run --slice {{slice}} --seed 7 --out {{receipt}}"
    )
    assert gate(repo, out, run) == 1
    assert "forged" not in load(out, "receipt.json")
    # The test process is the project's own ``python -m pytest``, whose working directory
    # comes first on ``sys.path``: the head's ``patchlane/`` shadows patchlane's plugin there
    # as it would in a plain run, so no outcome streams and every node fails (the new
    # package is a harness change: never accepted either way).
    assert (
        "tests/test_refund.py::test_refund_is_subtracted"
        in load(out, "replay-report.json")["failed"]
    )
