"""Record, find and choose the dependency map of a base commit (docs/architecture.md §4).

Recording runs the whole suite under ``replay.tests`` on the base commit, materialised from
git into a temp dir, in the replay's own child (one pytest process that collects and runs,
``chosen``, with ``child.recorder`` loaded). Only the base's code runs, so a patch cannot
shape its map. Maps are kept in a cache directory (``default_cache``), one content-addressed file per
recording (``depmap.DependencyMap.write``), and found again by their binding (``find``).
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import InputError, PatchlaneError
from patchlane.formats.depmap import (
    MAPS,
    Binding,
    DependencyMap,
    UnverifiedMapError,
    from_recording,
    mac_path,
    read,
)
from patchlane.infra import sandbox
from patchlane.infra.cache import default_cache
from patchlane.infra.cachekey import CacheKey, load_or_create_key
from patchlane.infra.tree import materialise
from patchlane.infra.ui import Output, show
from patchlane.inputs.jsonio import atomic_write_bytes
from patchlane.inputs.paths import to_fs
from patchlane.lanes.replay import chosen
from patchlane.lanes.replay.chosen import Scope
from patchlane.lanes.replay.collect import Collected
from patchlane.lanes.replay.importblind import resolve
from patchlane.lanes.replay.results import PASSED, Runner
from patchlane.lanes.replay.run import run_tests
from patchlane.lanes.replay.runprogress import shown
from patchlane.lanes.replay.testbound import bounded
from patchlane.project.build import Build, BuildFailed, built
from patchlane.project.config import ReviewMap
from patchlane.project.importgraph import tree_roots

RECORD_TIMEOUT_S = 1800.0
# The failure note: its name's prefix, the MAC's purpose (``CacheKey.mac``), how much is read.
_FAILED = "failed-"
_FAILURE_PURPOSE = "dependency-map-failure"
_NOTE_LIMIT = 8192
# The name ``DependencyMap.write`` gives a map.
_CONTENT_NAME = re.compile(r"[0-9a-f]{64}\.json")


class MapRecordingError(PatchlaneError):
    """The base's suite could not be run to record a dependency map."""


@dataclass(frozen=True)
class Found:
    """A map looked up for a binding: the map and its file, or ``None`` and why not; and the
    entries of the base's folder that did not verify under the user's key (removed: not
    used, and reported once), as shown: below the cache directory, the base cut to 12."""

    map: DependencyMap | None
    path: Path | None
    note: str
    unverified: tuple[str, ...] = ()


def find(cache: Path, binding: Binding, key: CacheKey) -> Found:
    """Return the map in ``cache`` recorded with ``binding`` whose MAC verifies under ``key``.

    Every file of the base's folder is read; one whose MAC is missing or wrong (and a
    failure note whose MAC is) is not used, is removed and is listed in ``unverified``; one
    that does not hash to its name, is not a well-formed map, or was recorded with another
    binding is passed over, and the note says why (the last such reason) when none fits.
    Raises nothing.
    """
    folder = cache / MAPS / binding.base
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    why = f"no dependency map of base {binding.base[:12]} in {cache}"
    unverified: list[str] = []
    failure = _failure_path(cache, binding)
    if _read_note(failure, binding, key) == (True, None):
        unverified.append(_discard(failure))
    for path in files:
        try:
            found = read(path, key)
        except UnverifiedMapError:
            unverified.append(_discard(path))
            continue
        except InputError as e:
            why = f"dependency map not used: {e}"
            continue
        differences = binding.differences(found.binding)
        if differences:
            why = f"dependency map {path.name} not used: recorded with {', '.join(differences)}"
            continue
        note = f"{path.stem[:12]} of base {binding.base[:12]}"
        return Found(found, path, note, tuple(unverified))
    return Found(None, None, why, tuple(unverified))


def unverified_note(found: Found) -> str:
    """Return what the replay report's ``dependency_map`` note adds for the entries that
    did not verify (``""`` when none): ``; cache entry maps/… did not verify: not used``."""
    shown = [f"; cache entry {entry} did not verify: not used" for entry in found.unverified[:3]]
    more = len(found.unverified) - len(shown)
    return "".join(shown) + (f" (and {more} more)" if more > 0 else "")


