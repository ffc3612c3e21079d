"""A content-addressed cache of property runs' results (docs/explanation/decisions/0016-caches.md).

One entry is one run of one property module version (``base`` or ``head``) in a child: the
result records the lane judged, exactly as the child wrote them, and a *manifest* of what
the run read (``reads``), like ccache's direct mode:

- the entry's **key** is the SHA-256 of a canonical description of the run: which source,
  the module's bytes, the properties, seed, cases, case, timeout, the child's path layout,
  the Python, Hypothesis and patchlane versions and the isolation layers (``describe``);
- the **manifest** lists every path the run opened, listed or probed. A path inside one of
  the materialised trees (``head``, ``base``: temporary directories that differ from run
  to run) is kept relative to its root, as the run spelled it, with the SHA-256 of what it
  read, its listing (names and kinds) or its kind; a path outside them (the standard
  library, site-packages) with its size, times and inode.

Each entry carries a MAC of its canonical bytes and its key under the user's cache key
(``patchlane.infra.cachekey``); an entry whose MAC is missing or wrong (one of an older format,
one that code without the key rewrote) is not used, is removed and is counted in
``ResultCache.unverified``, which the lane reports.

A lookup is a **hit** only when an entry of that key is readable, its MAC verifies, it is
well-formed, of this format, for exactly this description, its records are a complete
result, and every manifest path still gives the same fingerprint in the current trees and
on this machine; then no child starts. Anything else is a miss, never an error.

Only runs the lane could trust are stored: a child that ended with its ``done`` line, a
result for every property and none of kind ``sandbox``, and a complete record (no reason
to be ``blind``, nothing written outside the child's own home, no path that leaves a tree).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, TypedDict

import patchlane
from patchlane.child.messages import Job, RunResult
from patchlane.infra.cachekey import CacheKey
from patchlane.infra.process import ChildRun
from patchlane.lanes.property import judge
from patchlane.lanes.property.cache import sealed
from patchlane.lanes.property.cache.fingerprint import fingerprint
from patchlane.lanes.property.cache.sealed import canonical as canonical  # re-exported

# 2: messages of failing asserts show their operands; runs of tests the map names.
# 3: a MAC under the user's cache key instead of a bare digest.
FORMAT = 3
# The MAC's purpose (``CacheKey.mac``); its identity is the entry's key (its folder).
PURPOSE = "property-result"
# The cache's folder in patchlane's cache directory (``patchlane.infra.cache.default_cache``).
FOLDER = "property"
# Entries kept per key: one per distinct manifest (the code a base run reaches differs from
# patch to patch), newest first.
VARIANTS = 8
_KINDS = ("open", "list", "probe")
_ENTRY_KEYS = {"format", "description", "records", "manifest", "mac"}
_READS_KEYS = {"open", "list", "probe", "write", "blind"}
# Where a write does not make a record incomplete: devices such as /dev/null.
_DEVICES = "/dev/"
# Process state: it differs from one child to the next, so a run that reads it is not reused.
_PROCESS_STATE = ("/proc", "/sys")


@dataclass(frozen=True)
class Reads:
    """What one child recorded (``reads.Recorder.result``): absolute paths it opened for
    reading, listed, probed and wrote, and the reasons its record is incomplete."""

    opened: tuple[str, ...]
    listed: tuple[str, ...]
    probed: tuple[str, ...]
    written: tuple[str, ...]
    blind: tuple[str, ...]


class Versions(TypedDict):
    """What of the environment a result depends on besides the repository."""

    python: str
    executable: str
    cache_tag: str | None
    platform: str
    hypothesis: str | None
    patchlane: str


class Description(TypedDict):
    """What a run's cache key is made of (``describe``): the job as it bears on the result,
    its paths relative to the trees (``[label, path]``), the module file's digest, the clock,
    the isolation and the environment's ``Versions``."""

    format: int
    source: str
    mode: str
    module: str
    module_file: list[str]
    module_sha256: str
    names: list[str]
    seed: int
    cases: int
    case: int | None
    hypothesis: bool
    tests: bool
    layout: list[list[str]]
    timeout_s: float
    isolation: list[str]
    versions: Versions


class Manifest(TypedDict):
    """What a stored run read: ``[kind, tree, path, fingerprint]`` rows in the trees and
    ``[kind, path, fingerprint]`` rows outside them."""

    tree: list[list[str]]
    outside: list[list[str]]


