"""Writes stay where they belong: the gate's out dir and every ``--out FILE`` refuse links.

The repository is hostile (DESIGN.md §2): a committed ``.patchlane`` link, a link inside it,
or a linked directory on the way to ``--out-dir`` could send the evidence over a source file
or out of the repository. Each is refused with exit 2 and one line naming the path, before
anything is cleared or written; the link's target is left byte for byte as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchlane.errors import LINK_REFUSED, UnsafeWriteError
from patchlane.inputs.jsonio import atomic_write_bytes, atomic_write_text
from patchlane.main import main
from tests.gitrepo import GitRepo, add_symlink
from tests.sample import EVIDENCE


def gate(repo: GitRepo, *extra: str) -> int:
    return main(
        [
            *("--repo", str(repo.path), "-q", "gate", "--base", "main"),
            *("--seed", "1", "--cases", "5", *extra),
        ]
    )


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root`` (not following links): file bytes, link targets, dirs."""
    seen: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = os.fspath(path.relative_to(root))
            if path.is_symlink():
                seen[rel] = "-> " + os.fspath(path.readlink())
            elif path.is_dir():
                seen[rel] = "dir"
            else:
                seen[rel] = path.read_bytes()
    return seen


def refused_line(capsys: pytest.CaptureFixture[str], path: Path | str) -> str:
    """Return the one stderr line, after checking it names ``path`` and the link."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0] == f"patchlane: error: {os.fspath(path)}: {LINK_REFUSED}"
    return lines[0]


# --- the gate's out dir ------------------------------------------------------------------


@pytest.mark.slow
def test_the_normal_case_writes_every_evidence_file_and_clears_stale_ones(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write("src/quota/__init__.py", "LIMIT = 11\n")
    billing.commit("raise the quota")
    default = billing.path / ".patchlane"
    default.mkdir()
    (default / "receipt.json").write_text("stale\n", encoding="utf-8")
    (default / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert gate(billing) == 3
    for name in EVIDENCE:
        assert (default / name).is_file(), name
    assert not (default / "receipt.json").exists()  # an old receipt is never this run's
    assert (default / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    out = tmp_path / "elsewhere" / "ev"
    assert gate(billing, "--out-dir", str(out)) == 3
    assert sorted(p.name for p in out.iterdir()) == sorted(EVIDENCE)


def test_a_committed_patchlane_link_into_the_repository_is_refused(
    billing: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    add_symlink(billing, ".patchlane", "src/billing")
    # A stale name in the target, which clearing would have deleted through the link.
    billing.write("src/billing/verdict.json", '{"verdict": "mine"}\n')
    billing.commit("evidence goes to billing")
    before = snapshot(billing.path / "src")
    assert gate(billing) == 2
    refused_line(capsys, billing.path / ".patchlane")
    assert snapshot(billing.path / "src") == before


def test_a_committed_patchlane_link_out_of_the_repository_is_refused(
    billing: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "authorized_keys").write_bytes(b"ssh-ed25519 AAAA me\n")
    (ssh / "review.md").write_bytes(b"my own notes\n")
    add_symlink(billing, ".patchlane", os.fspath(ssh))
    billing.commit("evidence goes home")
    before = snapshot(ssh)
    assert gate(billing) == 2
    refused_line(capsys, billing.path / ".patchlane")
    assert snapshot(ssh) == before


@pytest.mark.parametrize("name", ["classify.json", "verdict.json", "receipt.json", "review.md"])
def test_a_link_inside_the_out_dir_is_refused_before_anything_is_cleared(
    billing: GitRepo, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    victim = billing.write("victim.txt", "keep me\n")
    add_symlink(billing, f".patchlane/{name}", "../victim.txt")
    billing.write(".patchlane/receipt.json" if name != "receipt.json" else ".patchlane/x", "old\n")
    billing.commit("a link in the evidence dir")
    before = snapshot(billing.path)
    assert gate(billing) == 2
    refused_line(capsys, billing.path / ".patchlane" / name)
    assert victim.read_bytes() == b"keep me\n"
    assert snapshot(billing.path) == before  # nothing cleared, nothing written


def test_a_link_inside_the_out_dir_to_an_absolute_path_is_refused(
    billing: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "etc-like"
    outside.mkdir()
    target = outside / "motd"
    target.write_bytes(b"system file\n")
    add_symlink(billing, ".patchlane/review.md", os.fspath(target))
    dangling = outside / "created-by-us"
    add_symlink(billing, ".patchlane/verdict.json", os.fspath(dangling))
    billing.commit("links to absolute paths")
    assert gate(billing) == 2
    # verdict.json comes first in the order evidence is checked.
    refused_line(capsys, billing.path / ".patchlane" / "verdict.json")
    assert target.read_bytes() == b"system file\n"
    assert sorted(p.name for p in outside.iterdir()) == ["motd"]


def test_an_out_dir_whose_parent_is_a_link_in_the_repository_is_refused(
    billing: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add_symlink(billing, "build", "src/billing")
    billing.commit("build is billing")
    before = snapshot(billing.path / "src")
    monkeypatch.chdir(billing.path)
    assert gate(billing, "--out-dir", "build/evidence") == 2
    refused_line(capsys, billing.path / "build")
    assert snapshot(billing.path / "src") == before
    assert not (billing.path / "src" / "billing" / "evidence").exists()


def test_an_out_dir_that_is_a_link_outside_the_repository_is_refused(
    billing: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "ev"
    link.symlink_to(real)
    assert gate(billing, "--out-dir", str(link)) == 2
    refused_line(capsys, link)
    assert list(real.iterdir()) == []


def test_a_link_above_the_repository_is_the_users_own_and_is_followed(
    billing: GitRepo, tmp_path: Path
) -> None:
    # /tmp on macOS and many home directories are links; refusing them would refuse users.
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "via").symlink_to(real)
    billing.write("src/quota/__init__.py", "LIMIT = 11\n")
    billing.commit("raise the quota")
    assert gate(billing, "--out-dir", str(tmp_path / "via" / "ev")) == 3
    assert sorted(p.name for p in (real / "ev").iterdir()) == sorted(EVIDENCE)


def test_a_dotdot_after_a_link_in_the_repository_is_judged_by_where_it_lands(
    billing: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # "link/../ev" spells a path in the repository root but, through the link, lands in
    # src/: the walk follows the file system, not the spelling, and refuses the link.
    add_symlink(billing, "link", "src/billing")
    billing.commit("a link")
    assert gate(billing, "--out-dir", str(billing.path / "link" / ".." / "ev")) == 2
    refused_line(capsys, billing.path / "link")
    assert not (billing.path / "src" / "ev").exists()
    assert not (billing.path / "ev").exists()


def test_an_evidence_name_that_is_a_directory_is_refused(
    billing: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    billing.write(".patchlane/review.md/keep.txt", "x\n")
    billing.commit("a directory where the note goes")
    assert gate(billing) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"patchlane: error: {billing.path / '.patchlane' / 'review.md'}: is not a regular file\n"
    )
    assert (billing.path / ".patchlane" / "review.md" / "keep.txt").read_text() == "x\n"


def test_an_out_dir_that_is_a_file_is_refused(
    billing: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    billing.write(".patchlane", "not a directory\n")
    billing.commit("a file where the evidence goes")
    assert gate(billing) == 2
    err = capsys.readouterr().err
    assert err == f"patchlane: error: {billing.path / '.patchlane'}: is not a directory\n"


# --- every --out FILE --------------------------------------------------------------------


@pytest.fixture
def evidence(billing: GitRepo) -> Path:
    """A gate run's evidence directory (in the repository), the input of later commands."""
    billing.write("src/quota/__init__.py", "LIMIT = 11\n")
    billing.commit("raise the quota")
    assert gate(billing) == 3
    return billing.path / ".patchlane"


