"""Which registry decides (the base's, docs/architecture.md §2) and what the patch does to it.

A freeze added or changed by the patch cannot skip anything in the same patch: only the base
commit's records are audited. The head's version is read only to list the patch's own
changes for a person (``added_by_patch``, ``changed_by_patch``, ``removed_by_patch``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchlane.formats.freeze_report import BASE, NONE
from patchlane.infra import git
from patchlane.inputs.committed import read_committed_text
from patchlane.lanes.freeze.registry import FreezeRecord, RegistryError, parse_registry
from patchlane.project.config import ReviewMap


@dataclass(frozen=True)
class Registry:
    """The registry that decides for a patch, and the patch's changes to it.

    ``source`` is ``base`` (read from the base commit) or ``none`` (the map has no freeze
    lane, or the base has no registry: no record). ``records`` are the base's, the only
    ones audited. ``head_records`` are the head's when the patch changed the file (listed,
    never audited); ``head_problem`` says why the head's file cannot be read, if it cannot.
    """

    path: str | None
    source: str
    records: tuple[FreezeRecord, ...]
    head_records: tuple[FreezeRecord, ...]
    added_by_patch: tuple[str, ...]
    changed_by_patch: tuple[str, ...]
    removed_by_patch: tuple[str, ...]
    head_problem: str | None


def _read(
    repo: Path, commit: str, rel: str, review_map: ReviewMap, revision: str
) -> tuple[FreezeRecord, ...] | None:
    """Return the records stored at ``rel`` in ``commit`` (``None`` when absent).

    Raises ``RegistryError`` for a symlink or submodule entry (never followed) or a
    malformed file; the message names the revision it was read from.
    """
    where = f"(the registry in {revision} {commit[:12]})"
    text = read_committed_text(repo, commit, rel, RegistryError, where)
    if text is None:
        return None
    try:
        return parse_registry(text, rel, review_map)
    except RegistryError as e:
        raise RegistryError(e.file, f"{e.message} {where}", e.line) from e


def _blob(repo: Path, commit: str, rel: str) -> tuple[str, str] | None:
    entry = git.entry_at(repo, commit, rel)
    return None if entry is None else (entry.mode, entry.oid)


def load_base_registry(repo: Path, review_map: ReviewMap, base: str, head: str) -> Registry:
    """Return the registry that decides for ``merge-base(base, head)..head``: the base's.

    ``base`` and ``head`` are refs or commit ids. The head's version is parsed only when
    the patch changed the file (its blob differs from the merge base's); a head file that
    cannot be read is reported in ``head_problem``, never raised, because it is the
    patch's. Raises ``RegistryError`` when the base's registry is a symlink or malformed,
    ``GitError`` for an unknown ref or a missing merge base.
    """
    lane = review_map.freeze
    if lane is None:
        return Registry(None, NONE, (), (), (), (), (), None)
    rel = lane.registry
    base_commit = git.resolve_commit(repo, base)
    head_commit = git.resolve_commit(repo, head)
    at_base = _read(repo, base_commit, rel, review_map, "base")
    records = at_base or ()
    source = NONE if at_base is None else BASE
    merge_base = git.merge_base(repo, base_commit, head_commit)
    if _blob(repo, merge_base, rel) == _blob(repo, head_commit, rel):
        return Registry(rel, source, records, (), (), (), (), None)

    head_records: tuple[FreezeRecord, ...] = ()
    problem: str | None = None
    try:
        head_records = _read(repo, head_commit, rel, review_map, "head") or ()
    except RegistryError as e:
        problem = str(e)
    try:
        before = _read(repo, merge_base, rel, review_map, "merge base") or ()
    except RegistryError:
        before = ()  # then every head record counts as touched by the patch: more is listed
    before_by_id = {r.id: r for r in before}
    base_by_id = {r.id: r for r in records}
    head_ids = {r.id for r in head_records}
    # Touched: what the patch itself did (head against the merge base), so that a record
    # the base branch changed after the patch started is not blamed on the patch.
    touched = [r for r in head_records if before_by_id.get(r.id) != r]
    added = tuple(r.id for r in touched if r.id not in base_by_id)
    changed = tuple(r.id for r in touched if r.id in base_by_id and base_by_id[r.id] != r)
    removed = tuple(
        r.id for r in before if r.id not in head_ids and r.id in base_by_id and problem is None
    )
    return Registry(rel, source, records, head_records, added, changed, removed, problem)