def _discard(path: Path) -> str:
    """Remove an entry that did not verify (and a map's MAC sidecar) and return its path
    below the cache directory. Only names patchlane gives its entries, and only in a base
    folder that is not a link: nothing a planted link points at is ever removed."""
    folder = path.parent
    shown = f"{MAPS}/{folder.name[:12]}/{path.name}"
    ours = _CONTENT_NAME.fullmatch(path.name) or path.name.startswith(_FAILED)
    if ours and not folder.is_symlink() and not folder.parent.is_symlink():
        for victim in (path, mac_path(path)) if path.suffix == ".json" else (path,):
            with contextlib.suppress(OSError):
                victim.unlink()
    return shown


def _failure_path(cache: Path, binding: Binding) -> Path:
    versions = f"{binding.python}-{binding.pytest}-{binding.coverage}"
    name = _FAILED + "".join(c if c.isalnum() or c in ".-" else "_" for c in versions)
    return cache / MAPS / binding.base / name


def keep_failure(cache: Path, binding: Binding, why: str, key: CacheKey) -> None:
    """Remember that recording the map of ``binding`` failed, and why (its first 2000
    characters, sealed with ``key``'s MAC on the first line), so that later gates on that
    base do not run its whole suite again for nothing. Raises nothing: a failure that
    cannot be kept is only tried again."""
    path = _failure_path(cache, binding)
    body = why[:2000].encode("utf-8", "backslashreplace") + b"\n"
    mac = key.mac(_FAILURE_PURPOSE, f"{binding.base}/{path.name}", body)
    with contextlib.suppress(InputError):
        atomic_write_bytes(path, mac.encode("ascii") + b"\n" + body)


def _read_note(path: Path, binding: Binding, key: CacheKey) -> tuple[bool, bytes | None]:
    """Return whether the failure note ``path`` exists, and its reason's bytes when its MAC
    verifies under ``key`` (else ``None``). Raises nothing."""
    try:
        with path.open("rb") as f:
            data = f.read(_NOTE_LIMIT)
    except FileNotFoundError:
        return False, None
    except OSError:
        return True, None
    mac, _, body = data.partition(b"\n")
    identity = f"{binding.base}/{path.name}"
    if not key.verifies(_FAILURE_PURPOSE, identity, body, mac.decode("ascii", "replace")):
        return True, None
    return True, body


def read_failure(cache: Path, binding: Binding, key: CacheKey) -> str | None:
    """Return why recording the map of ``binding`` failed before, or ``None`` when it did
    not (or the note cannot be read, or its MAC does not verify under ``key``: ``find``
    reports and removes such a note). Raises nothing."""
    _, text = _read_note(_failure_path(cache, binding), binding, key)
    if text is None:
        return None
    # The base's own suite wrote the reason: one line, cut short, quoted.
    first = text.decode("utf-8", "replace").strip().splitlines()[:1]
    line = show(first[0]) if first else ""
    return repr(line[:120] + ("…" if len(line) > 120 else "")) if line else "no reason kept"


def forget_failure(cache: Path, binding: Binding) -> None:
    """Drop the note ``keep_failure`` left, once a map has been recorded. Raises nothing."""
    with contextlib.suppress(OSError):
        _failure_path(cache, binding).unlink()


def record(
    repo: Path,
    review_map: ReviewMap,
    base: str,
    *,
    seed: int,
    out: Output | None = None,
    timeout_s: float = RECORD_TIMEOUT_S,
) -> DependencyMap:
    """Run the suite of ``base`` (a commit id) once and return its dependency map.

    Raises ``GitError`` when the commit cannot be read, ``CollectionError`` when pytest
    cannot collect it, and ``MapRecordingError`` when the run ends without a recording (a
    timeout, a crash of the child).
    """
    with tempfile.TemporaryDirectory(prefix="patchlane-map-") as tmp:
        tree = Path(tmp) / "tree"
        materialise(repo, base, tree)
        sandbox.judged(tree, repo)  # shown at the repository's path (infra.origins)
        _build_base(review_map, tree)
        paths = [p for p in review_map.replay.tests if to_fs(tree, p).exists()]
        if out is not None:
            out.progress(f"replay map: collecting and running the base's tests ({base[:12]})")
        recording = Path(tmp) / "recording.json"
        collected: list[Collected] = []
        # The base's own suite under the pinned seed: no patch code runs here to be tuned.
        # One child collects and runs it (``chosen``): the suite's modules are imported once.
        with contextlib.ExitStack() as progress:
            if out is not None:  # tests done of the suite, every 10 s: a recording is long
                progress.enter_context(shown(out.progress))
            # Unbounded per test: the base is trusted, and its durations are what the
            # replay's bound is derived from (``testbound``).
            progress.enter_context(bounded(None))
            if paths:
                scope = Scope(extra_paths=tuple(paths), doctest_only=(), only_files=None)
                with chosen.start(tree, scope, Runner(seed, timeout_s), recording) as session:
                    collected.append(session.collected())
                    everything = collected[0].nodeids
                    if out is not None:
                        out.progress(f"replay map: running {len(everything)} test(s) with coverage")
                    run = session.run(everything).run
            else:  # nothing to collect: an empty suite, recorded as such
                collected.append(Collected((), "none", 0.0))
                run = run_tests(tree, hash_seed=seed, timeout_s=timeout_s, record=recording)
        if run is None or run.timed_out or not recording.is_file():
            timed_out = run is not None and run.timed_out
            why = "timed out" if timed_out else "ended without writing its recording"
            lines = run.output_tail.decode("utf-8", "replace") if run is not None else ""
            tail = lines.strip().splitlines()[-1:]
            raise MapRecordingError(
                f"replay map: the base's suite {why}" + (f": {show(tail[0])}" if tail else "")
            )
        data = json.loads(recording.read_text(encoding="utf-8"))
        nodeids = collected[0].nodeids
        data["blind"] = _blind_at_import(data, tree, review_map, nodeids)
    passed = run.ids(PASSED) if not run.problems else ()
    slowest = max(run.durations.values(), default=None)
    return from_recording(Binding.here(base), nodeids, data, passed, slowest)