@dataclass(frozen=True)
class Offer:
    """A finished run the lane may store: its key's description, its result records in
    the order of its properties, what it read, and the child's home directory."""

    description: Description
    records: tuple[RunResult, ...]
    reads: Reads
    home: Path


def key_of(description: Description) -> str:
    """Return the cache key (hex SHA-256) of a run's description."""
    return sealed.key_of(description)


@cache
def versions() -> Versions:
    """What of this environment changes a result besides the repository: interpreter,
    Hypothesis and patchlane."""
    try:
        hypothesis = metadata.version("hypothesis")
    except metadata.PackageNotFoundError:
        hypothesis = None
    return {
        "python": sys.version,
        "executable": sys.executable,
        "cache_tag": sys.implementation.cache_tag,
        "platform": sys.platform,
        "hypothesis": hypothesis,
        "patchlane": patchlane.__version__,
    }


def describe(
    payload: Job,
    source: str,
    roots: Mapping[str, Path],
    *,
    timeout_s: float,
    isolation: Sequence[str],
) -> Description | None:
    """Return the description a run job's key is made of, or ``None`` when the run cannot
    be cached (a path of its layout outside the trees, an unreadable module file).

    ``payload`` is the child's job; ``roots`` maps ``head``/``base`` to the trees;
    ``isolation`` names the layers and the command prefix children start with (as root in
    a user namespace, a child sees another user id)."""
    placed = _Places(roots)
    layout: list[list[str]] = []
    for path in (*payload["paths"], payload["cwd"], *payload["trees"]):
        place = placed.relative(path)
        if place is None:
            return None
        layout.append(place)
    module = placed.relative(payload["expect_file"])
    if module is None:
        return None
    try:
        digest = hashlib.sha256(Path(payload["expect_file"]).read_bytes()).hexdigest()
    except OSError:
        return None
    return {
        "format": FORMAT,
        "source": source,
        "mode": payload["mode"],
        "module": payload["module"],
        "module_file": module,
        "module_sha256": digest,
        "names": list(payload["names"]),
        "seed": payload["seed"],
        "cases": payload["cases"],
        "case": payload["case"],
        "hypothesis": bool(payload["hypothesis"]),
        "tests": bool(payload.get("tests")),
        "layout": layout,
        "timeout_s": float(timeout_s),
        "isolation": list(isolation),
        "versions": versions(),
    }


def split(result: ChildRun) -> tuple[ChildRun, Reads | None]:
    """Take the child's record of its reads (one ``{"reads": ...}`` line, the last before
    ``done``) out of ``result``; return the result without it and the parsed record
    (``None`` when it is missing, repeated, misplaced or malformed: the run is not stored,
    and its judging is not affected)."""
    lines = [i for i, r in enumerate(result.records) if set(r) == {"reads"}]
    if not lines:
        return result, None
    kept = tuple(r for r in result.records if set(r) != {"reads"})
    last = lines == [len(result.records) - 1]
    reads = _parse_reads(result.records[lines[-1]]["reads"]) if last else None
    return replace(result, records=kept), reads


def _parse_reads(value: Any) -> Reads | None:
    """Return the child's record as ``Reads``, or ``None`` when it is not exactly the shape
    ``reads.Recorder.result`` writes (lists of text; the paths absolute, without NUL)."""
    if not isinstance(value, dict) or set(value) != _READS_KEYS:
        return None
    lists = [value[k] for k in ("open", "list", "probe", "write", "blind")]
    if not all(isinstance(v, list) and all(isinstance(s, str) for s in v) for v in lists):
        return None
    paths = lists[:4]
    if any(not p.startswith("/") or "\0" in p for v in paths for p in v):
        return None
    return Reads(*(tuple(v) for v in lists))


def hit_run(records: Sequence[RunResult], seconds: float) -> ChildRun:
    """Return a cached result as the ``ChildRun`` of a child that reported ``records``
    and ended well, so that the lane judges it exactly as it judged the original."""
    plain = tuple(dict(r) for r in records)
    return ChildRun(plain, len(records), (), 0, False, seconds, b"", b"")


def trusted_records(
    names: tuple[str, ...], result: ChildRun
) -> tuple[tuple[RunResult, ...] | None, str]:
    """Return the records of a run whose result may be stored, in ``names`` order, or
    ``None`` and why not: the lane's judge found a problem (no ``done``, a bad exit, a
    malformed line, a missing result), the clock ran out, or a property failed in the
    sandbox (a blocked or tampered run)."""
    got, problems = judge.records(names, result, judge.valid_run_record)
    if result.timed_out:
        return None, "the child timed out"
    if problems or set(got) != set(names):
        return None, "the child's results cannot be trusted"
    if any(r["kind"] == "sandbox" for r in got.values()):
        return None, "a property failed in the sandbox"
    return tuple(got[n] for n in names), ""


