"""Identical candidates: the same head commit is one patch, gated once; one tree under two
commits is two (a test can read the commit's message)."""

from __future__ import annotations

from patchlane.infra import git
from patchlane.inputs.patchfile import apply_patch
from patchlane.triage.batch import identical, patch_key, shared_row
from patchlane.triage.candidates import Candidate
from patchlane.triage.summary import Row, to_jsonl, to_markdown
from tests.gitrepo import GitRepo

DIFF = b"""\
diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -1 +1 @@
-X = 1
+X = 2
"""


def test_the_first_of_each_key_is_gated_and_the_others_name_it() -> None:
    keys = [("a", "c1"), ("b", "c2"), ("c", "c1"), ("d", "c3")]
    assert identical(keys) == {"c": "a"}


def test_the_same_diff_under_two_names_is_one_key_and_one_tree_under_two_commits_is_not(
    repo: GitRepo,
) -> None:
    repo.write("src/app.py", "X = 1\n")
    base = repo.commit("base")
    one = apply_patch(repo.path, base, DIFF, "one.diff")
    again = apply_patch(repo.path, base, DIFF, "again.diff")
    # The same change spelled otherwise, and as a branch with a message of its own: the
    # same tree, other commits, which a test of the suite can tell apart (git log).
    two = apply_patch(repo.path, base, DIFF.replace(b"@@ -1 +1 @@", b"@@ -1,1 +1,1 @@"), "two")
    repo.branch("agent")
    repo.write("src/app.py", "X = 2\n")
    ref = repo.commit("wip: agent")
    tree = {git.out(repo.path, "rev-parse", f"{h}^{{tree}}") for h in (one, two, ref)}
    assert len(tree) == 1
    keys = {h: patch_key(repo.path, h) for h in (one, again, two, ref)}
    assert keys[one] == keys[again] == one
    assert len({keys[one], keys[two], keys[ref]}) == 3


def test_a_shared_row_is_the_candidate_s_own_with_the_gate_s_verdict_and_evidence() -> None:
    gated = Row(
        name="agent-a",
        source="a.diff",
        kind="patch",
        head="1" * 40,
        verdict="reject",
        exit_code=1,
        reason="property: property red",
        slice_count=None,
        suite_size=None,
        seconds=12.0,
        evidence="agent-a",
    )
    copy = shared_row(gated, Candidate("agent-b", "b.diff", patch=b"x"), "2" * 40, 0.25)
    assert copy.to_json() == {
        **gated.to_json(),
        "name": "agent-b",
        "source": "b.diff",
        "head": "2" * 40,
        "seconds": 0.25,
        "same_as": "agent-a",
    }
    assert '"same_as": null' in to_jsonl([gated])
    table = to_markdown([gated, copy])
    assert "| [agent-b](agent-a/) (the same patch as agent-a: one gate) | reject |" in table
    assert "were gated once" in table
