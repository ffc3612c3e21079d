"""Record, find and choose the dependency map of a base commit (docs/architecture.md §4).

Recording runs the whole suite under ``replay.tests`` on the base commit, materialised from
git into a temp dir, in the replay's own children (collection, then one run with
``lanes.replay.recorder`` loaded). Only the base's code runs, so a patch cannot shape its
map. Maps are kept in a cache directory (``default_cache``), one content-addressed file per
recording (``depmap.DependencyMap.write``), and found again by their binding (``find``).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from patchlane.cache import default_cache
from patchlane.config import ReviewMap
from patchlane.errors import InputError, PatchlaneError
from patchlane.inputs.jsonio import atomic_write_bytes
from patchlane.inputs.paths import to_fs
from patchlane.lanes.replay.depmap import MAPS, Binding, DependencyMap, from_recording, read
from patchlane.ui import Output, show

RECORD_TIMEOUT_S = 1800.0


class MapRecordingError(PatchlaneError):
    """The base's suite could not be run to record a dependency map."""


@dataclass(frozen=True)
class Found:
    """A map looked up for a binding: the map and its file, or ``None`` and why not."""

    map: DependencyMap | None
    path: Path | None
    note: str


def find(cache: Path, binding: Binding) -> Found:
    """Return the map in ``cache`` recorded with ``binding``.

    Every file of the base's folder is read; one that does not hash to its name, is not a
    well-formed map, or was recorded with another binding is passed over, and the note says
    why (the last such reason) when none fits. Raises nothing.
    """
    folder = cache / MAPS / binding.base
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    why = f"no dependency map of base {binding.base[:12]} in {cache}"
    for path in files:
        try:
            found = read(path)
        except InputError as e:
            why = f"dependency map not used: {e}"
            continue
        differences = binding.differences(found.binding)
        if differences:
            why = f"dependency map {path.name} not used: recorded with {', '.join(differences)}"
            continue
        return Found(found, path, f"{path.stem[:12]} of base {binding.base[:12]}")
    return Found(None, None, why)


def _failure_path(cache: Path, binding: Binding) -> Path:
    versions = f"{binding.python}-{binding.pytest}-{binding.coverage}"
    name = "failed-" + "".join(c if c.isalnum() or c in ".-" else "_" for c in versions)
    return cache / MAPS / binding.base / name


def keep_failure(cache: Path, binding: Binding, why: str) -> None:
    """Remember that recording the map of ``binding`` failed, and why, so that later gates on
    that base do not run its whole suite again for nothing. Raises nothing: a failure that
    cannot be kept is only tried again."""
    with contextlib.suppress(InputError):
        atomic_write_bytes(_failure_path(cache, binding), why.encode("utf-8") + b"\n")


def read_failure(cache: Path, binding: Binding) -> str | None:
    """Return why recording the map of ``binding`` failed before, or ``None`` when it did
    not (or the note cannot be read). A forged note only keeps selection to the static
    rules, the safe side. Raises nothing."""
    try:
        text = _failure_path(cache, binding).read_bytes()[:2000]
    except OSError:
        return None
    # Any code running as this user could have written it: one line, cut short, quoted.
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
    from patchlane.lanes.replay.collect import collect
    from patchlane.lanes.replay.run import PASSED, child_env, run_tests
    from patchlane.tree import materialise

    with tempfile.TemporaryDirectory(prefix="patchlane-map-") as tmp:
        tree = Path(tmp) / "tree"
        materialise(repo, base, tree)
        paths = [p for p in review_map.replay.tests if to_fs(tree, p).exists()]
        if out is not None:
            out.progress(f"replay map: collecting the base's tests ({base[:12]})")
        collected = collect(tree, paths, timeout_s=timeout_s, env=child_env(seed))
        if out is not None:
            out.progress(f"replay map: running {len(collected.nodeids)} test(s) with coverage")
        recording = Path(tmp) / "recording.json"
        # The base's own suite under the pinned seed: no patch code runs here to be tuned.
        run = run_tests(
            tree, nodeids=collected.nodeids, hash_seed=seed, timeout_s=timeout_s, record=recording
        )
        if run.timed_out or not recording.is_file():
            why = "timed out" if run.timed_out else "ended without writing its recording"
            tail = run.output_tail.decode("utf-8", "replace").strip().splitlines()[-1:]
            raise MapRecordingError(
                f"replay map: the base's suite {why}" + (f": {show(tail[0])}" if tail else "")
            )
        data = json.loads(recording.read_text(encoding="utf-8"))
    passed = run.ids(PASSED) if not run.problems else ()
    return from_recording(Binding.here(base), collected.nodeids, data, passed)


def obtain(
    repo: Path,
    review_map: ReviewMap,
    base: str,
    *,
    mode: str,
    cache: Path | None,
    seed: int,
    out: Output,
) -> tuple[DependencyMap | None, str]:
    """Return the dependency map of ``base`` for selection, and a note on it.

    ``mode`` ``off``: none. ``auto``: the one in ``cache`` (``default_cache`` when ``None``)
    recorded with this environment's binding, else one recorded now (``record``: the base's
    whole suite runs once) and written there. When recording fails the map is ``None`` and
    the note says why: selection then keeps to the static rules. Raises nothing but what
    ``record`` raises for a base that cannot be read (``GitError``).
    """
    if mode == "off":
        return None, "off"
    where = cache if cache is not None else default_cache()
    found = find(where, Binding.here(base))
    if found.map is not None:
        return found.map, found.note
    binding = Binding.here(base)
    failed = read_failure(where, binding)
    if failed is not None:
        return None, (
            f"none (recording failed before, with these versions: {failed}; "
            f"`patchlane replay map --base {base[:12]}` records again)"
        )
    out.progress("replay: recording the base's dependency map (first use: its suite runs once)")
    try:
        recorded = record(repo, review_map, base, seed=seed, out=out)
    except PatchlaneError as e:
        keep_failure(where, binding, str(e))
        return None, f"none ({found.note}; recording failed: {e})"
    try:
        path = recorded.write(where)
    except InputError as e:
        return recorded, f"recorded now, not kept ({e})"
    # A map passed over (changed bytes, another binding) is worth a reviewer's notice.
    passed_over = f" ({found.note})" if "not used" in found.note else ""
    return recorded, f"{path.stem[:12]} of base {base[:12]}, recorded now{passed_over}"