class _Places:
    """Where an absolute path lies: in a tree (``[label, relative path]``) or not."""

    def __init__(self, roots: Mapping[str, Path]) -> None:
        self.roots = {label: os.fspath(root) for label, root in roots.items()}
        self.real = {label: os.path.realpath(root) for label, root in self.roots.items()}

    def relative(self, path: str) -> list[str] | None:
        """Return ``[label, path relative to that root as spelled]`` (``.`` for the root),
        or ``None`` when ``path`` is spelled outside every root."""
        for label, root in self.roots.items():
            if path == root:
                return [label, "."]
            if path.startswith(root + "/"):
                return [label, path[len(root) + 1 :]]
        return None

    def full(self, label: str, rel: str) -> str | None:
        """Return the absolute path of ``rel`` in tree ``label`` when it resolves inside
        that tree, else ``None`` (unknown tree, absolute, NUL, or a way out)."""
        root = self.roots.get(label)
        if root is None or not rel or rel.startswith("/") or "\0" in rel:
            return None
        full = root if rel == "." else f"{root}/{rel}"
        if not _within(os.path.realpath(full), self.real[label]):
            return None
        return full

    def inside_any(self, path: str) -> bool:
        """Whether ``path`` resolves into one of the trees."""
        real = os.path.realpath(path)
        return any(_within(real, r) for r in self.real.values())


