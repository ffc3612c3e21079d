"""Audit rule 6: extensions of ``expires``, read from the registry's history in git."""

from __future__ import annotations

from datetime import date

import pytest

from patchlane.errors import GitError
from patchlane.lanes.freeze.history import registry_history
from tests.gitrepo import GitRepo, add_symlink, git_at
from tests.lanes.freeze import project as P


def history_of(repo: GitRepo, *versions: str) -> None:
    """Commit the project with the first registry version, then one commit per version
    after it, all on ``main``; then start the patch that brings the record into play."""
    P.make(repo, versions[0])
    for i, text in enumerate(versions[1:]):
        repo.write(P.REGISTRY, text)
        repo.commit(f"registry change {i + 1}")
    P.patch(repo, P.touch_test())


def rule_6(repo: GitRepo) -> tuple[list[int], str]:
    record = P.only(P.run(repo))
    return record["failed_rules"], record["details"]["6"]


def test_never_extended(repo: GitRepo) -> None:
    history_of(repo, P.registry(P.record()))
    assert rule_6(repo) == ([], "never extended")


def test_an_extension_with_a_new_failure_log_passes(repo: GitRepo) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-30"', log="run-1")),
        P.registry(P.record(expires='"2026-10-08"', log="run-2")),
    )
    assert rule_6(repo) == (
        [],
        "extended 1 time(s) (max_extensions 1), each with a new failure_log",
    )


@pytest.mark.parametrize(
    ("first_log", "second_log"),
    [(None, None), ("run-1", "run-1"), ("run-1", None)],
    ids=["no-log-at-all", "same-log-again", "log-dropped"],
)
def test_an_extension_without_a_new_failure_log_fails(
    repo: GitRepo, first_log: str | None, second_log: str | None
) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-30"', log=first_log)),
        P.registry(P.record(expires='"2026-10-08"', log=second_log)),
    )
    failed, detail = rule_6(repo)
    assert failed == [6]
    extension = repo.git("log", "-1", "--format=%H", "main").strip()
    assert detail == (
        f"extended 2026-09-30 -> 2026-10-08 in {extension[:12]} without a new failure_log"
    )


def test_a_log_added_before_the_extension_is_not_new_at_the_extension(repo: GitRepo) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-30"')),
        P.registry(P.record(expires='"2026-09-30"', log="run-1")),
        P.registry(P.record(expires='"2026-10-08"', log="run-1")),
    )
    assert rule_6(repo)[0] == [6]


def test_more_extensions_than_max_extensions_fail(repo: GitRepo) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-28"', log="run-1")),
        P.registry(P.record(expires='"2026-10-02"', log="run-2")),
        P.registry(P.record(expires='"2026-10-08"', log="run-3")),
    )
    assert rule_6(repo) == ([6], "extended 2 times (max_extensions 1)")


def test_shortening_and_other_edits_are_not_extensions(repo: GitRepo) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-10-08"')),
        P.registry(P.record(expires='"2026-10-01"')),  # shortened
        P.registry(P.record(expires='"2026-10-05"', lock=None)),  # back up, still <= max seen
        P.registry(P.record(expires="2026-10-05", props=("prop_x", P.PROP))),
    )
    history = registry_history(repo.path, repo.git("rev-parse", "main").strip(), P.REGISTRY)
    assert (history.versions, history.extensions) == (4, ())


def test_deleting_and_re_adding_a_record_does_not_reset_its_history(repo: GitRepo) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-30"')),
        P.registry(),
        P.registry(P.record(expires='"2026-10-08"')),
    )
    assert rule_6(repo)[0] == [6]


def test_a_missing_expiry_in_between_does_not_hide_an_extension(repo: GitRepo) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-30"')),
        P.registry(P.record(expires=None)),
        P.registry(P.record(expires='"2026-10-08"')),
    )
    assert rule_6(repo)[0] == [6]


def test_only_the_records_own_id_counts(repo: GitRepo) -> None:
    other = "tests/test_quota.py::test_limit"
    history_of(
        repo,
        P.registry(P.record(), P.record("quota", nodeid=other, expires='"2026-09-30"')),
        P.registry(P.record(), P.record("quota", nodeid=other, expires='"2026-10-08"')),
    )
    report = P.run(repo)
    first, second = (r.to_json() for r in report.records)
    assert first["failed_rules"] == [] and second["failed_rules"] == [5, 6]


