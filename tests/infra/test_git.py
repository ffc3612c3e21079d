"""The git layer: exact commit ids, merge bases, NUL-separated diffs, tree reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchlane.errors import GitError
from patchlane.infra import git
from tests.gitrepo import (
    GitRepo,
    add_gitlink,
    add_symlink,
    commit_staged,
    git_at,
    move,
)

ODD_NAMES = [
    b"with space.txt",
    b"new\nline.txt",
    b'double"quote.txt',
    b"tab\there.txt",
    b"back\\slash.txt",
    "café/日本語.txt".encode(),
    b"caf\xe9.txt",
    b"dir \xff\xfe/x.txt",
    b"-leading-dash.txt",
    b":(glob)*.txt",
    b" leading and trailing space ",
]


def _forked(repo: GitRepo) -> tuple[str, str]:
    """A base with two files and a patch branch; return (fork commit, patch head)."""
    repo.write("keep.txt", "keep\n")
    repo.write("gone.txt", "gone\n")
    fork = repo.commit("base")
    repo.branch("patch")
    repo.write("keep.txt", "changed\n")
    repo.remove("gone.txt")
    repo.write("new.txt", "new\n")
    return fork, repo.commit("patch")


def test_git_env_drops_the_callers_git_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("GIT_INDEX_FILE", "/elsewhere/index")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "/bin/false")
    env = git.git_env()
    assert "GIT_DIR" not in env and "GIT_INDEX_FILE" not in env
    assert "GIT_EXTERNAL_DIFF" not in env
    assert env["LC_ALL"] == "C"
    assert env["GIT_LITERAL_PATHSPECS"] == "1"


def test_toplevel(repo: GitRepo, tmp_path: Path) -> None:
    (repo.path / "a" / "b").mkdir(parents=True)
    assert git.toplevel(repo.path / "a" / "b") == repo.path.resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError, match="not inside a git repository"):
        git.toplevel(plain)


def test_resolve_commit(repo: GitRepo) -> None:
    first = repo.commit("one")
    second = repo.commit("two")
    repo.git("tag", "-a", "-m", "annotated", "v1", first)
    assert git.resolve_commit(repo.path, "HEAD") == second
    assert git.resolve_commit(repo.path, "main") == second
    assert git.resolve_commit(repo.path, "HEAD~1") == first
    assert git.resolve_commit(repo.path, "v1") == first  # peeled to the commit
    assert git.resolve_commit(repo.path, first[:10]) == first
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    with pytest.raises(GitError):
        git.resolve_commit(repo.path, tree)  # a tree is not a commit


@pytest.mark.parametrize(
    ("ref", "hint"),
    [
        ("origin/feature", "git fetch origin feature"),
        ("upstream/release/2.0", "git fetch upstream release/2.0"),
        ("refs/remotes/origin/topic", "git fetch origin topic"),
        ("feature/x", "git fetch origin feature/x"),  # a branch name with a slash
        ("nope", "git fetch origin nope"),
        ("0123456789abcdef0123456789abcdef01234567", "git fetch origin 0123456789abcdef"),
    ],
)
def test_unknown_ref_says_what_to_fetch(repo: GitRepo, ref: str, hint: str) -> None:
    repo.commit("one")
    repo.git("remote", "add", "origin", "https://example.invalid/x.git")
    repo.git("remote", "add", "upstream", "https://example.invalid/y.git")
    with pytest.raises(GitError) as info:
        git.resolve_commit(repo.path, ref)
    assert f"unknown ref {ref!r}" in str(info.value)
    assert hint in str(info.value)


def test_option_like_ref_is_not_an_option(repo: GitRepo) -> None:
    repo.commit("one")
    with pytest.raises(GitError, match="unknown ref '--all'"):
        git.resolve_commit(repo.path, "--all")


def test_merge_base_of_diverged_branches(repo: GitRepo) -> None:
    fork = repo.commit("fork")
    repo.branch("patch")
    head = repo.commit("patch")
    repo.checkout("main")
    base = repo.commit("main moves on")
    assert git.merge_base(repo.path, base, head) == fork


def test_unrelated_histories_have_no_merge_base(repo: GitRepo) -> None:
    base = repo.commit("main")
    repo.git("checkout", "-q", "--orphan", "other")
    head = repo.commit("unrelated")
    with pytest.raises(GitError, match="unrelated histories"):
        git.merge_base(repo.path, base, head)


def test_shallow_clone_without_merge_base(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit("fork")
    repo.branch("patch")
    repo.commit("patch")
    repo.checkout("main")
    repo.commit("main moves on")
    clone = tmp_path / "clone"
    git_at(
        tmp_path, "clone", "-q", "--depth", "1", "--branch", "main", f"file://{repo.path}", "clone"
    )
    git_at(clone, "fetch", "-q", "--depth", "1", "origin", "patch:refs/remotes/origin/patch")
    assert git.is_shallow(clone)
    base = git.resolve_commit(clone, "origin/main")
    head = git.resolve_commit(clone, "origin/patch")
    with pytest.raises(GitError) as info:
        git.merge_base(clone, base, head)
    assert "shallow" in str(info.value)
    assert "git fetch --unshallow" in str(info.value)
    assert not git.is_shallow(repo.path)


def test_diff_changes_statuses(repo: GitRepo) -> None:
    fork, head = _forked(repo)
    changes = git.diff_changes(repo.path, fork, head)
    assert changes == [
        git.Change("D", "gone.txt", None),
        git.Change("M", "keep.txt", None),
        git.Change("A", "new.txt", None),
    ]


def test_diff_changes_renames_type_changes_and_gitlinks(repo: GitRepo) -> None:
    repo.write("old/name.txt", "same content, long enough to be a rename\n" * 5)
    repo.write("link-me.txt", "a file\n")
    fork = repo.commit("base")
    move(repo, "old/name.txt", "new dir/new name.txt")
    add_symlink(repo, "link-me.txt", "new dir/new name.txt")
    repo.git("add", "-A")
    add_gitlink(repo, "vendor/sub", "c" * 40)
    head = commit_staged(repo, "patch")
    changes = git.diff_changes(repo.path, fork, head)
    assert changes == [
        git.Change("T", "link-me.txt", None),
        git.Change("R", "new dir/new name.txt", "old/name.txt"),
        git.Change("A", "vendor/sub", None),
    ]


def test_diff_changes_reports_odd_names_exactly(repo: GitRepo) -> None:
    repo.write("README", "x\n")
    fork = repo.commit("base")
    for raw in ODD_NAMES:
        repo.write(raw, raw)
    head = repo.commit("odd names")
    changes = git.diff_changes(repo.path, fork, head)
    assert sorted(os.fsencode(c.path) for c in changes) == sorted(ODD_NAMES)
    assert {c.status for c in changes} == {"A"}


def test_rename_of_odd_names_keeps_both_sides_exact(repo: GitRepo) -> None:
    content = "rename me, with enough text to be similar\n" * 5
    repo.write(b"from\nhere \xe9.txt", content)
    fork = repo.commit("base")
    move(repo, os.fsdecode(b"from\nhere \xe9.txt"), os.fsdecode(b'to "there"\t\xff.txt'))
    head = repo.commit("rename")
    (change,) = git.diff_changes(repo.path, fork, head)
    assert change.status == "R"
    assert os.fsencode(change.path) == b'to "there"\t\xff.txt'
    assert change.old_path is not None
    assert os.fsencode(change.old_path) == b"from\nhere \xe9.txt"


def test_diff_ignores_the_callers_git_dir_and_index(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fork, head = _forked(repo)
    other = GitRepo(tmp_path / "other")
    other.write("x", "x")
    other.commit("other")
    monkeypatch.setenv("GIT_DIR", os.fspath(other.path / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", os.fspath(tmp_path / "no-index"))
    assert [c.path for c in git.diff_changes(repo.path, fork, head)] == [
        "gone.txt",
        "keep.txt",
        "new.txt",
    ]
    assert git.toplevel(repo.path) == repo.path.resolve()


def test_tree_reads(repo: GitRepo) -> None:
    repo.write("dir/a.txt", "A\n")
    repo.write(b"dir/caf\xe9 \n.txt", "odd\n")
    repo.write("dir/*.txt", "literal star\n")
    add_symlink(repo, "dir/link", "a.txt")
    repo.git("add", "-A")
    add_gitlink(repo, "dir/sub", "d" * 40)
    commit = commit_staged(repo, "tree")

    entries = {os.fsencode(e.path): e for e in git.ls_tree(repo.path, commit, ["dir/"])}
    assert set(entries) == {
        b"dir/a.txt",
        b"dir/caf\xe9 \n.txt",
        b"dir/*.txt",
        b"dir/link",
        b"dir/sub",
    }
    assert entries[b"dir/link"].mode == git.MODE_SYMLINK
    assert entries[b"dir/sub"].mode == git.MODE_GITLINK
    assert entries[b"dir/sub"].kind == "commit"
    assert entries[b"dir/a.txt"].mode in git.REGULAR_MODES

    # literal pathspecs: "*.txt" names only itself
    assert [e.path for e in git.ls_tree(repo.path, commit, ["dir/*.txt"])] == ["dir/*.txt"]

    found = git.read_file_at(repo.path, commit, os.fsdecode(b"dir/caf\xe9 \n.txt"))
    assert found is not None and found[1] == b"odd\n"
    link = git.read_file_at(repo.path, commit, "dir/link")
    assert link is not None and link[0].mode == git.MODE_SYMLINK and link[1] == b"a.txt"
    sub = git.read_file_at(repo.path, commit, "dir/sub")
    assert sub is not None and sub[1] == b""
    assert git.read_file_at(repo.path, commit, "dir/missing") is None
    assert git.read_file_at(repo.path, commit, "dir/a") is None  # no prefix matching
    assert git.entry_at(repo.path, commit, "dir") is not None

    oids = [entries[b"dir/a.txt"].oid, entries[b"dir/*.txt"].oid, entries[b"dir/a.txt"].oid]
    assert list(git.read_blobs(repo.path, oids)) == [b"A\n", b"literal star\n", b"A\n"]
    with pytest.raises(GitError, match="missing"):
        list(git.read_blobs(repo.path, ["0" * 40]))


def test_read_blobs_streams_many_large_blobs(repo: GitRepo) -> None:
    big = {f"f{i}.bin": bytes([i]) * (300_000 + i) for i in range(8)}
    for name, data in big.items():
        repo.write(name, data)
    commit = repo.commit("big")
    entries = sorted(git.ls_tree(repo.path, commit, []), key=lambda e: e.path)
    blobs = list(git.read_blobs(repo.path, [e.oid for e in entries]))
    assert blobs == [big[e.path] for e in entries]


def test_out_raises_git_error_with_gits_message(repo: GitRepo) -> None:
    with pytest.raises(GitError, match="git cat-file failed"):
        git.out(repo.path, "cat-file", "blob", "0" * 40)


# --- checkout_detached: the replay's run tree ------------------------------------------------


def test_a_detached_checkout_is_a_repository_of_its_own_at_the_commit(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("keep.txt", "base\n")
    repo.commit("base")
    repo.branch("agent")
    for name in ODD_NAMES:
        repo.write(name, name)
    repo.write("src/mod.py", "VALUE = 1\n")
    head = repo.commit("the head")
    repo.checkout("main")
    repo.git("branch", "-D", "agent")  # the head is on no branch: only its objects remain
    refs_before = repo.git("for-each-ref")
    dest = tmp_path / "run"
    git.checkout_detached(repo.path, head, dest)
    assert (dest / ".git").is_dir()
    assert git_at(dest, "rev-parse", "HEAD").strip() == head
    assert git_at(dest, "status", "--porcelain", "--untracked-files=all") == ""
    # The history a plain checkout has, from the repository's own objects (shared, not
    # copied: the new repository holds no object of its own).
    assert git_at(dest, "rev-list", "--count", "HEAD").strip() == "2"
    assert git_at(dest, "symbolic-ref", "-q", "HEAD", check=False) == ""  # detached
    for name in ODD_NAMES:
        assert (dest / os.fsdecode(name)).read_bytes() == name
    assert (dest / "src/mod.py").read_text() == "VALUE = 1\n"
    alternates = (dest / ".git/objects/info/alternates").read_text().strip()
    assert Path(alternates) == (repo.path / ".git/objects").resolve()
    assert git_at(dest, "count-objects").startswith("0 objects")
    assert not list((dest / ".git/objects/pack").glob("*.pack"))
    # Nothing written in the repository.
    assert repo.git("for-each-ref") == refs_before
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_checkout_has_the_users_hooks_and_reflog(repo: GitRepo, tmp_path: Path) -> None:
    # A developer's clone has a hooks directory and a reflog of its moves; a checkout made
    # for the run has them too (bench/redteam h45, h56), and git's own commands there
    # (patchlane's fetch and checkout) ran none of the hooks.
    ran = tmp_path / "hook-ran"
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    for n in range(3):
        repo.write("a.txt", f"{n}\n")
        repo.commit(f"commit {n}")
    repo.branch("feature")
    repo.checkout("feature")
    ran.unlink(missing_ok=True)  # the user's own checkout ran it
    repo.write("a.txt", "head\n")
    head = repo.commit("the head")
    dest = tmp_path / "run"
    git.checkout_detached(repo.path, head, dest, branch=git.current_branch(repo.path))
    assert not ran.exists()
    theirs = repo.git("reflog").splitlines()
    assert len(theirs) >= 5
    assert git_at(dest, "reflog").splitlines() == theirs
    assert (
        git_at(dest, "reflog", "show", "feature").splitlines()
        == repo.git("reflog", "show", "feature").splitlines()
    )
    listing = sorted(p.name for p in (repo.path / ".git/hooks").iterdir())
    assert "post-checkout" in listing
    assert sorted(p.name for p in (dest / ".git/hooks").iterdir()) == listing
    assert os.access(dest / ".git/hooks/post-checkout", os.X_OK)


def test_a_checkout_of_another_commit_adds_its_own_move_to_the_reflog(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("a.txt", "base\n")
    repo.commit("base")
    repo.branch("agent")
    repo.write("a.txt", "head\n")
    head = repo.commit("the head")
    repo.checkout("main")  # the user stands elsewhere: the checkout moved to the head
    dest = tmp_path / "run"
    git.checkout_detached(repo.path, head, dest)
    theirs = repo.git("reflog", "--format=%H %gs").splitlines()
    mine = git_at(dest, "reflog", "--format=%H %gs").splitlines()
    assert mine[1:] == theirs and mine[0].startswith(head)


def test_a_checkout_on_the_users_branch_has_its_history_and_tags(
    repo: GitRepo, tmp_path: Path
) -> None:
    for n in range(3):
        repo.write("a.txt", f"{n}\n")
        repo.commit(f"commit {n}")
    repo.git("tag", "v1.0")
    repo.git("tag", "-a", "-m", "annotated", "v1.1")
    repo.git("remote", "add", "origin", "https://example.invalid/project.git")
    repo.git("update-ref", "refs/remotes/origin/main", "HEAD")
    repo.branch("feature")
    repo.checkout("feature")
    repo.write("a.txt", "head\n")
    head = repo.commit("the head")
    assert git.current_branch(repo.path) == "feature"
    dest = tmp_path / "run"
    git.checkout_detached(repo.path, head, dest, branch=git.current_branch(repo.path))
    assert git_at(dest, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"
    assert git_at(dest, "rev-list", "--count", "HEAD").strip() == "4"
    assert git_at(dest, "describe", "--tags").strip().startswith("v1.1-1-g")
    assert git_at(dest, "log", "--format=%s").splitlines() == [
        "the head", "commit 2", "commit 1", "commit 0",
    ]  # fmt: skip
    assert git_at(dest, "remote", "-v") == repo.git("remote", "-v")
    assert git_at(dest, "branch", "-r").strip() == "origin/main"
    # The branch a plain checkout of a commit would be on: where the user stands, unless
    # another branch's tip is that commit.
    assert git.branch_for(repo.path, head) == "feature"
    assert git.branch_for(repo.path, repo.git("rev-parse", "main").strip()) == "main"
    assert git.branch_for(repo.path, repo.git("rev-parse", "v1.0^{commit}").strip()) == "main"
    repo.git("checkout", "--detach", "HEAD~2")  # no branch's tip
    assert git.current_branch(repo.path) is None
    assert git.branch_for(repo.path, head) == "feature"
    assert git.branch_for(repo.path, repo.head()) is None


def test_a_checkout_of_a_shallow_clone_stops_where_the_clone_does(
    repo: GitRepo, tmp_path: Path
) -> None:
    for n in range(4):
        repo.write("a.txt", f"{n}\n")
        repo.commit(f"commit {n}")
    shallow = tmp_path / "shallow"
    git_at(tmp_path, "clone", "--quiet", "--depth=2", f"file://{repo.path}", str(shallow))
    head = git_at(shallow, "rev-parse", "HEAD").strip()
    dest = tmp_path / "run"
    git.checkout_detached(shallow, head, dest)
    assert git_at(dest, "rev-list", "--count", "HEAD").strip() == "2"
    assert git_at(dest, "log", "--format=%s").splitlines() == ["commit 3", "commit 2"]


def test_entries_materialise_refuses_are_checked_out_as_git_has_them(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("tests/test_a.py", "def test_a():\n    pass\n")
    add_symlink(repo, "tests/out", "../../outside")
    add_symlink(repo, "tests/abs", "/etc/hostname")
    repo.write("pkg/__pycache__/mod.cpython-311.pyc", b"\x00bytecode")
    repo.git("add", "-A")
    add_gitlink(repo, "vendor/sub", "d" * 40)
    head = commit_staged(repo, "what a real checkout has")
    dest = tmp_path / "run"
    git.checkout_detached(repo.path, head, dest)
    assert (dest / "tests/out").readlink() == Path("../../outside")
    assert (dest / "tests/abs").readlink() == Path("/etc/hostname")
    assert (dest / "pkg/__pycache__/mod.cpython-311.pyc").read_bytes() == b"\x00bytecode"
    assert (dest / "vendor/sub").is_dir() and not any((dest / "vendor/sub").iterdir())


def test_the_users_configuration_neither_filters_nor_hooks_the_checkout(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True)
    marker = tmp_path / "hook-ran"
    hook = hooks / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (home / ".gitconfig").write_text(
        f"[core]\n\tautocrlf = true\n\thooksPath = {hooks}\n"
        '[filter "shout"]\n\tsmudge = tr a-z A-Z\n\tclean = cat\n\trequired = true\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    repo.write(".gitattributes", "*.txt filter=shout\n")
    repo.write("a.txt", "abc\n")
    head = repo.commit("a file a configured filter would rewrite")
    dest = tmp_path / "run"
    git.checkout_detached(repo.path, head, dest)
    assert (dest / "a.txt").read_bytes() == b"abc\n"  # no smudge filter, no CRLF
    assert not marker.exists()


def test_a_checkout_of_a_commit_the_repository_lacks_is_a_git_error(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.commit("base")
    with pytest.raises(GitError, match=r"git checkout of deadbeefdead failed: .*not a tree"):
        git.checkout_detached(repo.path, "deadbeef" * 5, tmp_path / "run")
