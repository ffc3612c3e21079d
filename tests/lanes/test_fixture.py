"""The fixture lane on real files and real git repositories (no mocks)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from patchlane.config import FixtureLane, parse_review_map
from patchlane.errors import InputError, LockError, UsageError
from patchlane.lanes import hashing, statcache
from patchlane.lanes.fixture import (
    FixtureReport,
    cache_path,
    check_commit,
    check_worktree,
    report_for_lock_error,
    write_locks,
)
from patchlane.lanes.hashing import canonical_digest
from patchlane.lanes.observe import case_collisions
from patchlane.ui import Output
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
    f"{ROOT}sub/notes.txt": b"plain bytes\n",
}
NOW = datetime(2026, 9, 24, 12, 0, 0, tzinfo=UTC)
T = TypeVar("T")


def lane_from(text: str = MAP) -> FixtureLane:
    lane = parse_review_map(text, "review-map.yml").fixture
    assert lane is not None
    return lane


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lock_json(files: dict[str, bytes], reason: str | None = None) -> str:
    doc: dict[str, Any] = {
        "files": [{"path": p, "sha256": sha(b)} for p, b in sorted(files.items())]
    }
    if reason is not None:
        doc["reason"] = reason
    return json.dumps(doc, indent=2) + "\n"


def populate(
    repo: GitRepo,
    files: dict[str, bytes] = FILES,
    *,
    lock: str = LOCK,
    reason: str | None = "initial",
) -> None:
    for rel, data in files.items():
        repo.write(rel, data)
    repo.write(lock, lock_json(files, reason))


def report_without_timings(report: FixtureReport) -> dict[str, Any]:
    data = report.to_json()
    del data["timings"]
    return data


def returns_within(fn: Callable[[], T], seconds: float = 60.0) -> T:
    """Run ``fn`` in a daemon thread; fail (instead of hanging the suite) if it blocks.

    Not a timing assertion: the limit is generous and only turns a hang into a failure.
    """
    box: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box.append(fn())
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the check blocked"
    if errors:
        raise errors[0]
    return box[0]


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust cache entries for files written before the run (the 2 s window would make
    these tests sleep); the racy rule itself has its own test with the real window."""
    monkeypatch.setattr(statcache, "RACY_NS", 0)


# --- comparison ------------------------------------------------------------------------------


def test_a_tree_equal_to_its_lock_passes(repo: GitRepo) -> None:
    populate(repo)
    report = check_worktree(repo.path, lane_from())
    assert report.status == "pass" and report.ok
    assert report.reason == "3 files under 1 root match their locks"
    assert report.source == "worktree" and report.commit is None
    (root,) = report.roots
    assert root.files == 3 and root.lock == LOCK and root.paths == (ROOT,)
    assert root.lock_sha256 == sha((repo.path / LOCK).read_bytes())
    assert root.lock_reason == "initial" and not root.lock_changed
    assert report.timings.hashed == 3


def test_missing_extra_changed_are_listed_sorted(repo: GitRepo) -> None:
    files = {f"{ROOT}{name}": name.encode() for name in ("z", "b", "m", "a", "y", "c")}
    populate(repo, files)
    for name in ("z", "a"):
        repo.remove(f"{ROOT}{name}")
    for name in ("y", "b"):
        repo.write(f"{ROOT}{name}", b"edited")
    for name in ("x2", "x1"):
        repo.write(f"{ROOT}{name}", b"new")
    report = check_worktree(repo.path, lane_from())
    assert report.status == "fail"
    assert report.missing == (f"{ROOT}a", f"{ROOT}z")
    assert report.changed == (f"{ROOT}b", f"{ROOT}y")
    assert report.extra == (f"{ROOT}x1", f"{ROOT}x2")
    assert report.reason == "2 changed files, 2 missing files, 2 extra files (6 files under 1 root)"


def test_several_roots_each_with_its_lock_and_locks_are_never_hashed(repo: GitRepo) -> None:
    lane = lane_from(
        """\
lanes:
  fixture:
    roots:
      - {path: "fx/", lock: "fx/LOCK.json"}
      - {path: "fx/inner/", lock: "fx/inner/LOCK.json"}
"""
    )
    outer = {"fx/a": b"a", "fx/inner/b": b"b"}  # the outer root also covers fx/inner/
    inner = {"fx/inner/b": b"b"}
    for rel, data in outer.items():
        repo.write(rel, data)
    repo.write("fx/LOCK.json", lock_json(outer))
    repo.write("fx/inner/LOCK.json", lock_json(inner))
    report = check_worktree(repo.path, lane)
    assert report.status == "pass", report.reason
    assert [(r.lock, r.files) for r in report.roots] == [
        ("fx/LOCK.json", 2),
        ("fx/inner/LOCK.json", 1),
    ]
    assert report.reason == "2 files under 2 roots match their locks"

    repo.write("fx/inner/b", b"changed")
    repo.write("fx/inner/c", b"new")
    report = check_worktree(repo.path, lane)
    assert report.changed == ("fx/inner/b",)  # union over roots, listed once
    assert report.extra == ("fx/inner/c",)


