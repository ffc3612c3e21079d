"""Input files as bytes: decoding them as UTF-8, and reading one from a commit.

Kept apart from ``inputs.fields`` so that reading fields never loads git: the pytest plugin
reads the freeze report with ``inputs.fields`` inside pytest children, where every module
imported is paid for before the repository's code runs.
"""

from __future__ import annotations

from pathlib import Path

from patchlane.errors import InputError
from patchlane.infra import git


def decode_utf8(data: bytes, label: str, error: type[InputError]) -> str:
    """Return ``data`` as UTF-8 text. Raises ``error`` naming the line of the bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise error(label, f"not UTF-8 (byte {e.start})", line) from e


def read_committed_text(
    repo: Path, commit: str, rel: str, error: type[InputError], where: str
) -> str | None:
    """Return the text of the regular file ``rel`` in ``commit``; ``None`` when absent.

    Raises ``error`` (ending with ``where``, e.g. "(the map in base abc123)") for a symlink
    or submodule entry, which is never followed, or for bytes that are not UTF-8.
    """
    found = git.read_file_at(repo, commit, rel)
    if found is None:
        return None
    entry, data = found
    if entry.mode not in git.REGULAR_MODES:
        raise error(rel, f"not a regular file (a symlink or submodule is never followed) {where}")
    try:
        return decode_utf8(data, rel, error)
    except InputError as e:
        raise error(e.file, f"{e.message} {where}", e.line) from e
