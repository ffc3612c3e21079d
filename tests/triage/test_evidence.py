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


def _tar_of(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:") as tar:
        for path in sorted(folder.iterdir()):
            tar.add(path, arcname=path.name)
    return buf.getvalue()


def _collected(tmp_path: Path, evidence: bytes) -> dict[str, object]:
    """What the driver makes of a worker's accept_for_review with ``evidence``."""
    from patchlane import __version__
    from patchlane.triage.fleet import FleetOptions, _Collector
    from patchlane.triage.units import BaseSpec, Pair, PairResult, RunPlan, Unit, pair_key

    base = BaseSpec(repo="r", base_commit="d" * 40)
    pair = Pair("i", "m", "i/m", "p.jsonl:1", b"diff", pair_key(__version__, base, (), b"diff"))
    out = tmp_path / "out"
    out.mkdir(parents=True)
    opts = FleetOptions((Unit(base, (pair,)),), out, RunPlan((), str(tmp_path), 1, 60.0))
    collector = _Collector(opts, {pair.key: (pair, base)}, "local")
    row = json.dumps({"head": HEAD, "verdict": "accept_for_review", "slice_count": 2})
    collector.report(
        PairResult(
            pair.key,
            "i",
            "m",
            "i/m",
            "accept_for_review",
            0,
            "green",
            False,
            1,
            1.0,
            row=row,
            evidence=evidence,
        )
    )
    (got,) = collector.rows().values()
    (line,) = (out / "triage.jsonl").read_text().splitlines()
    assert json.loads(line) == got  # appended the moment it was judged
    return got


def test_the_driver_keeps_an_accept_only_when_its_receipt_verifies(
    tmp_path: Path, accepted: Path
) -> None:
    kept = _collected(tmp_path / "a", _tar_of(accepted))
    assert (kept["verdict"], kept["exit_code"], kept["evidence"]) == ("accept_for_review", 0, "i/m")
    assert (tmp_path / "a" / "out" / "i" / "m" / "receipt.json").is_file()
    _edit_receipt(accepted, head="0" * 40)
    refused = _collected(tmp_path / "b", _tar_of(accepted))
    assert (refused["verdict"], refused["exit_code"], refused["infra"]) == ("undecided", 3, False)
    assert str(refused["reason"]).startswith("evidence: the receipt does not verify")
    hostile = _collected(tmp_path / "c", archive(file("../escaped")))
    assert (hostile["verdict"], hostile["infra"], hostile["evidence"]) == ("undecided", True, None)
    assert str(hostile["reason"]).startswith("infrastructure: evidence refused")
    assert not (tmp_path / "c" / "out" / "i" / "escaped").exists()