def test_several_paths_under_one_lock_including_a_single_file(repo: GitRepo) -> None:
    lane = lane_from(
        """\
lanes:
  fixture:
    paths: ["data/a/", "data/b", "top.json"]
    lock: "locks/fixtures.json"
"""
    )
    files = {"data/a/1": b"1", "data/b/2": b"2", "data/b": b"", "top.json": b"{}"}
    files.pop("data/b")  # data/b is a directory here
    for rel, data in files.items():
        repo.write(rel, data)
    repo.write("data/bb/not-covered", b"x")  # "data/b" does not cover data/bb/
    repo.write("top.json.orig", b"x")
    repo.write("locks/fixtures.json", lock_json(files))
    report = check_worktree(repo.path, lane)
    assert report.status == "pass", report.to_json()
    assert report.roots[0].files == 3
    repo.remove("top.json")
    assert check_worktree(repo.path, lane).missing == ("top.json",)


def test_a_root_that_does_not_exist_makes_every_locked_file_missing(repo: GitRepo) -> None:
    repo.write(LOCK, lock_json(FILES))
    for rel in FILES:
        assert not (repo.path / rel).exists()
    report = check_worktree(repo.path, lane_from())
    assert report.missing == tuple(sorted(FILES))


def test_a_file_where_a_root_directory_should_be_is_just_absent(repo: GitRepo) -> None:
    lane = lane_from(MAP.replace(LOCK, "locks/billing.json"))
    repo.write("tests/fixtures", b"a file, not a directory")
    repo.write("locks/billing.json", lock_json({f"{ROOT}a": b"a"}))
    report = check_worktree(repo.path, lane)
    assert report.missing == (f"{ROOT}a",) and report.unsafe == ()
    repo.write("locks/billing.json", lock_json({}))
    assert check_worktree(repo.path, lane).status == "pass"
    with pytest.raises(LockError, match="no such file"):
        check_worktree(repo.path, lane_from(MAP.replace(LOCK, "tests/fixtures/LOCK.json")))


def test_an_absent_lock_is_bad_input(repo: GitRepo) -> None:
    for rel, data in FILES.items():
        repo.write(rel, data)
    with pytest.raises(LockError, match="no such file"):
        check_worktree(repo.path, lane_from())


def test_a_malformed_lock_raises_and_the_gate_can_turn_it_red(repo: GitRepo) -> None:
    populate(repo)
    repo.write(LOCK, '{"files": [], "oops": 1}')
    with pytest.raises(LockError) as info:
        check_worktree(repo.path, lane_from())
    report = report_for_lock_error(info.value)
    assert report.status == "fail"
    assert report.lock_errors[0].lock == LOCK
    assert (
        report.lock_errors[0].problem
        == "line 1: oops: unknown key (expected one of: files, reason, updated)"
    )
    assert report.reason.startswith("a fixture lock cannot be read safely: ")
    assert report.to_json()["lane"] == "fixture"


# --- canonical JSON ----------------------------------------------------------------------------

CANONICAL_MAP = MAP + "    canonical_json: true\n"


def test_canonical_digest_ignores_key_order_and_whitespace_but_not_values() -> None:
    a = b'{"b": [1, 2, {"y": 1, "x": 2}], "a": "\\u00e9"}'
    b = b'{\n  "a": "\xc3\xa9",\n  "b": [1,2,{"x":2,"y":1}]\n}\n'
    assert canonical_digest(a) == canonical_digest(b)
    assert sha(a) != sha(b)
    assert canonical_digest(a) != canonical_digest(
        b'{"b": [1, 2, {"y": 1, "x": 3}], "a": "\\u00e9"}'
    )
    assert canonical_digest(b"1.0") == canonical_digest(b"1")  # RFC 8785 number form


def test_canonical_root_accepts_reformatted_json_and_catches_changed_values(repo: GitRepo) -> None:
    files = {f"{ROOT}a.json": b'{"x": 1, "y": [true, null]}', f"{ROOT}raw.txt": b"kept raw"}
    for rel, data in files.items():
        repo.write(rel, data)
    write_locks(repo.path, lane_from(CANONICAL_MAP), "canonical", now=NOW)
    locked = json.loads((repo.path / LOCK).read_text())["files"]
    assert {f["path"]: f["sha256"] for f in locked} == {
        f"{ROOT}a.json": canonical_digest(files[f"{ROOT}a.json"]),
        f"{ROOT}raw.txt": sha(b"kept raw"),
    }
    repo.write(f"{ROOT}a.json", b'{\n  "y": [true, null],\n  "x": 1\n}\n')
    assert check_worktree(repo.path, lane_from(CANONICAL_MAP)).status == "pass"
    # The same bytes under a raw root are a change: key order matters there.
    raw_lane = lane_from(MAP)
    assert check_worktree(repo.path, raw_lane).changed == (f"{ROOT}a.json",)
    repo.write(f"{ROOT}a.json", b'{"y": [true, null], "x": 2}')
    assert check_worktree(repo.path, lane_from(CANONICAL_MAP)).changed == (f"{ROOT}a.json",)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b'{"a": NaN}', "NaN is not valid JSON"),
        (b'{"a": 1', "invalid JSON"),
        (b'{"a": "\xff"}', "not UTF-8 (byte 7)"),
        (b'{"a": 9007199254740993}', "RFC 8785 cannot represent it"),
    ],
)
def test_json_that_cannot_be_canonicalised_is_unsafe(
    repo: GitRepo, data: bytes, problem: str
) -> None:
    populate(repo, {f"{ROOT}ok.json": b"{}"})
    repo.write(f"{ROOT}bad.json", data)
    report = check_worktree(repo.path, lane_from(CANONICAL_MAP))
    assert report.status == "fail"
    (unsafe,) = report.unsafe
    assert unsafe.path == f"{ROOT}bad.json"
    assert unsafe.problem.startswith("not canonical JSON (canonical_json is on): ")
    assert problem in unsafe.problem
    assert report.extra == ()  # listed once, as unsafe
    with pytest.raises(InputError, match=r"bad\.json: not canonical JSON"):
        write_locks(repo.path, lane_from(CANONICAL_MAP), "relock")


