"""The driver's side of a pair's evidence: a worker's tar archive unpacked into its folder
with nothing leaving it, and the receipt of an ``accept_for_review`` verified by the
driver (tests/recorded/accept: a real gate's evidence)."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from patchlane.triage.evidence import EvidenceRefused, check_receipt, unpack

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "accept"
SLICE = b"tests/test_billing.py::test_partial_refund\ntests/test_billing.py::test_zero_refund\n"
HEAD = "39c071097ac1e5a02d364729c00cfe2366635581"


def archive(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return buf.getvalue()


def file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def entry(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info, None


def test_an_archive_of_files_and_folders_replaces_what_the_folder_held(tmp_path: Path) -> None:
    folder = tmp_path / "out" / "inst" / "model"
    folder.mkdir(parents=True)
    (folder / "stale.json").write_text("from an earlier attempt")
    unpack(
        archive(entry("logs", tarfile.DIRTYPE), file("verdict.json", b"{}"), file("logs/a", b"1")),
        folder,
    )
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "logs",
        "logs/a",
        "verdict.json",
    ]
    assert (folder / "logs" / "a").read_bytes() == b"1"


HOSTILE: dict[str, Callable[[], bytes]] = {
    "parent": lambda: archive(file("../escaped")),
    "deep parent": lambda: archive(file("logs/../../escaped")),
    "absolute": lambda: archive(file("/tmp/escaped")),
    "symlink": lambda: archive(entry("link", tarfile.SYMTYPE, "/etc/passwd")),
    "hard link": lambda: archive(file("a"), entry("b", tarfile.LNKTYPE, "a")),
    "device": lambda: archive(entry("dev", tarfile.CHRTYPE)),
    "fifo": lambda: archive(entry("pipe", tarfile.FIFOTYPE)),
    "twice": lambda: archive(file("verdict.json", b"1"), file("verdict.json", b"2")),
    "file then under it": lambda: archive(file("a"), file("a/b")),
    "under it then file": lambda: archive(file("a/b"), file("a")),
    "backslash": lambda: archive(file("..\\escaped")),
    "empty name": lambda: archive(file(".")),
    "not a tar": lambda: b"this is no archive" * 100,
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_archive_is_refused_and_nothing_is_written(tmp_path: Path, case: str) -> None:
    folder = tmp_path / "out" / "inst" / "model"
    with pytest.raises(EvidenceRefused):
        unpack(HOSTILE[case](), folder)
    assert not folder.exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == []


def test_a_link_where_the_folder_goes_is_replaced_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out" / "inst").mkdir(parents=True)
    folder = tmp_path / "out" / "inst" / "model"
    folder.symlink_to(elsewhere)
    unpack(archive(file("verdict.json", b"{}")), folder)
    assert not folder.is_symlink() and (folder / "verdict.json").is_file()
    assert list(elsewhere.iterdir()) == []


@pytest.fixture
def accepted(tmp_path: Path) -> Path:
    folder = tmp_path / "accept"
    shutil.copytree(RECORDED, folder)
    (folder / "replay-slice.txt").write_bytes(SLICE)
    return folder


def test_a_real_accepts_receipt_verifies(accepted: Path) -> None:
    assert check_receipt(accepted, HEAD, None) is None
    assert check_receipt(accepted, HEAD, 7) is None


def _edit_receipt(folder: Path, **changes: object) -> None:
    path = folder / "receipt.json"
    receipt = json.loads(path.read_text("utf-8"))
    receipt.update(changes)
    path.write_text(json.dumps(receipt), "utf-8")


def test_a_receipt_that_does_not_answer_its_evidence_is_refused(accepted: Path) -> None:
    assert "head" in (check_receipt(accepted, "0" * 40, None) or "")
    assert "seed" in (check_receipt(accepted, HEAD, 8) or "")
    (accepted / "replay-slice.txt").write_bytes(SLICE + b"tests/test_more.py::test_more\n")
    assert "slice_sha256" in (check_receipt(accepted, HEAD, None) or "")


def test_a_receipt_other_than_the_reports_is_refused(accepted: Path) -> None:
    # Still a valid receipt for the slice, but not the one the gate verified.
    _edit_receipt(accepted, host_role="elsewhere")
    problem = check_receipt(accepted, HEAD, None) or ""
    assert "receipt_sha256" in problem


def test_a_receipt_with_a_failure_or_a_missing_node_is_refused(accepted: Path) -> None:
    _edit_receipt(accepted, passed_nodeids=["tests/test_billing.py::test_partial_refund"])
    assert "do not cover the slice" in (check_receipt(accepted, HEAD, None) or "")
    _edit_receipt(
        accepted,
        passed_nodeids=["tests/test_billing.py::test_partial_refund"],
        failed_nodeids=["tests/test_billing.py::test_zero_refund"],
    )
    assert "fail" in (check_receipt(accepted, HEAD, None) or "")


def test_missing_evidence_files_are_a_reason(accepted: Path) -> None:
    (accepted / "receipt.json").unlink()
    assert "cannot be checked" in (check_receipt(accepted, HEAD, None) or "")
    (accepted / "replay-report.json").write_text("{not json", "utf-8")
    assert "cannot be checked" in (check_receipt(accepted, HEAD, None) or "")
