"""The registry's history on the base side, for audit rule 6 (extensions).

Every commit that touched the registry file, oldest first, up to and including the base
commit, is read from git. Historic versions are read leniently (only ``id``, ``expires`` and
``failure_log.sha256`` matter here); one that is not a regular file or not YAML of the
registry's shape is skipped with a note, never an error, because old mistakes on the base
branch must not stop today's audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from patchlane.errors import GitError
from patchlane.infra import git
from patchlane.inputs.committed import decode_utf8
from patchlane.inputs.yamlio import YamlList, YamlMap, load_yaml
from patchlane.lanes.freeze.registry import RegistryError, parse_date


@dataclass(frozen=True)
class Extension:
    """One extension of a record's expiry: in ``commit``, from ``old`` to ``new``.

    ``new_log`` says whether that commit also brought a failure log the record never had
    before (a ``failure_log.sha256`` not seen in any earlier version of the record).
    """

    commit: str
    record_id: str
    old: date
    new: date
    new_log: bool


@dataclass(frozen=True)
class History:
    """What the registry's history says: how many versions were read, every extension in
    history order, and notes on versions that were skipped."""

    versions: int
    extensions: tuple[Extension, ...]
    notes: tuple[str, ...]

    def of(self, record_id: str) -> tuple[Extension, ...]:
        """Return the extensions of the record ``record_id``, oldest first."""
        return tuple(e for e in self.extensions if e.record_id == record_id)


@dataclass(frozen=True)
class _Entry:
    record_id: str
    expires: date | None
    log: str | None


def _lenient(data: bytes, rel: str) -> list[_Entry]:
    """Return the records of one historic version. Raises ``RegistryError`` (or a YAML
    error) when the version is not a registry at all."""
    doc = load_yaml(decode_utf8(data, rel, RegistryError), rel, RegistryError)
    freezes = doc.get("freezes") if isinstance(doc, YamlMap) else None
    if not isinstance(freezes, YamlList):
        raise RegistryError(rel, "no 'freezes' list")
    out: list[_Entry] = []
    seen: set[str] = set()
    for item in freezes:
        if not isinstance(item, YamlMap) or not isinstance(raw_id := item.get("id"), str):
            continue
        record_id = raw_id.strip()
        if record_id in seen:
            continue  # the strict parser refuses duplicates; the first one is what it reads
        seen.add(record_id)
        log = item.get("failure_log")
        digest = log.get("sha256") if isinstance(log, YamlMap) else None
        out.append(
            _Entry(
                record_id,
                parse_date(item.get("expires")),
                digest.lower() if isinstance(digest, str) else None,
            )
        )
    return out


def _shallow_commits(repo: Path) -> frozenset[str]:
    if not git.is_shallow(repo):
        return frozenset()
    path = git.git_dir(repo) / "shallow"
    try:
        return frozenset(path.read_text("ascii").split())
    except OSError:
        return frozenset()


def commits_touching(repo: Path, base: str, rel: str) -> list[str]:
    """Return the commits that touched ``rel``, oldest first, up to and including ``base``.

    Ancestors always come before descendants (``--topo-order``). Raises ``GitError`` when a
    shallow clone cuts the history (a boundary commit holds the file), naming the fetch
    that brings the rest: an extension made before the cut would otherwise go unseen.
    """
    raw = git.out(repo, "log", "--format=%H", "--topo-order", "--reverse", base, "--", rel)
    commits = raw.decode("ascii").split()
    cut = _shallow_commits(repo).intersection(commits)
    if cut:
        raise GitError(
            f"the history of {rel} is cut by a shallow clone at {min(cut)[:12]}: audit rule 6 "
            "needs all of it; fetch the history (git fetch --unshallow)"
        )
    return commits


def registry_history(repo: Path, base: str, rel: str) -> History:
    """Read every version of the registry ``rel`` on the base side and find extensions.

    An extension is a version in which a record has a later ``expires`` than any earlier
    version of the same id had, so that deleting and re-adding a record, or a side branch
    merged back, cannot reset the count. Returns a ``History``. Raises ``GitError``.
    """
    latest: dict[str, date] = {}
    logs: dict[str, set[str]] = {}
    extensions: list[Extension] = []
    notes: list[str] = []
    commits = commits_touching(repo, base, rel)
    read = 0
    for commit in commits:
        found = git.read_file_at(repo, commit, rel)
        if found is None:
            read += 1  # deleted here: nothing to compare, but what came before still counts
            continue
        entry, data = found
        if entry.mode not in git.REGULAR_MODES:
            notes.append(f"{rel} in {commit[:12]} is not a regular file: version skipped")
            continue
        try:
            entries = _lenient(data, rel)
        except RegistryError as err:
            notes.append(f"{rel} in {commit[:12]} cannot be read ({err}): version skipped")
            continue
        read += 1
        for e in entries:
            known = logs.setdefault(e.record_id, set())
            before = latest.get(e.record_id)
            if e.expires is not None and before is not None and e.expires > before:
                new_log = e.log is not None and e.log not in known
                extensions.append(Extension(commit, e.record_id, before, e.expires, new_log))
            if e.expires is not None and (before is None or e.expires > before):
                latest[e.record_id] = e.expires
            if e.log is not None:
                known.add(e.log)
    return History(read, tuple(extensions), tuple(notes))