# --- things that are not regular files ----------------------------------------------------------


def test_a_symlink_in_a_root_is_red_and_its_target_is_never_read(
    repo: GitRepo, tmp_path: Path
) -> None:
    secret = tmp_path / "outside-secret.json"
    secret.write_bytes(b"secret bytes outside the repository")
    fifo = tmp_path / "outside.fifo"
    os.mkfifo(fifo)
    files = dict(FILES)
    files[f"{ROOT}link.json"] = secret.read_bytes()  # the lock expects the target's bytes
    populate(repo, files)
    repo.remove(f"{ROOT}link.json")
    (repo.path / ROOT / "link.json").symlink_to(secret)
    (repo.path / ROOT / "pipe.json").symlink_to(fifo)
    report = returns_within(lambda: check_worktree(repo.path, lane_from(), use_cache=False))
    assert report.status == "fail"
    assert {(u.path, u.problem) for u in report.unsafe} == {
        (f"{ROOT}link.json", "symlink (never followed)"),
        (f"{ROOT}pipe.json", "symlink (never followed)"),
    }
    # Had the target been read, link.json would have matched the lock and been green.
    assert report.timings.hashed == 3
    assert sha(secret.read_bytes()) not in json.dumps(report.to_json())
    assert report.missing == ()  # the locked path is reported as unsafe, not twice