def _within(path: str, root: str) -> bool:
    """Return whether ``path`` is ``root`` or below it (as text)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


class ResultCache:
    """The entries under ``directory``, checked against the trees of one lane run.

    ``roots`` maps ``head`` (and ``base``, when there is one) to the materialised trees;
    ``ignored`` are directories whose files never count (the bytecode prefix: derived
    from sources the manifest holds); ``key`` seals and verifies the entries.
    ``unverified`` lists the entries lookups found whose MAC did not verify (removed)."""

    def __init__(
        self, directory: Path, roots: Mapping[str, Path], ignored: Iterable[str], key: CacheKey
    ) -> None:
        self.directory = directory
        self.roots = dict(roots)
        self.places = _Places(roots)
        self.ignored = tuple(os.path.normpath(p) for p in ignored)
        self.key = key
        self.unverified: list[str] = []

    # -- lookup ----------------------------------------------------------------------------

    def lookup(self, description: Description) -> tuple[RunResult, ...] | None:
        """Return the stored result records of a run described so, when an entry's
        manifest still holds; ``None`` otherwise (never raises for what the cache holds).
        An entry whose MAC does not verify is removed and listed in ``unverified``."""
        folder = self.directory / key_of(description)
        for path, entry in sealed.entries(folder, FOLDER, self.key, PURPOSE, self.unverified):
            records = _fitting(entry, description)
            if records is not None and self._holds(entry["manifest"]):
                sealed.touch(path)
                return records
        return None

    def _holds(self, manifest: Any) -> bool:
        """Whether every path of a (so far unchecked) manifest gives its fingerprint now."""
        if not isinstance(manifest, dict) or set(manifest) != {"tree", "outside"}:
            return False
        tree, outside = manifest["tree"], manifest["outside"]
        if not isinstance(tree, list) or not isinstance(outside, list):
            return False
        for item in tree:
            if not _shaped(item, 4):
                return False
            kind, label, rel, fp = item
            full = self.places.full(label, rel)
            if full is None or kind not in _KINDS or fingerprint(kind, full, True) != fp:
                return False
        for item in outside:
            if not _shaped(item, 3):
                return False
            kind, path, fp = item
            if not path.startswith("/") or "\0" in path or kind not in _KINDS:
                return False
            if fingerprint(kind, path, False) != fp:
                return False
        return True

    # -- store -----------------------------------------------------------------------------

    def store(self, offers: Sequence[Offer]) -> list[str]:
        """Store each offered run; return, per offer, ``""`` when stored or why not.

        When any run wrote outside its own home, none is stored: the runs share the trees,
        so a file one run read may have been changed by another before it was hashed."""
        manifests = [self.manifest(o.reads, o.home) for o in offers]
        wrote = next((why for _, why in manifests if why.startswith("wrote ")), None)
        outcome = []
        for offer, (manifest, why) in zip(offers, manifests, strict=True):
            if wrote is not None:
                why = why or f"another run of the lane {wrote}"
            if manifest is None or why:
                outcome.append(why)
                continue
            outcome.append(self._write(offer, manifest))
        return outcome

    def manifest(self, reads: Reads, home: Path) -> tuple[Manifest | None, str]:
        """Return the manifest of a run's reads and ``""``, or ``None`` and why the run
        cannot be stored (blind, wrote outside its home, a path that leaves a tree or
        cannot be fingerprinted)."""
        if reads.blind:
            return None, f"its record is incomplete: {reads.blind[0]}"
        own = (os.path.normpath(home), *self.ignored)
        for path in reads.written:
            norm = os.path.normpath(path)
            if not any(_within(norm, d) for d in own) and not norm.startswith(_DEVICES):
                return None, f"wrote {path}"
        tree: list[list[str]] = []
        outside: list[list[str]] = []
        for kind, paths in zip(_KINDS, (reads.opened, reads.listed, reads.probed), strict=True):
            for path in paths:
                why = self._enter(kind, path, own, tree, outside)
                if why:
                    return None, why
        return {"tree": sorted(tree), "outside": sorted(outside)}, ""

    def _enter(
        self,
        kind: str,
        path: str,
        own: tuple[str, ...],
        tree: list[list[str]],
        outside: list[list[str]],
    ) -> str:
        """Add one recorded path to ``tree`` or ``outside``; return why it cannot be, or
        ``""`` (also for a path under the child's home or an ignored directory)."""
        place = self.places.relative(path)
        if place is not None:
            full = self.places.full(*place)
            fp = fingerprint(kind, full, True) if full is not None else None
            if fp is None:
                return f"{path}: leaves its tree or cannot be read"
            tree.append([kind, *place, fp])
            return ""
        norm = os.path.normpath(path)
        if any(_within(norm, d) for d in own):
            return ""  # the run's own files: made by the run, from what it read
        if kind == "probe" and norm in self._above(own[0]):
            # ``realpath`` of a tree path probes the directories the lane made the trees
            # in: temporary, named anew for each lane run, and there whatever the patch.
            return ""
        if any(_within(norm, d) for d in _PROCESS_STATE):
            return f"read process state ({path})"
        if self.places.inside_any(path):
            return f"{path}: reaches a tree from outside it"
        fp = fingerprint(kind, path, False)
        if fp is None:
            return f"{path}: cannot be read"
        outside.append([kind, path, fp])
        return ""

    def _above(self, home: str) -> frozenset[str]:
        """Return the directories above the trees and the child's home (``/`` excluded)."""
        found: set[str] = set()
        for start in (*self.places.roots.values(), *self.places.real.values(), home):
            found.update(os.fspath(p) for p in Path(start).parents if p != Path("/"))
        return frozenset(found)

    def _write(self, offer: Offer, manifest: Manifest) -> str:
        """Write one entry (atomically) and prune its key's oldest; return ``""`` or why
        it could not be written."""
        entry = {
            "format": FORMAT,
            "description": offer.description,
            "records": list(offer.records),
            "manifest": manifest,
        }
        # Written in the records' own key order (a counterexample's arguments are shown
        # as the property named them); the MAC is over the sorted form.
        folder = self.directory / key_of(offer.description)
        return sealed.write(folder, dict(entry), self.key, PURPOSE, VARIANTS)


def _fitting(entry: dict[str, object], description: Description) -> tuple[RunResult, ...] | None:
    """Return the records of a verified entry when it is one of this format for
    ``description`` and intact (its records are a complete result for the described
    properties, in order); ``None`` otherwise."""
    if set(entry) != _ENTRY_KEYS or entry["format"] != FORMAT:
        return None
    if entry["description"] != description:
        return None
    names = tuple(description["names"])
    stored = entry["records"]
    if not isinstance(stored, list) or len(stored) != len(names):
        return None
    records: list[RunResult] = []
    for name, record in zip(names, stored, strict=True):
        if not isinstance(record, dict) or not judge.valid_run_record(record, names):
            return None
        if record["property"] != name:
            return None
        records.append(record)
    return tuple(records)


def _shaped(item: Any, size: int) -> bool:
    """Return whether a manifest item is a list of ``size`` strings."""
    return isinstance(item, list) and len(item) == size and all(isinstance(s, str) for s in item)