def command(name: str, repo: GitRepo, ev: Path, out: Path) -> list[str]:
    base = ["--repo", str(repo.path), "-q"]
    reports = {
        "prop": str(ev / "property-report.json"),
        "fix": str(ev / "fixture-report.json"),
        "frz": str(ev / "freeze-report.json"),
    }
    argv = {
        "classify": ["classify", "--base", "main"],
        "property": ["property", "--base", "main", "--seed", "1", "--cases", "5"],
        "fixture check": ["fixture", "check"],
        "freeze audit": [
            "freeze",
            "audit",
            "--base",
            "main",
            "--today",
            "2026-09-24",
            "--property-report",
            reports["prop"],
            "--fixture-report",
            reports["fix"],
        ],
        "replay select": [
            "replay",
            "select",
            "--base",
            "main",
            "--property-report",
            reports["prop"],
        ],
        "verdict": [
            "verdict",
            "--property-report",
            reports["prop"],
            "--fixture-report",
            reports["fix"],
            "--freeze-report",
            reports["frz"],
        ],
        "review": ["review", "--dir", str(ev)],
    }[name]
    return [*base, *argv, "--out", str(out)]


COMMANDS = [
    "classify",
    "property",
    "fixture check",
    "freeze audit",
    "replay select",
    "verdict",
    "review",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", COMMANDS)
def test_an_out_file_that_is_a_link_is_refused(
    billing: GitRepo,
    evidence: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me\n")
    link = tmp_path / "out.json"
    link.symlink_to(victim)
    capsys.readouterr()
    assert main(command(name, billing, evidence, link)) == 2
    refused_line(capsys, link)
    assert victim.read_bytes() == b"keep me\n"
    assert link.readlink() == victim  # not replaced either
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "repo", "victim.txt"]


@pytest.mark.parametrize("name", ["classify", "review"])
def test_an_out_file_that_is_a_dangling_link_creates_nothing(
    billing: GitRepo,
    evidence: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "would-be-created")
    capsys.readouterr()
    assert main(command(name, billing, evidence, link)) == 2
    refused_line(capsys, link)
    assert not (tmp_path / "would-be-created").exists()


@pytest.mark.parametrize("name", ["classify", "review"])
def test_an_ordinary_out_file_is_still_written(
    billing: GitRepo, evidence: Path, tmp_path: Path, name: str
) -> None:
    out = tmp_path / "sub" / "out.txt"
    assert main(command(name, billing, evidence, out)) in (0, 3)
    assert out.is_file() and not out.is_symlink()


def test_atomic_write_refuses_a_link_and_writes_nothing(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me")
    link = tmp_path / "dir" / "lock.json"
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(UnsafeWriteError) as info:
        atomic_write_bytes(link, b"new")
    assert str(info.value) == f"{link}: {LINK_REFUSED}"
    with pytest.raises(UnsafeWriteError):
        atomic_write_text(link, "new")
    assert outside.read_bytes() == b"keep me"
    assert link.is_symlink()
    assert sorted(p.name for p in link.parent.iterdir()) == ["lock.json"]  # no temp file
