"""The fixture report's per-root ``ok``, which audit rule 4 reads for each record's lock."""

from __future__ import annotations

import jsonschema

from patchlane.errors import LockError
from patchlane.lanes.fixture.lane import check_commit, check_worktree, report_for_lock_error
from patchlane.project.config import parse_review_map
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo
from tests.sample import lock_text

MAP = """\
lanes:
  fixture:
    roots:
      - {path: "fx/a/", lock: "fx/a/LOCK.json"}
      - {path: "fx/b/", lock: "fx/b/LOCK.json"}
"""
A = {"fx/a/one.json": "1\n"}
B = {"fx/b/two.json": "2\n"}


def project(repo: GitRepo) -> None:
    for files, lock in ((A, "fx/a/LOCK.json"), (B, "fx/b/LOCK.json")):
        for rel, text in files.items():
            repo.write(rel, text)
        repo.write(lock, lock_text(files))
    repo.commit("fixtures")


def oks(data: dict[str, object]) -> dict[str, bool]:
    jsonschema.validate(data, load_schema("fixture-report"))
    roots = data["roots"]
    assert isinstance(roots, list)
    return {r["lock"]: r["ok"] for r in roots}


def test_each_root_is_ok_when_clean(repo: GitRepo) -> None:
    project(repo)
    fixture = parse_review_map(MAP, "m").fixture
    assert fixture is not None
    assert oks(check_worktree(repo.path, fixture, use_cache=False).to_json()) == {
        "fx/a/LOCK.json": True,
        "fx/b/LOCK.json": True,
    }


def test_a_changed_missing_or_extra_file_condemns_only_its_root(repo: GitRepo) -> None:
    project(repo)
    fixture = parse_review_map(MAP, "m").fixture
    assert fixture is not None
    repo.write("fx/b/two.json", "22\n")
    assert oks(check_worktree(repo.path, fixture, use_cache=False).to_json()) == {
        "fx/a/LOCK.json": True,
        "fx/b/LOCK.json": False,
    }
    repo.write("fx/b/two.json", "2\n")
    repo.write("fx/a/new.json", "3\n")
    assert (
        oks(check_worktree(repo.path, fixture, use_cache=False).to_json())["fx/a/LOCK.json"]
        is False
    )
    repo.remove("fx/a/new.json")
    repo.remove("fx/a/one.json")
    assert oks(check_worktree(repo.path, fixture, use_cache=False).to_json()) == {
        "fx/a/LOCK.json": False,
        "fx/b/LOCK.json": True,
    }


def test_an_unsafe_path_or_a_lock_problem_condemns_its_root(repo: GitRepo) -> None:
    project(repo)
    fixture = parse_review_map(MAP, "m").fixture
    assert fixture is not None
    base = repo.head()
    repo.branch("patch")
    (repo.path / "fx/a/link").symlink_to("one.json")
    repo.write("fx/b/LOCK.json", lock_text(B).replace('"reason"', '"updated": "x", "reason"'))
    head = repo.commit("symlink in a, lock b rewritten with the old reason")
    changed = frozenset({"fx/a/link", "fx/b/LOCK.json"})
    report = check_commit(repo.path, head, fixture, base_commit=base, changed=changed)
    assert [u.path for u in report.unsafe] == ["fx/a/link"]
    assert [e.lock for e in report.lock_errors] == ["fx/b/LOCK.json"]
    assert oks(report.to_json()) == {"fx/a/LOCK.json": False, "fx/b/LOCK.json": False}


def test_a_lock_that_cannot_be_read_leaves_no_root_to_trust() -> None:
    data = report_for_lock_error(LockError("fx/a/LOCK.json", "bad", 1)).to_json()
    assert data["roots"] == [] and oks(data) == {}
