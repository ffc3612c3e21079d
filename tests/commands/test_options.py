"""``--base`` is optional: every command that takes it defaults to the branch ``init`` names
(``init_layout.default_base``), and says so in ``--help``; without one it is exit 2."""

from __future__ import annotations

import json

import pytest

from tests.gitrepo import GitRepo, make_project, run_patchlane, start_patch, stderr_lines

# The commands whose --base names the revision a patch is judged against.
BASE_COMMANDS = (
    ("gate",),
    ("triage", "HEAD"),
    ("classify",),
    ("freeze", "audit"),
    ("replay", "select", "--out", "slice.txt"),
    ("replay", "map"),
)


def _patched(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "def net(charge, refund):\n    return refund - charge\n")
    repo.commit("patch")


@pytest.mark.parametrize("command", BASE_COMMANDS, ids=" ".join)
def test_help_names_the_default_base(command: tuple[str, ...]) -> None:
    words = [w for w in command if not w.startswith("-") and w not in ("HEAD", "slice.txt")]
    proc = run_patchlane(*words, "--help")
    assert proc.returncode == 0, proc.stderr
    help_text = " ".join(proc.stdout.decode().split())
    assert "default: origin/HEAD's branch" in help_text, help_text


# freeze audit reads its report files before git is asked; the same base_ref decides there.
@pytest.mark.parametrize("command", [c for c in BASE_COMMANDS if c[0] != "freeze"], ids=" ".join)
def test_no_default_branch_is_exit_2_asking_for_base(
    repo: GitRepo, command: tuple[str, ...]
) -> None:
    _patched(repo)
    repo.git("branch", "-m", "main", "trunk")  # no origin/HEAD, main or master
    proc = run_patchlane(*command, cwd=repo.path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert stderr_lines(proc) == [
        "patchlane: error: no --base given and no default branch (origin/HEAD, main or "
        "master): pass --base REF, the branch patches are judged against"
    ]


@pytest.mark.slow
def test_classify_without_base_judges_against_main(repo: GitRepo) -> None:
    _patched(repo)
    proc = run_patchlane("--json", "classify", cwd=repo.path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["base"] == repo.git("rev-parse", "main").strip()
    assert [f["path"] for f in data["files"]] == ["src/billing/core.py"]
    given = run_patchlane("--json", "classify", "--base", "main", cwd=repo.path)
    assert given.stdout == proc.stdout