def test_history_stops_at_the_base_and_the_patch_cannot_add_to_it(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record(expires='"2026-09-30"')))
    repo.branch("patch")
    repo.write(P.REGISTRY, P.registry(P.record(expires='"2026-10-08"')))
    repo.write(P.TEST_FILE, P.FILES[P.TEST_FILE] + "# touched\n")
    repo.commit("extend in the patch")
    report = P.run(repo)
    record = P.only(report)
    assert record["expires"] == "2026-09-30" and 6 not in record["failed_rules"]
    assert report.changed_by_patch == ("billing-clock-skew",)
    assert report.history_versions == 1


def test_a_side_branch_merged_back_counts_once(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record(expires='"2026-09-30"', log="run-1")))
    repo.branch("side")
    repo.write(P.REGISTRY, P.registry(P.record(expires='"2026-10-08"', log="run-2")))
    repo.commit("extend on a side branch")
    repo.checkout("main")
    repo.write("README.md", "main moves on\n")
    repo.commit("unrelated")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    P.patch(repo, P.touch_test())
    assert rule_6(repo)[0] == []


def test_unparseable_historic_versions_are_skipped_with_a_note(repo: GitRepo) -> None:
    history_of(
        repo,
        "freezes: [\n",
        P.registry(P.record(expires='"2026-09-30"')),
        "not: a registry\n",
        P.registry(P.record(expires='"2026-10-08"', log="run-2")),
    )
    report = P.run(repo)
    assert P.only(report)["failed_rules"] == []
    assert report.history_versions == 2
    assert len(report.notes) == 2
    assert all(n.endswith("version skipped") for n in report.notes)
    assert "YAML syntax error" in report.notes[0]


def test_a_symlink_in_history_is_skipped_with_a_note(repo: GitRepo) -> None:
    P.make(repo, None)
    repo.write("other.yml", P.registry(P.record()))
    add_symlink(repo, P.REGISTRY, "../other.yml")
    repo.commit("link")
    (repo.path / P.REGISTRY).unlink()
    repo.write(P.REGISTRY, P.registry(P.record()))
    repo.commit("regular file")
    history = registry_history(repo.path, repo.head(), P.REGISTRY)
    assert history.versions == 1
    assert history.notes[0].endswith("is not a regular file: version skipped")


def test_a_shallow_clone_that_cuts_the_history_is_an_input_error(repo: GitRepo) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-30"')),
        P.registry(P.record(expires='"2026-10-08"')),
    )
    clone = repo.path.parent / "shallow"
    git_at(repo.path.parent, "clone", "-q", "--depth", "1", "--branch", "main",
           f"file://{repo.path}", str(clone))  # fmt: skip
    base = git_at(clone, "rev-parse", "HEAD").strip()
    with pytest.raises(GitError, match=r"cut by a shallow clone .*\(git fetch --unshallow\)"):
        registry_history(clone, base, P.REGISTRY)


def test_extensions_record_dates_and_commits(repo: GitRepo) -> None:
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-30"')),
        P.registry(P.record(expires='"2026-10-08"', log="run-2")),
    )
    main = repo.git("rev-parse", "main").strip()
    history = registry_history(repo.path, main, P.REGISTRY)
    (ext,) = history.of("billing-clock-skew")
    assert (ext.commit, ext.old, ext.new, ext.new_log) == (
        main,
        date(2026, 9, 30),
        date(2026, 10, 8),
        True,
    )
    assert history.of("nope") == ()


def test_a_shallow_clone_that_holds_the_whole_history_is_fine(repo: GitRepo) -> None:
    repo.write("README.md", "one\n")
    repo.commit("first")
    repo.write("README.md", "two\n")
    repo.commit("second, still without a registry")
    history_of(
        repo,
        P.registry(P.record(expires='"2026-09-30"')),
        P.registry(P.record(expires='"2026-10-08"')),
    )
    clone = repo.path.parent / "shallow"
    git_at(repo.path.parent, "clone", "-q", "--depth", "3", "--branch", "main",
           f"file://{repo.path}", str(clone))  # fmt: skip
    assert git_at(clone, "rev-parse", "--is-shallow-repository").strip() == "true"
    base = git_at(clone, "rev-parse", "HEAD").strip()
    history = registry_history(clone, base, P.REGISTRY)
    assert (history.versions, len(history.extensions)) == (2, 1)