def _blind_at_import(
    data: dict[str, object], tree: Path, review_map: ReviewMap, tests: tuple[str, ...]
) -> dict[str, str]:
    """The recording's blind contexts, with each process start at import charged to the
    tests that imported its module (``importblind``), by the base's own import roots."""
    lane = review_map.property
    return resolve(data, tree, tree_roots(tree, lane.pythonpath if lane else ()), tests)


def _build_base(review_map: ReviewMap, tree: Path) -> None:
    """Run the map's build command in the base's ``tree`` before its suite runs. Raises
    ``MapRecordingError`` when it fails (selection then keeps the static rules)."""
    try:
        built(Build.of(review_map.replay), tree, "base")
    except BuildFailed as e:
        raise MapRecordingError(f"replay map: {e}") from e


def obtain(
    repo: Path,
    review_map: ReviewMap,
    base: str,
    *,
    mode: str,
    cache: Path | None,
    seed: int,
    out: Output,
    timeout_s: float = RECORD_TIMEOUT_S,
) -> tuple[DependencyMap | None, str]:
    """Return the dependency map of ``base`` for selection, and a note on it.

    ``mode`` ``off``: none. ``auto``: the one in ``cache`` (``default_cache`` when ``None``)
    recorded with this environment's binding whose MAC verifies under the user's cache key,
    else one recorded now (``record``: the base's whole suite runs once) and written there.
    An entry that did not verify is said on stderr and in the note, and never used. When
    recording fails the map is ``None`` and the note says why: selection then keeps to the
    static rules; ``timeout_s`` bounds the recording's wall clock. Raises nothing but what ``record`` raises for a base that cannot be read
    (``GitError``), and ``CacheKeyError`` when the cache key cannot be read or made.
    """
    if mode == "off":
        return None, "off"
    where = cache if cache is not None else default_cache()
    key = load_or_create_key(where)
    binding = Binding.here(base)
    found = find(where, binding, key)
    for entry in found.unverified:
        out.progress(f"replay: cache entry {entry} did not verify: not used")
    rejected = unverified_note(found)
    if found.map is not None:
        return found.map, found.note + rejected
    failed = read_failure(where, binding, key)
    if failed is not None:
        return None, (
            f"none (recording failed before, with these versions: {failed}; "
            f"`patchlane replay map --base {base[:12]}` records again){rejected}"
        )
    out.progress("replay: recording the base's dependency map (first use: its suite runs once)")
    try:
        recorded = record(repo, review_map, base, seed=seed, out=out, timeout_s=timeout_s)
    except PatchlaneError as e:
        keep_failure(where, binding, str(e), key)
        return None, f"none ({found.note}; recording failed: {e}){rejected}"
    try:
        path = recorded.write(where, key)
    except InputError as e:
        return recorded, f"recorded now, not kept ({e}){rejected}"
    # A map passed over (changed bytes, another binding) is worth a reviewer's notice.
    passed_over = f" ({found.note})" if "not used" in found.note else ""
    return recorded, f"{path.stem[:12]} of base {base[:12]}, recorded now{passed_over}{rejected}"