def test_a_symlinked_root_directory_is_red(repo: GitRepo, tmp_path: Path) -> None:
    lane = lane_from(
        """\
lanes:
  fixture:
    paths: ["tests/fixtures/billing/"]
    lock: "locks/billing.json"
"""
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for rel, data in FILES.items():
        target = elsewhere / rel.removeprefix(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    repo.write("locks/billing.json", lock_json(FILES))
    (repo.path / "tests/fixtures").mkdir(parents=True)
    (repo.path / "tests/fixtures/billing").symlink_to(elsewhere)
    report = check_worktree(repo.path, lane)
    assert report.status == "fail"
    assert [(u.path, u.problem) for u in report.unsafe] == [
        ("tests/fixtures/billing", "symlink (never followed)")
    ]
    assert report.timings.hashed == 0
    assert report.missing == tuple(sorted(FILES))


def test_a_symlink_on_the_way_to_a_root_is_red(repo: GitRepo, tmp_path: Path) -> None:
    lane = lane_from(MAP.replace(LOCK, "locks/billing.json"))
    real = tmp_path / "real"
    (real / "billing").mkdir(parents=True)
    (real / "billing" / "a").write_bytes(b"a")
    repo.write("locks/billing.json", lock_json({f"{ROOT}a": b"a"}))
    (repo.path / "tests").mkdir()
    (repo.path / "tests/fixtures").symlink_to(real)
    report = check_worktree(repo.path, lane)
    assert [u.path for u in report.unsafe] == ["tests/fixtures"]
    assert report.status == "fail"


def test_a_lock_behind_a_symlink_is_refused(repo: GitRepo, tmp_path: Path) -> None:
    real = tmp_path / "billing"
    real.mkdir()
    (real / "LOCK.json").write_text(lock_json({}))
    (repo.path / "tests/fixtures").mkdir(parents=True)
    (repo.path / "tests/fixtures/billing").symlink_to(real)
    with pytest.raises(LockError, match="'tests/fixtures/billing' is a symlink"):
        check_worktree(repo.path, lane_from())


def test_a_lock_that_is_a_fifo_is_refused_without_blocking(repo: GitRepo) -> None:
    (repo.path / ROOT).mkdir(parents=True)
    os.mkfifo(repo.path / LOCK)
    with pytest.raises(LockError, match=r"not a regular file \(a FIFO\)"):
        returns_within(lambda: check_worktree(repo.path, lane_from()))


@pytest.fixture
def special_files(repo: GitRepo) -> Iterator[list[str]]:
    populate(repo)
    made = []
    os.mkfifo(repo.path / ROOT / "fifo")
    made.append(f"{ROOT}fifo")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock_path = repo.path / ROOT / "sub" / "sock"
    try:
        sock.bind(os.fspath(sock_path))
    except OSError:  # a path too long for sun_path: bind from inside the directory
        cwd = Path.cwd()
        os.chdir(sock_path.parent)
        try:
            sock.bind("sock")
        finally:
            os.chdir(cwd)
    made.append(f"{ROOT}sub/sock")
    yield made
    sock.close()


def test_fifo_and_socket_are_red_and_never_block(repo: GitRepo, special_files: list[str]) -> None:
    report = returns_within(lambda: check_worktree(repo.path, lane_from(), use_cache=False))
    assert report.status == "fail"
    problems = {u.path: u.problem for u in report.unsafe}
    assert set(problems) == set(special_files)
    assert problems[f"{ROOT}fifo"] == "FIFO: not a regular file, never opened"
    assert problems[f"{ROOT}sub/sock"] == "socket: not a regular file, never opened"
    assert report.extra == () and report.changed == ()
    assert report.timings.hashed == 3
    with pytest.raises(InputError, match="not a regular file, never opened; no lock was written"):
        returns_within(lambda: write_locks(repo.path, lane_from(), "relock"))


def test_a_device_node_is_red_and_never_opened(repo: GitRepo) -> None:
    populate(repo)
    try:
        # /dev/zero's numbers: were it ever read, the read would never reach EOF.
        os.mknod(repo.path / ROOT / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    report = returns_within(lambda: check_worktree(repo.path, lane_from(), use_cache=False))
    assert [(u.path, u.problem) for u in report.unsafe] == [
        (f"{ROOT}zero", "character device: not a regular file, never opened")
    ]
    assert report.status == "fail" and report.timings.hashed == 3 and report.extra == ()
    with pytest.raises(InputError, match=r"zero: character device"):
        write_locks(repo.path, lane_from(), "relock")


def test_a_file_swapped_for_a_fifo_after_listing_is_refused_on_the_descriptor(
    repo: GitRepo,
) -> None:
    os.mkfifo(repo.path / "pipe")
    buf = bytearray(hashing.CHUNK)
    dir_fd = os.open(repo.path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        result = hashing.hash_at(dir_fd, "pipe", False, buf)
        gone = hashing.hash_at(dir_fd, "absent", False, buf)
        (repo.path / "link").symlink_to("pipe")
        link = hashing.hash_at(dir_fd, "link", False, buf)
    finally:
        os.close(dir_fd)
    assert result.problem == "FIFO: not a regular file, never opened" and result.sha256 is None
    assert gone.gone
    assert link.problem == "symlink (never followed)"


def test_large_files_stream_through_the_buffer(repo: GitRepo) -> None:
    big = bytes(range(256)) * (3 * hashing.CHUNK // 256 + 17)
    populate(repo, {f"{ROOT}big.bin": big})
    report = check_worktree(repo.path, lane_from(), use_cache=False)
    assert report.status == "pass"


def test_many_files_are_hashed_by_the_thread_pool_in_batches(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from patchlane.lanes import observe

    monkeypatch.setattr(observe, "DIR_BATCH", 3)  # flush often: fds closed between batches
    monkeypatch.setattr(observe, "default_workers", lambda: 3)
    files = {f"{ROOT}d{i % 7}/e{i % 3}/f{i}": str(i).encode() * (i % 50) for i in range(300)}
    populate(repo, files)
    report = check_worktree(repo.path, lane_from(), use_cache=False)
    assert report.status == "pass" and report.timings.hashed == 300
    repo.write(f"{ROOT}d3/e0/f3", b"x")
    assert check_worktree(repo.path, lane_from(), use_cache=False).changed == (f"{ROOT}d3/e0/f3",)


# --- case collisions ------------------------------------------------------------------------------


def test_paths_equal_but_for_case_are_red(repo: GitRepo) -> None:
    files = {
        f"{ROOT}Invoice.json": b"1",
        f"{ROOT}invoice.json": b"2",
        f"{ROOT}Dir/a": b"a",
        f"{ROOT}dir/b": b"b",
    }
    populate(repo, files)
    report = check_worktree(repo.path, lane_from())
    assert report.status == "fail"
    assert report.case_collisions == (
        (f"{ROOT}Dir", f"{ROOT}dir"),
        (f"{ROOT}Invoice.json", f"{ROOT}invoice.json"),
    )
    assert "2 case collisions" in report.reason
    committed = check_commit(repo.path, repo.commit("both spellings"), lane_from())
    assert committed.case_collisions == report.case_collisions
    with pytest.raises(InputError, match="only in case; no lock was written"):
        write_locks(repo.path, lane_from(), "relock")


def test_case_collisions_include_unicode_normal_forms() -> None:
    assert case_collisions(["a/caf\u00e9", "a/CAFE\u0301"]) == [("a/CAFE\u0301", "a/caf\u00e9")]
    assert case_collisions(["a/b", "a/c", "b/a"]) == []


# --- lock updates (commit mode, as the gate runs it) ---------------------------------------------


@pytest.fixture
def based(repo: GitRepo) -> tuple[GitRepo, str]:
    """A base commit with fixtures and a lock whose reason is 'initial', on a patch branch."""
    repo.write("review-map.yml", MAP)
    populate(repo, reason="initial")
    base = repo.commit("base")
    repo.branch("patch")
    return repo, base


def changed_paths(repo: GitRepo, base: str) -> frozenset[str]:
    out = repo.git("diff", "--name-only", "-z", base, "HEAD")
    return frozenset(p for p in out.split("\0") if p)


def relock(repo: GitRepo, files: dict[str, bytes], reason: str | None) -> str:
    for rel, data in files.items():
        repo.write(rel, data)
    repo.write(LOCK, lock_json(files, reason))
    return repo.commit("relock")


def test_commit_mode_passes_a_clean_commit_and_ignores_the_work_tree(
    based: tuple[GitRepo, str],
) -> None:
    repo, base = based
    for rel in FILES:
        repo.write(rel, b"work tree edits are not the commit")
    repo.write(f"{ROOT}untracked", b"x")
    report = check_commit(repo.path, "HEAD", lane_from())
    assert report.status == "pass", report.reason
    assert report.source == "commit" and report.commit == base
    assert check_worktree(repo.path, lane_from()).status == "fail"


def test_a_changed_lock_without_a_reason_is_red(based: tuple[GitRepo, str]) -> None:
    repo, base = based
    head = relock(repo, {**FILES, f"{ROOT}new.json": b"{}"}, None)
    report = check_commit(
        repo.path, head, lane_from(), base_commit=base, changed=changed_paths(repo, base)
    )
    assert report.status == "fail"
    assert report.lock_errors[0].lock == LOCK
    assert "changed without a 'reason'" in report.lock_errors[0].problem
    assert report.roots[0].lock_changed
    assert report.lock_updates == ()


@pytest.mark.parametrize("reason", ["initial", " initial ", "INITIAL"])
def test_a_changed_lock_keeping_the_old_reason_is_red(
    based: tuple[GitRepo, str], reason: str
) -> None:
    repo, base = based
    head = relock(repo, {**FILES, f"{ROOT}new.json": b"{}"}, reason)
    report = check_commit(
        repo.path, head, lane_from(), base_commit=base, changed=changed_paths(repo, base)
    )
    assert report.status == "fail"
    assert report.lock_errors[0].problem == (
        "changed but keeps the base's reason 'initial': a lock update needs a new one-line reason"
    )


def test_a_changed_lock_with_a_new_reason_is_green_and_shows_it(based: tuple[GitRepo, str]) -> None:
    repo, base = based
    head = relock(repo, {**FILES, f"{ROOT}new.json": b"{}"}, "add an empty invoice fixture")
    report = check_commit(
        repo.path, head, lane_from(), base_commit=base, changed=changed_paths(repo, base)
    )
    assert report.status == "pass", report.reason
    assert [(u.lock, u.reason) for u in report.lock_updates] == [
        (LOCK, "add an empty invoice fixture")
    ]
    assert (
        report.roots[0].lock_changed
        and report.roots[0].lock_reason == "add an empty invoice fixture"
    )
    assert report.reason.endswith(f"; lock update {LOCK}: add an empty invoice fixture")
    # Without the base the same commit is just green: nothing says the lock changed.
    assert check_commit(repo.path, head, lane_from()).lock_updates == ()


def test_the_base_alone_detects_a_changed_lock(based: tuple[GitRepo, str]) -> None:
    repo, base = based
    head = relock(repo, {**FILES, f"{ROOT}new.json": b"{}"}, None)
    report = check_commit(repo.path, head, lane_from(), base_commit=base)
    assert report.status == "fail" and report.roots[0].lock_changed


def test_an_unchanged_lock_needs_no_new_reason(based: tuple[GitRepo, str]) -> None:
    repo, base = based
    repo.write("src/other.py", "x = 1\n")
    head = repo.commit("unrelated")
    report = check_commit(
        repo.path, head, lane_from(), base_commit=base, changed=changed_paths(repo, base)
    )
    assert report.status == "pass" and not report.roots[0].lock_changed


def test_a_deleted_lock_is_red(based: tuple[GitRepo, str]) -> None:
    repo, base = based
    repo.remove(LOCK)
    head = repo.commit("drop the lock")
    report = check_commit(
        repo.path, head, lane_from(), base_commit=base, changed=changed_paths(repo, base)
    )
    assert report.status == "fail"
    assert report.lock_errors[0].problem.startswith("deleted by the patch")
    assert report.extra == ()  # nothing to compare with: only the lock error
    assert report.roots[0].lock_sha256 is None
    # With no base to compare with, an absent lock is bad input.
    with pytest.raises(LockError, match="no such file"):
        check_commit(repo.path, head, lane_from())


def test_worktree_mode_applies_the_reason_rule_to_an_uncommitted_lock_edit(
    based: tuple[GitRepo, str],
) -> None:
    repo, base = based
    repo.write(f"{ROOT}new.json", b"{}")
    repo.write(LOCK, lock_json({**FILES, f"{ROOT}new.json": b"{}"}, "initial"))
    report = check_worktree(repo.path, lane_from(), base_commit=base)
    assert report.status == "fail" and "keeps the base's reason" in report.lock_errors[0].problem
    repo.write(LOCK, lock_json({**FILES, f"{ROOT}new.json": b"{}"}, "new fixture"))
    report = check_worktree(repo.path, lane_from(), base_commit=base)
    assert report.status == "pass" and report.lock_updates[0].reason == "new fixture"


def test_commit_mode_sees_symlinks_and_submodules_as_red(based: tuple[GitRepo, str]) -> None:
    repo, _ = based
    (repo.path / ROOT / "link.json").symlink_to("/etc/hostname")
    repo.git("add", "-A")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{ROOT}vendored")
    repo.git("commit", "-q", "-m", "links")
    head = repo.head()
    report = check_commit(repo.path, head, lane_from())
    assert report.status == "fail"
    assert {u.path: u.problem for u in report.unsafe} == {
        f"{ROOT}link.json": "symlink (never followed)",
        f"{ROOT}vendored": "submodule (gitlink): its bytes are not in this repository",
    }


def test_commit_mode_sees_a_symlinked_root_and_parent(repo: GitRepo) -> None:
    lane = lane_from(MAP.replace(LOCK, "locks/billing.json"))
    repo.write("real/a", b"a")
    repo.write("locks/billing.json", lock_json({f"{ROOT}a": b"a"}))
    (repo.path / "tests/fixtures").mkdir(parents=True)
    (repo.path / "tests/fixtures/billing").symlink_to("../../real")
    head = repo.commit("root is a link")
    report = check_commit(repo.path, head, lane)
    assert [u.path for u in report.unsafe] == ["tests/fixtures/billing"]
    assert report.missing == (f"{ROOT}a",)

    (repo.path / "tests/fixtures/billing").unlink()
    (repo.path / "tests/fixtures").rmdir()
    (repo.path / "tests/fixtures").symlink_to("../real-parent")
    head = repo.commit("parent is a link")
    report = check_commit(repo.path, head, lane)
    assert [u.path for u in report.unsafe] == ["tests/fixtures"]


def test_commit_mode_refuses_a_lock_that_is_a_symlink_or_behind_one(repo: GitRepo) -> None:
    repo.write("elsewhere/LOCK.json", lock_json({}))
    (repo.path / ROOT).mkdir(parents=True)
    (repo.path / LOCK).symlink_to("../../../elsewhere/LOCK.json")
    head = repo.commit("lock is a link")
    with pytest.raises(LockError, match="it is a symlink in commit"):
        check_commit(repo.path, head, lane_from())
    (repo.path / LOCK).unlink()
    (repo.path / ROOT).rmdir()
    (repo.path / ROOT.rstrip("/")).symlink_to("../../elsewhere")
    head = repo.commit("root dir is a link")
    with pytest.raises(LockError, match="'tests/fixtures/billing' is a symlink in commit"):
        check_commit(repo.path, head, lane_from())


def test_commit_and_worktree_give_the_same_report_for_the_same_bytes(
    based: tuple[GitRepo, str],
) -> None:
    repo, base = based
    wt = report_without_timings(check_worktree(repo.path, lane_from()))
    cm = report_without_timings(check_commit(repo.path, base, lane_from()))
    assert {k: v for k, v in wt.items() if k not in ("source", "commit")} == {
        k: v for k, v in cm.items() if k not in ("source", "commit")
    }


def test_non_utf8_file_names_survive_lock_and_check(repo: GitRepo) -> None:
    name = os.fsencode(f"{ROOT}caf") + b"\xe9.bin"
    repo.write(name, b"latin-1 name")
    repo.write(f"{ROOT}plain", b"x")
    write_locks(repo.path, lane_from(), "bytes in names", now=NOW)
    assert b"caf\\udce9.bin" in (repo.path / LOCK).read_bytes()
    assert check_worktree(repo.path, lane_from()).status == "pass"
    head = repo.commit("odd names")
    assert check_commit(repo.path, head, lane_from()).status == "pass"


# --- stat cache -------------------------------------------------------------------------------


def test_the_cache_lives_in_the_git_dir_and_a_second_run_hashes_nothing(
    repo: GitRepo, no_racy_window: None
) -> None:
    populate(repo)
    first = check_worktree(repo.path, lane_from())
    assert (first.timings.hashed, first.timings.cached) == (3, 0)
    path = cache_path(repo.path)
    assert path.is_file() and path.is_relative_to(repo.path / ".git")
    second = check_worktree(repo.path, lane_from())
    assert (second.timings.hashed, second.timings.cached) == (0, 3)
    assert report_without_timings(first) == report_without_timings(second)


def test_the_cache_is_rewritten_only_when_it_changed(repo: GitRepo, no_racy_window: None) -> None:
    populate(repo)
    check_worktree(repo.path, lane_from())
    before = cache_path(repo.path).stat()
    check_worktree(repo.path, lane_from())
    after = cache_path(repo.path).stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
    repo.write(f"{ROOT}new", b"n")
    check_worktree(repo.path, lane_from())
    assert cache_path(repo.path).stat().st_ino != after.st_ino
    assert not [p for p in cache_path(repo.path).parent.iterdir() if p.suffix == ".tmp"]


def test_same_size_edit_with_restored_mtime_is_still_caught(
    repo: GitRepo, no_racy_window: None
) -> None:
    populate(repo)
    target = repo.path / ROOT / "invoice_min.json"
    check_worktree(repo.path, lane_from())
    st = target.stat()
    original = target.read_bytes()
    target.write_bytes(original.replace(b"1200", b"9999"))  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime restored; ctime moves
    assert target.stat().st_size == st.st_size and target.stat().st_mtime_ns == st.st_mtime_ns
    report = check_worktree(repo.path, lane_from())
    assert report.changed == (f"{ROOT}invoice_min.json",)
    assert report.timings.hashed == 1


def read_cache(path: Path) -> dict[str, Any]:
    header, _, body = path.read_bytes().partition(b"\n")
    assert header.decode() == sha(body)  # the first line is the checksum of the rest
    doc: dict[str, Any] = json.loads(body)
    return doc


def write_cache(path: Path, body: bytes, *, checksum: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((sha(body).encode() if checksum else b"0" * 64) + b"\n" + body)


def test_racy_entries_are_rehashed(repo: GitRepo) -> None:
    populate(repo)  # written just now: inside the 2 s window of the cache written next
    check_worktree(repo.path, lane_from())
    again = check_worktree(repo.path, lane_from())
    assert again.timings.hashed == 3 and again.timings.cached == 0
    doc = read_cache(cache_path(repo.path))
    assert doc["version"] == 1 and len(doc["entries"]) == 3


@pytest.mark.parametrize(
    ("body", "checksum"),
    [
        (b"not json", True),
        (b"\xff\xfe", True),
        (b'{"version": 1, "written_ns": 99999999999999999999, "entries": [["x"]]}', True),
        (b'{"version": 1, "written_ns": 1, "entries": [[1, false, 1, 1, 1, 1, 1, 1, "x"]]}', True),
        (b'{"version": 2, "written_ns": 1, "entries": []}', True),
        (b'{"version": 1, "written_ns": true, "entries": []}', True),
        (b"[]", True),
        (b'{"version": 1, "written_ns": 1, "entries": []}', False),
    ],
)
def test_a_corrupt_cache_is_ignored(
    repo: GitRepo, no_racy_window: None, body: bytes, checksum: bool
) -> None:
    populate(repo)
    path = cache_path(repo.path)
    write_cache(path, body, checksum=checksum)
    report = check_worktree(repo.path, lane_from())
    assert report.status == "pass" and report.timings.hashed == 3
    assert read_cache(path)["version"] == 1  # replaced by a good one


def test_a_cache_edited_without_its_checksum_is_dropped_whole(
    repo: GitRepo, no_racy_window: None
) -> None:
    populate(repo)
    check_worktree(repo.path, lane_from())
    path = cache_path(repo.path)
    doc = read_cache(path)
    for row in doc["entries"]:
        row[-1] = "0" * 64  # stat still matches: only the checksum gives it away
    write_cache(path, json.dumps(doc).encode(), checksum=False)
    report = check_worktree(repo.path, lane_from())
    assert report.status == "pass" and report.timings.hashed == 3


def test_a_cache_entry_with_a_stale_stat_is_not_trusted(
    repo: GitRepo, no_racy_window: None
) -> None:
    populate(repo)
    check_worktree(repo.path, lane_from())
    path = cache_path(repo.path)
    doc = read_cache(path)
    for row in doc["entries"]:
        row[-1] = "0" * 64
        row[4] += 1  # size no longer matches the file
    write_cache(path, json.dumps(doc).encode())
    report = check_worktree(repo.path, lane_from())
    assert report.status == "pass" and report.timings.hashed == 3


def test_the_cache_keeps_raw_and_canonical_hashes_apart(
    repo: GitRepo, no_racy_window: None
) -> None:
    data = b'{"b": 1, "a": 2}'
    repo.write(f"{ROOT}a.json", data)
    repo.write(
        LOCK, json.dumps({"files": [{"path": f"{ROOT}a.json", "sha256": canonical_digest(data)}]})
    )
    assert check_worktree(repo.path, lane_from(CANONICAL_MAP)).status == "pass"
    # The raw lane must not be answered from the canonical entry of the same file.
    raw = check_worktree(repo.path, lane_from(MAP))
    assert raw.changed == (f"{ROOT}a.json",) and raw.timings.hashed == 1


def test_a_cache_that_cannot_be_written_is_not_an_error(repo: GitRepo) -> None:
    populate(repo)
    blocker = cache_path(repo.path).parent
    blocker.write_bytes(b"a file where the cache directory should be")
    assert check_worktree(repo.path, lane_from()).status == "pass"
    assert blocker.read_bytes() == b"a file where the cache directory should be"


def test_progress_lines_name_the_count(capsys: pytest.CaptureFixture[str]) -> None:
    progress = hashing.Progress(Output(verbose=True), "fixture", interval=0.0)
    for _ in range(3):
        progress.add()
    progress.poll()
    progress.finish()
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "patchlane: fixture: hashed 3 files so far..."
    assert err[1].startswith("patchlane: fixture: hashed 3 files in ")
    quiet = hashing.Progress(Output(quiet=True), "fixture", interval=0.0)
    quiet.poll()
    quiet.finish()
    assert capsys.readouterr().err == ""


def test_no_cache_neither_reads_nor_writes_it(repo: GitRepo, no_racy_window: None) -> None:
    populate(repo)
    report = check_worktree(repo.path, lane_from(), use_cache=False)
    assert report.timings.cached == 0
    assert not cache_path(repo.path).exists()
    check_worktree(repo.path, lane_from())
    assert check_worktree(repo.path, lane_from(), use_cache=False).timings.hashed == 3


# --- determinism and the report shape ----------------------------------------------------------


def test_two_runs_give_identical_reports_but_for_timings(repo: GitRepo) -> None:
    populate(repo)
    repo.write(f"{ROOT}extra", b"e")
    repo.write(f"{ROOT}invoice_max.json", b"{}")
    os.mkfifo(repo.path / ROOT / "fifo")
    one = check_worktree(repo.path, lane_from(), use_cache=False).to_json()
    two = check_worktree(repo.path, lane_from()).to_json()
    assert list(one) == [
        "lane", "status", "reason", "source", "commit", "roots", "missing", "extra", "changed",
        "unsafe", "case_collisions", "lock_errors", "lock_updates", "timings",
    ]  # fmt: skip
    assert list(one["roots"][0]) == [
        "paths", "lock", "canonical_json", "files", "lock_sha256", "lock_changed", "lock_reason",
        "ok",
    ]  # fmt: skip
    assert set(one["timings"]) == {"seconds", "hashed", "cached"}
    del one["timings"], two["timings"]
    assert json.dumps(one) == json.dumps(two)


def test_the_gate_can_relabel_a_report() -> None:
    report = report_for_lock_error(LockError(LOCK, "bad", 3))
    relabelled = dataclasses.replace(report, status="not_applicable", reason="untouched")
    assert relabelled.to_json()["status"] == "not_applicable"
    assert relabelled.lock_errors == report.lock_errors
    assert report.lock_errors[0].problem == "line 3: bad"


# --- writing locks ---------------------------------------------------------------------------


def test_write_locks_writes_sorted_indented_atomic_locks(repo: GitRepo) -> None:
    for rel, data in FILES.items():
        repo.write(rel, data)
    written = write_locks(repo.path, lane_from(), "first lock", now=NOW)
    assert written == [(LOCK, 3)]
    text = (repo.path / LOCK).read_text()
    assert (
        text
        == json.dumps(
            {
                "reason": "first lock",
                "updated": "2026-09-24T12:00:00Z",
                "files": [{"path": p, "sha256": sha(FILES[p])} for p in sorted(FILES)],
            },
            indent=2,
        )
        + "\n"
    )
    assert sorted(p.name for p in (repo.path / ROOT).iterdir()) == [
        "LOCK.json",
        "invoice_max.json",
        "invoice_min.json",
        "sub",
    ]
    assert check_worktree(repo.path, lane_from()).status == "pass"


def test_write_locks_only_one_root(repo: GitRepo) -> None:
    lane = lane_from(
        """\
lanes:
  fixture:
    roots:
      - {path: "a/", lock: "a/LOCK.json"}
      - {path: "b/", lock: "b/LOCK.json"}
"""
    )
    repo.write("a/1", b"1")
    repo.write("b/2", b"2")
    os.mkfifo(repo.path / "a" / "fifo")  # only root a/ is unsafe
    assert write_locks(repo.path, lane, "b only", only="b/LOCK.json", now=NOW) == [
        ("b/LOCK.json", 1)
    ]
    assert not (repo.path / "a/LOCK.json").exists()
    with pytest.raises(UsageError, match="no fixture root has this lock"):
        write_locks(repo.path, lane, "x", only="c/LOCK.json")


@pytest.mark.parametrize("reason", ["", "   ", "two\nlines", "cr\rlf"])
def test_write_locks_requires_a_one_line_reason(repo: GitRepo, reason: str) -> None:
    populate(repo)
    before = (repo.path / LOCK).read_bytes()
    with pytest.raises(UsageError, match="--reason must"):
        write_locks(repo.path, lane_from(), reason)
    assert (repo.path / LOCK).read_bytes() == before


def test_write_locks_refuses_a_symlink_naming_it(repo: GitRepo) -> None:
    populate(repo)
    before = (repo.path / LOCK).read_bytes()
    (repo.path / ROOT / "host").symlink_to("/etc/hostname")
    with pytest.raises(InputError) as info:
        write_locks(repo.path, lane_from(), "relock")
    assert str(info.value) == f"{ROOT}host: symlink (never followed); no lock was written"
    assert (repo.path / LOCK).read_bytes() == before


def test_write_locks_refuses_a_file_name_a_lock_could_not_hold(repo: GitRepo) -> None:
    repo.write(f"{ROOT}back\\slash", b"x")
    with pytest.raises(InputError, match=r"cannot be listed in a lock \(backslash"):
        write_locks(repo.path, lane_from(), "relock")
