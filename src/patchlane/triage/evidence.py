"""A pair's evidence as the driver receives it: a tar archive from a worker, unpacked
safely into its folder, and the receipt in it checked by the driver itself.

The worker is another process, possibly another machine, and the patch's code ran there
(in the sandbox): the driver believes nothing of the archive's layout. Every member must be
a regular file or a directory whose path stays inside the folder (no absolute path, no
``..``, no link of any kind, no device); files are created anew, never through an existing
link. Then, for an ``accept_for_review``, the receipt is verified against the slice as
``patchlane replay verify`` would, and against the replay report beside them.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
from pathlib import Path, PurePosixPath

from patchlane.errors import PatchlaneError
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.formats.status import Status
from patchlane.gate.reports import FILE_NAMES
from patchlane.lanes.replay.verify import Expectations, verify_receipt

# Beyond these, an archive is not evidence but a flood: refused before anything is written.
MAX_MEMBERS = 20_000
MAX_BYTES = 2 * 1024**3


class EvidenceRefused(PatchlaneError):
    """An evidence archive holds what no evidence folder holds (the message says what)."""


def unpack(data: bytes, folder: Path) -> None:
    """Replace ``folder``'s content with the tar archive ``data``.

    Raises ``EvidenceRefused`` (nothing written) for an archive that is not one, has too
    many members or bytes, or holds a member that is not a regular file or a directory,
    whose path is absolute, holds ``..`` or an empty part, or repeats another's."""
    members = _checked(data)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        for member, parts in members:
            target = folder.joinpath(*parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:  # pragma: no cover - a regular file always has data
                raise EvidenceRefused(f"{member.name}: no data in the archive")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(target, flags, 0o644)
            with os.fdopen(fd, "wb") as sink:
                shutil.copyfileobj(source, sink)


def _checked(data: bytes) -> list[tuple[tarfile.TarInfo, tuple[str, ...]]]:
    """The archive's members with their path parts, every one checked before any is
    written. Raises ``EvidenceRefused``."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            members = tar.getmembers()
    except (tarfile.TarError, EOFError) as e:
        raise EvidenceRefused(f"not a tar archive: {e}") from None
    if len(members) > MAX_MEMBERS:
        raise EvidenceRefused(f"{len(members)} members: more than {MAX_MEMBERS}")
    if sum(m.size for m in members if m.isfile()) > MAX_BYTES:
        raise EvidenceRefused(f"more than {MAX_BYTES} bytes")
    out: list[tuple[tarfile.TarInfo, tuple[str, ...]]] = []
    seen: dict[tuple[str, ...], bool] = {}
    for m in members:
        parts = _parts(m.name)
        if not (m.isfile() or m.isdir()):
            raise EvidenceRefused(f"{m.name!r}: not a regular file or a directory")
        if stat.S_IFMT(m.mode) not in (0, stat.S_IFREG, stat.S_IFDIR):  # pragma: no cover
            raise EvidenceRefused(f"{m.name!r}: unexpected mode {oct(m.mode)}")
        if parts in seen and not (m.isdir() and seen[parts]):
            raise EvidenceRefused(f"{m.name!r}: in the archive twice")
        for i in range(1, len(parts)):  # a file cannot also be a parent directory
            if seen.get(parts[:i]) is False:
                raise EvidenceRefused(f"{m.name!r}: under a file of the archive")
        seen[parts] = m.isdir()
        out.append((m, parts))
    for parts, is_dir in seen.items():
        if not is_dir and any(k[: len(parts)] == parts and k != parts for k in seen):
            raise EvidenceRefused(f"{'/'.join(parts)!r}: a file and a directory at once")
    return out


def _parts(name: str) -> tuple[str, ...]:
    """A member's path as its parts, refused when it could leave the folder."""
    if "\\" in name or "\x00" in name:
        raise EvidenceRefused(f"{name!r}: not a plain POSIX path")
    path = PurePosixPath(name)
    if path.is_absolute():
        raise EvidenceRefused(f"{name!r}: an absolute path")
    parts = tuple(p for p in path.parts if p != ".")
    if not parts or any(p in ("..", "") for p in parts):
        raise EvidenceRefused(f"{name!r}: leaves the evidence folder or names nothing")
    return parts


def check_receipt(folder: Path, head: str | None, seed: int | None) -> str | None:
    """Verify the receipt in ``folder`` (an ``accept_for_review``'s evidence) as
    ``patchlane replay verify`` would: against ``replay-slice.txt`` (its hash, its
    coverage, the canary the replay report names), the freeze report's grants, a seed
    (``seed``, else the one the replay report gives) and ``head``; and the replay report's
    ``receipt_sha256`` must be this receipt's. Returns ``None`` when it verifies and
    passes, or when the replay report says the lane had nothing to run; else why not (one
    line). Raises nothing."""

    try:
        report = ReplayReport.read(folder / FILE_NAMES["replay"])
        if report.status == Status.NOT_APPLICABLE and report.receipt_sha256 is None:
            return None  # the patch gave the replay nothing to run: no receipt to check
        slice_bytes = (folder / FILE_NAMES["replay_slice"]).read_bytes()
        receipt = (folder / FILE_NAMES["receipt"]).read_bytes()
        freeze_path = folder / FILE_NAMES["freeze"]
        freeze = FreezeReport.read(freeze_path) if freeze_path.exists() else None
    except (OSError, PatchlaneError) as e:
        return f"evidence: the receipt cannot be checked: {e}"
    expected_seed = seed if seed is not None else report.seed
    if expected_seed is None:
        return "evidence: the replay report names no seed for the receipt"
    canary = None if report.canary is None else tuple(report.canary.nodeids)
    try:
        verification = verify_receipt(
            slice_bytes,
            receipt,
            freeze,
            Expectations(
                seed=expected_seed,
                head=head,
                require_signature=False,
                public_key=None,
                canary=canary,
            ),
        )
    except PatchlaneError as e:  # a malformed slice
        return f"evidence: {e}"
    if verification.outcome != ReplayOutcome.PASS:
        why = "; ".join(verification.reasons) or str(verification.outcome)
        return f"evidence: the receipt does not verify ({verification.outcome}): {why}"
    if report.receipt_sha256 != verification.receipt_sha256:
        return (
            f"evidence: the replay report's receipt_sha256 {report.receipt_sha256} is not "
            f"the receipt's ({verification.receipt_sha256})"
        )
    return None
