"""Materialising a commit: exact bytes from git objects, and symlinks kept only inside the tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.infra.tree import MAX_LINK_HOPS, Materialised, materialise
from tests.gitrepo import GitRepo, add_gitlink, add_symlink, commit_staged


def _materialise(repo: GitRepo, tmp_path: Path, paths: tuple[str, ...] = ()) -> Materialised:
    return materialise(repo.path, repo.head(), tmp_path / "tree", paths)


def _skipped(result: Materialised) -> dict[str, str]:
    return dict(result.skipped)


def _raw_link(repo: GitRepo, rel: str, target: bytes) -> None:
    """Stage a symlink entry whose target bytes ``os.symlink`` could not make (a NUL)."""
    oid = repo.git("hash-object", "-w", "--stdin", stdin=target).strip()
    repo.git("update-index", "--add", "--cacheinfo", f"120000,{oid},{rel}")


def test_regular_files_are_written_byte_for_byte_with_their_mode(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("a/b.txt", b"x\r\ny\x00")
    (repo.write("run.sh", "#!/bin/sh\n")).chmod(0o755)
    repo.commit()
    # Attributes a checkout or an archive would apply; the blobs are written as stored.
    repo.write(".gitattributes", "*.txt text eol=lf export-ignore\n")
    repo.git("add", ".gitattributes")
    commit_staged(repo)
    result = _materialise(repo, tmp_path)
    assert (result.root / "a/b.txt").read_bytes() == b"x\r\ny\x00"
    assert os.access(result.root / "run.sh", os.X_OK)
    assert (result.files, result.skipped, result.links) == (3, (), ())


def test_an_in_tree_file_link_is_kept_and_readable(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("shared/data.json", '{"a": 1}\n')
    add_symlink(repo, "tests/fixtures/data.json", "../../shared/data.json")
    add_symlink(repo, "same_dir.json", "shared/./data.json")
    repo.commit()
    result = _materialise(repo, tmp_path)
    link = result.root / "tests/fixtures/data.json"
    assert link.is_symlink()
    assert str(link.readlink()) == "../../shared/data.json"
    assert link.read_text() == '{"a": 1}\n'
    # Pointed straight at the file it resolves to: the stored "./" detour is gone.
    assert str((result.root / "same_dir.json").readlink()) == "shared/data.json"
    assert result.links == ("same_dir.json", "tests/fixtures/data.json")
    assert (result.files, result.skipped) == (1, ())


def test_an_in_tree_directory_link_is_kept(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("lib/impl/core.py", "VALUE = 1\n")
    add_symlink(repo, "src/core", "../lib/impl")
    repo.commit()
    result = _materialise(repo, tmp_path)
    link = result.root / "src/core"
    assert link.is_symlink() and link.is_dir()
    assert (link / "core.py").read_text() == "VALUE = 1\n"
    assert result.links == ("src/core",)


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("../outside.txt", "leaves the repository"),
        ("../../../../../../../../etc/passwd", "leaves the repository"),
        ("sub/../../../x", "leaves the repository"),
        ("/etc/passwd", "absolute path"),
    ],
)
def test_a_link_out_of_the_repository_is_dropped(
    repo: GitRepo, tmp_path: Path, target: str, why: str
) -> None:
    (repo.path.parent / "outside.txt").write_text("secret\n")
    repo.write("keep.txt", "kept\n")
    add_symlink(repo, "link", target)
    repo.commit()
    result = _materialise(repo, tmp_path)
    assert why in _skipped(result)["link"]
    assert not os.path.lexists(result.root / "link")
    assert (result.root / "keep.txt").read_text() == "kept\n"
    assert result.links == ()


def test_a_chain_of_links_is_followed_link_by_link(repo: GitRepo, tmp_path: Path) -> None:
    # Each link's target is read from that link's own directory, as the kernel does:
    # "a/hop" -> "../b/dir" leads to b/dir, where "../c.txt" means b/c.txt, not a/c.txt.
    repo.write("b/c.txt", "c\n")
    repo.write("b/dir/x", "")
    add_symlink(repo, "a/hop", "../b/dir")
    add_symlink(repo, "start", "a/hop/../c.txt")
    # A chain that ends outside: a/out -> ../escape -> .. (the root's parent).
    add_symlink(repo, "escape", "..")
    add_symlink(repo, "a/out", "../escape/repo/b/c.txt")
    # Through an absolute link.
    add_symlink(repo, "abs", "/tmp")
    add_symlink(repo, "via_abs", "abs/x")
    repo.commit()
    result = _materialise(repo, tmp_path)
    assert (result.root / "start").read_text() == "c\n"
    assert str((result.root / "start").readlink()) == "b/c.txt"
    skipped = _skipped(result)
    assert skipped["a/out"] == "symlink target leaves the repository (through escape)"
    assert skipped["escape"] == "symlink target leaves the repository"
    assert skipped["via_abs"] == "symlink to an absolute path leaves the repository (through abs)"
    assert set(result.links) == {"a/hop", "start"}


def test_link_cycles_are_dropped(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("f", "")
    add_symlink(repo, "one", "two")
    add_symlink(repo, "two", "one")
    add_symlink(repo, "self", "self")
    add_symlink(repo, "into_cycle", "one/x")
    # A long chain that ends well: exactly the kernel's bound of links is followed.
    add_symlink(repo, f"c{MAX_LINK_HOPS}", "f")
    for i in range(MAX_LINK_HOPS - 1, 0, -1):
        add_symlink(repo, f"c{i}", f"c{i + 1}")
    add_symlink(repo, "c0", "c1")  # one link too many
    repo.commit()
    result = _materialise(repo, tmp_path)
    skipped = _skipped(result)
    loop = f"symlink loop (more than {MAX_LINK_HOPS} links to follow)"
    for rel in ("one", "two", "self", "into_cycle", "c0"):
        assert skipped[rel] == loop, rel
    assert (result.root / "c1").read_text() == ""
    assert str((result.root / "c1").readlink()) == "f"


def test_directory_links_that_lead_back_to_themselves_are_dropped(
    repo: GitRepo, tmp_path: Path
) -> None:
    # Each resolves fine, but a walker that follows directory links (pytest's collection
    # does) would never end: up to the root, up to its own parent, or round two links.
    repo.write("pkg/mod.py", "")
    repo.write("x/f", "")
    repo.write("y/f", "")
    add_symlink(repo, "pkg/root", "..")
    add_symlink(repo, "pkg/sub/parent", "..")
    add_symlink(repo, "x/to_y", "../y")
    add_symlink(repo, "y/to_x", "../x")
    add_symlink(repo, "pkg/fine", "../x")  # x loops with y, but pkg/fine is not on the loop
    repo.commit()
    result = _materialise(repo, tmp_path)
    skipped = _skipped(result)
    assert skipped["pkg/root"] == (
        "symlink to the directory .: following it leads back to it (a directory loop)"
    )
    for rel in ("pkg/sub/parent", "x/to_y", "y/to_x"):
        assert "(a directory loop)" in skipped[rel], rel
    assert result.links == ("pkg/fine",)
    walked = sorted(
        (Path(d) / f).relative_to(result.root).as_posix()
        for d, _, files in os.walk(result.root, followlinks=True)
        for f in files
    )
    assert walked == ["pkg/fine/f", "pkg/mod.py", "x/f", "y/f"]


def test_a_dangling_link_is_dropped(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("src/shop.py", "")
    add_symlink(repo, "tests/gone.py", "../src/moved.py")
    add_symlink(repo, "through_a_file", "src/shop.py/x")
    add_symlink(repo, "to_submodule", "vendor/lib")
    repo.git("add", "-A")
    add_gitlink(repo, "vendor/lib")
    commit_staged(repo)
    result = _materialise(repo, tmp_path)
    skipped = _skipped(result)
    assert (
        skipped["tests/gone.py"] == "symlink to src/moved.py, which is not in the materialised tree"
    )
    assert "not in the materialised tree" in skipped["through_a_file"]
    assert "not in the materialised tree" in skipped["to_submodule"]
    assert skipped["vendor/lib"] == "submodule (not materialised)"
    assert result.links == ()


def test_targets_that_are_not_a_path_are_dropped(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a", "")
    repo.git("add", "a")
    _raw_link(repo, "nul", b"a\x00b")
    _raw_link(repo, "latin1", b"caf\xe9")
    _raw_link(repo, "empty", b"")
    _raw_link(repo, "long", b"a/" * 3000)
    _raw_link(repo, "via_bad", b"latin1/x")
    commit_staged(repo)
    result = _materialise(repo, tmp_path)
    assert _skipped(result) == {
        "nul": "symlink target contains a NUL byte",
        "latin1": "symlink target is not UTF-8",
        "empty": "empty symlink target",
        "long": "symlink target longer than 4095 bytes",
        "via_bad": "symlink target is not UTF-8 (through latin1)",
    }
    assert sorted(p.name for p in result.root.iterdir()) == ["a"]


def test_a_crafted_tree_with_a_link_and_a_directory_of_one_name(
    repo: GitRepo, tmp_path: Path
) -> None:
    # git fsck would refuse it, but git mktree writes it: "a" is a link to x and a
    # directory holding a/f. The file is written; the link is not created over it.
    blob = repo.git("hash-object", "-w", "--stdin", stdin=b"hi\n").strip()
    link = repo.git("hash-object", "-w", "--stdin", stdin=b"x").strip()
    sub = repo.git("mktree", stdin=f"100644 blob {blob}\tf\n".encode()).strip()
    listing = f"120000 blob {link}\ta\n040000 tree {sub}\ta\n100644 blob {blob}\tx\n"
    tree = repo.git("mktree", stdin=listing.encode()).strip()
    commit = repo.git("commit-tree", tree, "-m", "crafted").strip()
    result = materialise(repo.path, commit, tmp_path / "tree")
    assert not (result.root / "a").is_symlink()
    assert (result.root / "a/f").read_text() == "hi\n"
    assert _skipped(result) == {
        "a": "symlink where the commit also has another entry (not materialised)"
    }


def test_with_paths_a_link_to_a_file_outside_them_is_a_copy(repo: GitRepo, tmp_path: Path) -> None:
    # The property lane's base tree holds only the property packages: a property module
    # that links elsewhere must still carry the base's bytes, not dangle.
    repo.write("shared/props.py", "BASE = True\n")
    repo.write("shared/more/x.py", "")
    repo.write("checks/helper.py", "H = 1\n")
    add_symlink(repo, "checks/props.py", "../shared/props.py")
    add_symlink(repo, "checks/alias.py", "helper.py")
    add_symlink(repo, "checks/more", "../shared/more")
    repo.commit()
    result = _materialise(repo, tmp_path, ("checks/",))
    props = result.root / "checks/props.py"
    assert not props.is_symlink() and props.read_text() == "BASE = True\n"
    assert str((result.root / "checks/alias.py").readlink()) == "helper.py"
    assert _skipped(result) == {
        "checks/more": "symlink to the directory shared/more, outside the materialised paths"
    }
    assert not (result.root / "shared").exists()
    assert (result.files, result.links) == (2, ("checks/alias.py",))


def test_code_imports_a_module_through_an_in_tree_symlinked_file(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("vendored/money.py", "def cents(x):\n    return round(x * 100)\n")
    add_symlink(repo, "src/shop/money.py", "../../vendored/money.py")
    repo.write("src/shop/__init__.py", "from shop.money import cents\n")
    repo.commit()
    result = _materialise(repo, tmp_path)
    code = "import shop; print(shop.cents(1.5), shop.money.__file__)"
    proc = subprocess.run(
        [sys.executable, "-s", "-P", "-B", "-c", code],
        cwd=result.root,
        env={"PYTHONPATH": os.fspath(result.root / "src"), "PATH": os.defpath},
        capture_output=True,
        text=True,
        check=True,
    )
    value, file = proc.stdout.split()
    assert value == "150"
    assert file == os.fspath(result.root / "src/shop/money.py")


def test_committed_bytecode_is_never_materialised(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("pkg/__init__.py", "X = 1\n")
    repo.write("pkg/__pycache__/__init__.cpython-311.pyc", b"\x00bytecode")
    repo.write("pkg/__pycache__/notes.txt", "anything under __pycache__\n")
    repo.write("__pycache__/top.cpython-311.pyc", b"\x00bytecode")
    repo.write("pkg/helper.pyc", b"\x00sourceless")
    repo.write("pkg/OLD.PYO", b"\x00optimised")
    repo.write("docs/about.pyc.md", "not bytecode\n")
    add_symlink(repo, "pkg/alias.pyc", "helper.pyc")  # a link named like bytecode
    add_symlink(repo, "pkg/cache", "__pycache__")  # a link to a directory of bytecode
    add_symlink(repo, "pkg/data.bin", "helper.pyc")  # a link to bytecode
    repo.commit()
    result = _materialise(repo, tmp_path)
    never = "bytecode: never materialised"
    skipped = _skipped(result)
    for rel in (
        "pkg/__pycache__/__init__.cpython-311.pyc",
        "pkg/__pycache__/notes.txt",
        "__pycache__/top.cpython-311.pyc",
        "pkg/helper.pyc",
        "pkg/OLD.PYO",
        "pkg/alias.pyc",
    ):
        assert skipped.pop(rel) == never
        assert not os.path.lexists(result.root / rel)
    # Links that lead to bytecode find nothing materialised there: dropped, never copied.
    assert skipped == {
        "pkg/cache": "symlink to the directory pkg/__pycache__, which holds no materialised file",
        "pkg/data.bin": "symlink to pkg/helper.pyc, which is not in the materialised tree",
    }
    assert not (result.root / "pkg/__pycache__").exists()
    assert not (result.root / "__pycache__").exists()
    assert (result.root / "docs/about.pyc.md").is_file()
    assert (result.files, result.links) == (2, ())


def test_bytecode_is_skipped_below_selected_paths_too(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("checks/props.py", "BASE = True\n")
    repo.write("checks/__pycache__/props.cpython-311.pyc", b"\x00bytecode")
    repo.write("elsewhere/x.pyc", b"\x00bytecode")
    add_symlink(repo, "checks/copied.py", "../elsewhere/x.pyc")  # outside: would be a copy
    repo.commit()
    result = _materialise(repo, tmp_path, ("checks/",))
    assert _skipped(result) == {
        "checks/__pycache__/props.cpython-311.pyc": "bytecode: never materialised",
        "checks/copied.py": "symlink to elsewhere/x.pyc, which is not in the materialised tree",
    }
    assert (result.files, result.links) == (1, ())
