"""``.gitattributes`` that change what a checkout of a fixture holds (issue 9): the fixture
lane lists each attribute and makes it a review event, in real repositories (no mocks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.config import FixtureLane, parse_review_map
from patchlane.lanes import fixture_attributes
from patchlane.lanes.fixture import FixtureReport, check_commit, check_worktree
from patchlane.lanes.fixture_attributes import MAX_ATTRIBUTE_BYTES
from patchlane.main import main
from tests.gitrepo import GitRepo, add_symlink, commit_staged
from tests.sample import FIXTURES, LOCK, SEED_MAP, lock_text, make_billing_repo

ROOT = "tests/fixtures/billing/"
MIN, MAX = f"{ROOT}invoice_min.json", f"{ROOT}invoice_max.json"
IN_ROOT = f"{ROOT}.gitattributes"
EVENT = (
    "fixture path {path} has checkout attribute {attribute}={value} from .gitattributes: "
    "the bytes a checkout holds may differ from the locked bytes"
)


def lane() -> FixtureLane:
    found = parse_review_map(SEED_MAP, "review-map.yml").fixture
    assert found is not None
    return found


def in_fixture_dir(repo: GitRepo, text: str) -> None:
    """Commit ``text`` as the fixture directory's own .gitattributes, locked with a reason
    (a fixture file like any other: the bytes match, only the attributes are in question)."""
    repo.write(LOCK, lock_text({**FIXTURES, IN_ROOT: text}, "fixtures get attributes"))
    repo.git("add", "-A")
    # Staged last and alone, as a hostile patch can: ``git add`` would otherwise apply a
    # working-tree-encoding to the very files the test stages with it.
    repo.write(IN_ROOT, text)
    repo.git("add", "--", IN_ROOT)
    commit_staged(repo, "attributes for the fixtures")


def check(repo: GitRepo) -> FixtureReport:
    return check_commit(
        repo.path, "HEAD", lane(), base_commit=repo.git("merge-base", "main", "HEAD").strip()
    )


def found(report: FixtureReport) -> set[tuple[str, str, str]]:
    return {(a.path, a.attribute, a.value) for a in report.checkout_attributes}


def event(path: str, attribute: str, value: str) -> str:
    return EVENT.format(path=path, attribute=attribute, value=value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "* text eol=crlf\n",
            {(p, a, v) for p in (MIN, MAX, IN_ROOT) for a, v in (("text", "set"), ("eol", "crlf"))},
        ),
        ("*.json filter=evil\n", {(MIN, "filter", "evil"), (MAX, "filter", "evil")}),
        (
            "*.json working-tree-encoding=UTF-16\n",
            {(MIN, "working-tree-encoding", "UTF-16"), (MAX, "working-tree-encoding", "UTF-16")},
        ),
        ("invoice_min.json ident\n", {(MIN, "ident", "set")}),
        ("invoice_max.json export-ignore\n", {(MAX, "export-ignore", "set")}),
        (
            "*.json export-subst crlf=input\n",
            {
                (p, a, v)
                for p in (MIN, MAX)
                for a, v in (("export-subst", "set"), ("crlf", "input"))
            },
        ),
    ],
)
def test_an_attribute_in_the_fixture_directory_is_listed_and_a_review_event(
    billing: GitRepo, text: str, expected: set[tuple[str, str, str]]
) -> None:
    in_fixture_dir(billing, text)
    report = check(billing)
    assert report.status == "pass"  # the stored bytes do match the (updated) lock
    assert found(report) == expected
    assert all(a.review for a in report.checkout_attributes)
    assert set(report.review_events) == {event(*item) for item in expected}
    data = report.to_json()
    assert data["review_events"] == list(report.review_events)
    assert {tuple(a.values())[:3] for a in data["checkout_attributes"]} == expected
    assert "to review:" in data["reason"] and ".gitattributes" in data["reason"]


def test_one_at_the_repository_root_matching_the_fixtures(billing: GitRepo) -> None:
    billing.write(".gitattributes", "tests/fixtures/** eol=crlf\n")
    billing.commit("normalise line ends")
    report = check(billing)
    assert found(report) == {(MIN, "eol", "crlf"), (MAX, "eol", "crlf")}
    assert report.review_events == (event(MAX, "eol", "crlf"), event(MIN, "eol", "crlf"))


@pytest.mark.parametrize(
    "text",
    [
        "docs/** eol=crlf filter=x\n*.md text\n",  # other paths only
        "*.json -text binary diff=json merge=union\n",  # nothing that changes the bytes
        "*.json !eol !filter -ident -export-ignore\n",  # unspecified, or explicitly unset
    ],
)
def test_attributes_that_leave_fixture_bytes_alone_are_no_event(
    billing: GitRepo, text: str
) -> None:
    billing.write(".gitattributes", text)
    billing.commit("attributes elsewhere")
    report = check(billing)
    assert (report.checkout_attributes, report.review_events) == ((), ())
    assert "checkout_attributes" not in report.to_json()
    assert "review_events" not in report.to_json()


def test_a_directory_between_the_root_and_the_fixtures(billing: GitRepo) -> None:
    billing.write("tests/.gitattributes", "fixtures/billing/invoice_min.json ident\n")
    billing.commit()
    assert found(check(billing)) == {(MIN, "ident", "set")}


def test_what_the_base_already_had_is_listed_but_not_the_patchs_doing(repo: GitRepo) -> None:
    make_billing_repo(repo)
    repo.write(".gitattributes", "tests/fixtures/** eol=crlf\n")
    repo.commit("the project's own, reviewed long ago")
    repo.branch("agent")
    new = '{"charge_cents": 1, "refund_cents": 0}\n'
    repo.write(f"{ROOT}invoice_new.json", new)
    repo.write(LOCK, lock_text({**FIXTURES, f"{ROOT}invoice_new.json": new}, "one more"))
    repo.commit("a new fixture")
    report = check(repo)
    assert len(report.checkout_attributes) == 3
    assert not any(a.review for a in report.checkout_attributes)
    assert report.review_events == ()
    assert [a["review"] for a in report.to_json()["checkout_attributes"]] == [False] * 3
    # The patch changes the file that gives the attributes: every one is its doing.
    repo.write(".gitattributes", "tests/fixtures/** eol=crlf\n*.md text\n")
    repo.commit("touch the attributes")
    report = check(repo)
    assert all(a.review for a in report.checkout_attributes)
    assert len(report.review_events) == 3
    # Without a base, nothing is known to be old: everything is to review.
    alone = check_commit(repo.path, "HEAD~1", lane())
    assert len(alone.review_events) == 3


def test_case_folding_checkouts_are_judged_too(billing: GitRepo) -> None:
    # macOS and Windows clones set core.ignoreCase: this pattern matches there only.
    billing.write(".gitattributes", "TESTS/FIXTURES/** eol=crlf\n")
    billing.commit()
    assert found(check(billing)) == {(MIN, "eol", "crlf"), (MAX, "eol", "crlf")}
    # ...and this later rule unsets it there only: Linux checkouts still convert.
    billing.write(".gitattributes", "tests/fixtures/** eol=crlf\nTESTS/** -text -eol\n")
    billing.commit()
    assert found(check(billing)) == {(MIN, "eol", "crlf"), (MAX, "eol", "crlf")}


def test_a_symlinked_gitattributes_counts_with_its_target_text(billing: GitRepo) -> None:
    add_symlink(billing, ".gitattributes", "* eol=crlf")
    billing.commit()
    assert found(check(billing)) == {(MIN, "eol", "crlf"), (MAX, "eol", "crlf")}


@pytest.mark.parametrize(
    "text",
    [
        b"\x00\xff\xfe garbage \x80\n[attr]macro eol=crlf\n",
        b"* " + b"x" * 5000 + b"=1\n",  # an overlong line git ignores
        b'"unterminated eol=crlf\n!negated text\n*.json eol=\n',
        "*.json working-tree-encoding=\u00e9\u00e9\n".encode(),
    ],
)
def test_a_malformed_gitattributes_never_crashes(billing: GitRepo, text: bytes) -> None:
    billing.write(".gitattributes", text)
    billing.commit()
    report = check(billing)  # git reads it as git reads it; no exception
    assert report.status == "pass"
    assert len(report.review_events) == len(report.checkout_attributes)


def test_too_many_attribute_bytes_are_a_review_event_not_a_crash(billing: GitRepo) -> None:
    billing.write(".gitattributes", b"# padding\n" * (MAX_ATTRIBUTE_BYTES // 10 + 1))
    billing.commit()
    report = check(billing)
    assert report.checkout_attributes == ()
    (only,) = report.review_events
    assert "not evaluated" in only and "may differ from the locked bytes" in only


def test_many_paths_name_the_first_ten_and_count_the_rest(billing: GitRepo) -> None:
    files = {f"{ROOT}case_{i:02}.json": "{}\n" for i in range(15)}
    for rel, text in files.items():
        billing.write(rel, text)
    billing.write(LOCK, lock_text({**FIXTURES, **files}, "many cases"))
    billing.write(".gitattributes", "tests/fixtures/** eol=crlf\n")
    billing.commit()
    report = check(billing)
    assert len(report.checkout_attributes) == 17
    assert len(report.review_events) == fixture_attributes.EVENT_LIMIT + 1
    assert report.review_events[-1].startswith("7 more checkout attribute(s)")


def test_no_gitattributes_runs_no_git_check_attr(
    billing: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("git check-attr ran with no .gitattributes in sight")

    monkeypatch.setattr(fixture_attributes, "_check_attr", refuse)
    billing.write(".gitattributes-not", "* eol=crlf\n")
    billing.commit()
    assert check(billing).review_events == ()
    assert check_worktree(billing.path, lane()).review_events == ()


# --- the work tree and the command ---------------------------------------------------------


def test_the_work_tree_check_reads_the_work_trees_gitattributes(billing: GitRepo) -> None:
    billing.write(".gitattributes", "tests/fixtures/** filter=evil\n")
    billing.write(IN_ROOT, "*.json ident\n")  # under the root: also an extra file, so red
    report = check_worktree(billing.path, lane(), use_cache=False)
    assert found(report) == {
        (MIN, "filter", "evil"),
        (MAX, "filter", "evil"),
        (MIN, "ident", "set"),
        (MAX, "ident", "set"),
        (IN_ROOT, "filter", "evil"),
    }
    assert report.status == "fail" and report.extra == (IN_ROOT,)
    assert event(MIN, "ident", "set") in report.review_events


def test_the_work_tree_check_judges_against_the_base(billing: GitRepo) -> None:
    billing.write(".gitattributes", "tests/fixtures/** eol=crlf\n")
    billing.commit()
    main_commit = billing.git("rev-parse", "main").strip()
    report = check_worktree(billing.path, lane(), base_commit=main_commit)
    assert len(report.review_events) == 2
    report = check_worktree(billing.path, lane(), base_commit=billing.head())
    assert report.review_events == () and len(report.checkout_attributes) == 2


def test_fixture_check_reports_the_events(billing: GitRepo, tmp_path: Path) -> None:
    billing.write(".gitattributes", "tests/fixtures/** eol=crlf\n")
    billing.commit()
    for extra in ([], ["--rev", "HEAD"]):
        out = tmp_path / "fixture-report.json"
        argv = ["--repo", str(billing.path), "-q", "fixture", "check", *extra, "--out", str(out)]
        main(argv)
        data = json.loads(out.read_text())
        assert data["review_events"] == [event(MAX, "eol", "crlf"), event(MIN, "eol", "crlf")]
        assert {a["path"] for a in data["checkout_attributes"]} == {MIN, MAX}


def test_fixture_check_prints_the_events(
    billing: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    billing.write(".gitattributes", "tests/fixtures/** eol=crlf\n")
    billing.commit()
    assert main(["--repo", str(billing.path), "fixture", "check", "--rev", "HEAD"]) == 0
    printed = capsys.readouterr().out
    assert f"  to review: {event(MIN, 'eol', 'crlf')}" in printed


# --- the gate -------------------------------------------------------------------------------


def gate(repo: GitRepo, out: Path) -> dict[str, Any]:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    main([*argv, "--cases", "20", "--replay", "local", "--out-dir", str(out)])
    verdict: dict[str, Any] = json.loads((out / "verdict.json").read_text())
    return verdict


TEST_CHANGE = "def test_invoice_timestamp_order():\n    assert 1 + 1 == 2\n"


def test_the_gate_never_accepts_a_patch_that_gives_fixtures_checkout_attributes(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write("tests/test_billing.py", TEST_CHANGE)
    in_fixture_dir(billing, "*.json eol=crlf\n")
    out = tmp_path / "ev"
    verdict = gate(billing, out)
    fixture = json.loads((out / "fixture-report.json").read_text())
    assert event(MIN, "eol", "crlf") in fixture["review_events"]
    assert verdict["verdict"] in ("undecided", "reject"), verdict
    # Each event reaches the verdict as a rule-6 reason of the fixture lane (the classifier
    # also names the changed .gitattributes as a harness change: a second, separate reason).
    reasons = {(r["rule"], r["lane"], r["message"]) for r in verdict["reasons"]}
    assert (6, "fixture", event(MIN, "eol", "crlf")) in reasons
    assert (6, "fixture", event(MAX, "eol", "crlf")) in reasons


def test_a_harmless_gitattributes_gives_the_verdict_no_fixture_reason(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write("tests/test_billing.py", TEST_CHANGE)
    in_fixture_dir(billing, "*.json diff -text\n")
    out = tmp_path / "ev"
    verdict = gate(billing, out)
    assert "review_events" not in json.loads((out / "fixture-report.json").read_text())
    assert not [r for r in verdict["reasons"] if r["lane"] == "fixture"], verdict
