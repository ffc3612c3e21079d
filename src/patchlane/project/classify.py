"""Classify a patch: which files changed, which lanes they need, what is unmapped.

The map that decides is the base's (docs/architecture.md §2): a patch that edits the map to
cover or ignore its own change is still judged by the map it started from, and the edit is
listed as a control-plane change for a person.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from patchlane.errors import MapError
from patchlane.formats.classify_file import LANES, LaneEntry, LaneTable, describe

# ``classify.json``'s types, by the names the gate and the commands import them under.
from patchlane.formats.classify_file import ChangedFile as ChangedFile
from patchlane.formats.classify_file import ClassificationSummary as ClassificationSummary
from patchlane.formats.classify_file import ControlChange as ControlChange
from patchlane.formats.facts import BLOCKING_KINDS, HARNESS, REPLAY_COMMAND
from patchlane.infra import git
from patchlane.inputs.committed import decode_utf8, read_committed_text
from patchlane.inputs.paths import path_problem, under_any
from patchlane.project import harness, importgraph
from patchlane.project.collects import Collects, collects
from patchlane.project.config import DEFAULT_MAP, ReviewMap, parse_review_map
from patchlane.project.controlfiles import control_kinds as control_kinds
from patchlane.project.controlfiles import sectioned_harness
from patchlane.project.patch import Patch
from patchlane.project.replay_command import ReplayCommand
from patchlane.project.teststores import harness_store


@dataclass(frozen=True)
class MapSource:
    """Where the deciding map came from: ``base``, ``head`` (base had none) or ``file``."""

    review_map: ReviewMap
    path: str | None
    source: str
    changed: bool
    # Why the patch's own map (changed, read at the head) does not load, or ``None``: the
    # base's map still decides, and a person must look (rule 6, docs/architecture.md §2).
    head_problem: str | None = None


@dataclass(frozen=True)
class FileClass:
    status: str
    path: str
    old_path: str | None
    lanes: tuple[str, ...]
    ignored_reason: str | None
    control: tuple[str, ...]
    # Why the project's pytest collects this file although an ``ignore`` entry names it
    # (``project.collects``): it is a test file of the replay lane, never ignored (§2).
    collected: str | None = None


@dataclass(frozen=True)
class LaneApplicability:
    applicable: bool
    reason: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class Classification:
    base: str
    head: str
    merge_base: str
    map_source: MapSource
    files: tuple[FileClass, ...]
    lanes: dict[str, LaneApplicability]
    unmapped: tuple[str, ...]
    control_plane: tuple[tuple[str, str], ...]
    map_complete: bool
    map_reason: str
    # (path, kind) -> how the rule found it (``imported by tests/conftest.py``).
    control_why: dict[tuple[str, str], str] = field(default_factory=dict)
    # Changed paths (both sides of renames) under ``lanes.replay.paths`` that no property
    # lane covers: the base's tests alone judge them (``judged_by_tests_alone``).
    tests_alone: tuple[str, ...] = ()
    # The patch file the head commit was made from (``gate --patch``), as the user named it.
    applied_from: str | None = None

    @property
    def harness_changed(self) -> tuple[str, ...]:
        """Return the changed control files that keep the verdict at ``undecided``, each
        as ``path (kind: why)``."""
        return tuple(
            describe(path, kind, self.control_why.get((path, kind)))
            for path, kind in self.control_plane
            if kind in BLOCKING_KINDS
        )

    @property
    def changed_paths(self) -> frozenset[str]:
        """Every path the patch touches, both sides of renames."""
        return frozenset(p for f in self.files for p in (f.path, f.old_path) if p is not None)

    @cached_property
    def patch(self) -> Patch:
        """The patch the lanes judge: these commits, changed paths and deciding map (built
        once, so that every lane is handed the same value)."""
        return Patch(
            base=self.base,
            head=self.head,
            merge_base=self.merge_base,
            changed_paths=self.changed_paths,
            review_map=self.map_source.review_map,
        )

    def summary(self) -> ClassificationSummary:
        """Return ``classify.json``: what the verdict and the review note read back (the
        same as ``ClassificationSummary.from_json`` of ``to_json``)."""
        lanes = {
            name: LaneEntry(
                "applicable" if lane.applicable else "not_applicable", lane.reason, lane.files
            )
            for name, lane in self.lanes.items()
        }
        return ClassificationSummary(
            base=self.base,
            head=self.head,
            merge_base=self.merge_base,
            applied_from=self.applied_from,
            map_path=self.map_source.path,
            map_source=self.map_source.source,
            map_changed=self.map_source.changed,
            head_map_problem=self.map_source.head_problem,
            changed=tuple(
                ChangedFile(
                    f.path, f.status, f.old_path, f.lanes, f.ignored_reason, f.collected, f.control
                )
                for f in self.files
            ),
            lanes=LaneTable(**lanes),
            unmapped=self.unmapped,
            control_plane=tuple(
                ControlChange(path, kind, self.control_why.get((path, kind)))
                for path, kind in self.control_plane
            ),
            map_complete=self.map_complete,
            map_reason=self.map_reason,
            tests_alone=self.tests_alone,
        )

    def to_json(self) -> dict[str, object]:
        """Return ``classify.json`` as JSON-ready data, keys in a fixed order."""
        return self.summary().to_json()


def map_path_in_repo(repo: Path, map_option: str | None) -> tuple[str | None, Path | None]:
    """Return ``(repo-relative path, None)`` for a map inside the repository, or
    ``(None, filesystem path)`` for a map file outside it (a trusted file of the user's)."""
    if map_option is None:
        return DEFAULT_MAP, None
    absolute = Path(os.path.abspath(map_option))  # noqa: PTH100 - lexical, keeps the last link
    # Resolve the directories (so that a symlinked temp dir or ``..`` compare right) but
    # not the file itself: a map named through a symlink in the work tree is judged as what
    # the base commit stores at that path (a symlink, refused), never as the link's target.
    located = absolute.parent.resolve() / absolute.name
    try:
        rel = located.relative_to(repo.resolve())
    except ValueError:
        return None, absolute
    return rel.as_posix(), None


def load_map_file(path: Path, label: str | None = None) -> ReviewMap:
    """Read and validate a review map from the filesystem. Raises ``MapError``."""
    label = label or os.fspath(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise MapError(label, "no such file (run 'patchlane init' to scaffold one)") from e
    except OSError as e:
        raise MapError(label, f"cannot read: {e.strerror}") from e
    return parse_review_map(decode_utf8(data, label, MapError), label)


def load_map_at(repo: Path, commit: str, rel: str, revision: str = "commit") -> ReviewMap | None:
    """Return the map stored at ``rel`` in ``commit``, or ``None`` when it has none.

    Raises ``MapError`` when it is there but is not a regular file or is malformed. The
    error stays ``FILE:LINE: what`` (so editors and people can jump to it) and ends by
    naming the revision it was read from (``revision`` is e.g. ``base``).
    """
    where = f"(the map in {revision} {commit[:12]})"
    text = read_committed_text(repo, commit, rel, MapError, where)
    if text is None:
        return None
    try:
        return parse_review_map(text, rel)
    except MapError as e:
        raise MapError(e.file, f"{e.message} {where}", e.line) from e


def deciding_map(
    repo: Path, map_option: str | None, base: str, head: str, changed: frozenset[str]
) -> MapSource:
    """Return the map that decides for this patch: the base's, else the head's.

    Raises ``MapError`` when neither revision has one or the deciding one is malformed.
    """
    rel, outside = map_path_in_repo(repo, map_option)
    if outside is not None:  # a trusted file of the user's, outside the repository
        return MapSource(load_map_file(outside), os.fspath(outside), "file", False)
    if rel is None:  # pragma: no cover - map_path_in_repo returns one of the two
        raise MapError(DEFAULT_MAP, "no review map path")
    problem = path_problem(rel, directory_ok=False)
    if problem:
        raise MapError(rel, problem)
    at_base = load_map_at(repo, base, rel, "base")
    if at_base is not None:
        touched = rel in changed
        problem = _head_map_problem(repo, head, rel) if touched else None
        return MapSource(at_base, rel, "base", touched, problem)
    at_head = load_map_at(repo, head, rel, "head")
    if at_head is None:
        raise MapError(rel, "no review map at base or head (run 'patchlane init' to scaffold one)")
    return MapSource(at_head, rel, "head", True)


def _head_map_problem(repo: Path, head: str, rel: str) -> str | None:
    """Return why the head's map at ``rel`` does not load (``FILE[:LINE]: what``), or
    ``None`` when it loads or is absent. The base's map decides, so a bad head map is not
    the user's input error (no exit 2): it is the patch's, and a review event."""
    try:
        load_map_at(repo, head, rel, "head")
    except MapError as e:
        return str(e)
    return None


def property_module_prefixes(review_map: ReviewMap) -> tuple[str, ...]:
    """Return the repository paths that hold the property modules and their packages."""
    lane = review_map.property
    if lane is None:
        return ()
    roots = ("", "src/", *(p if p.endswith("/") else p + "/" for p in lane.pythonpath))
    out: list[str] = []
    for module in lane.modules:
        top = module.split(".")[0]
        for root in roots:
            if "." in module:
                out.append(f"{root}{top}/")
            else:
                out.extend((f"{root}{top}.py", f"{root}{top}/"))
    return tuple(dict.fromkeys(out))


def lanes_for(path: str, review_map: ReviewMap, props: tuple[str, ...]) -> list[str]:
    """Return the lanes one path needs under ``review_map``."""
    lanes = []
    if review_map.property is not None and (
        under_any(path, review_map.property.paths) or under_any(path, props)
    ):
        lanes.append("property")
    if review_map.fixture is not None and (
        under_any(path, review_map.fixture.paths) or path in review_map.fixture.locks
    ):
        lanes.append("fixture")
    if review_map.freeze is not None and path == review_map.freeze.registry:
        lanes.append("freeze")
    # ``replay.paths``: code no property covers, judged by the replay alone (the base's
    # tests that reach it); covered, so rule 5 leaves it alone, never a pass of its own.
    if under_any(path, review_map.replay.tests) or under_any(path, review_map.replay.paths):
        lanes.append("replay")
    return lanes


def judged_by_tests_alone(path: str, review_map: ReviewMap, props: tuple[str, ...]) -> bool:
    """Return whether ``path`` is code the map leaves to the replay alone: under
    ``lanes.replay.paths`` and in no property lane's paths (no property oracle judges it,
    only the base's tests that reach it)."""
    return under_any(path, review_map.replay.paths) and "property" not in lanes_for(
        path, review_map, props
    )


def classify(
    repo: Path,
    base_ref: str,
    head_ref: str,
    map_option: str | None,
    applied_from: str | None = None,
    *,
    replay_command: ReplayCommand | None = None,
) -> Classification:
    """Classify the patch ``merge-base(base, head)..head`` (``applied_from``: the patch file
    the head commit was made from, recorded for the evidence; ``replay_command``: the
    gate's ``--replay`` command, whose named files are control files).

    Returns a ``Classification``. Raises ``GitError`` for an unknown ref or a missing merge
    base, ``MapError`` for a missing or malformed deciding map.
    """
    base = git.resolve_commit(repo, base_ref)
    head = git.resolve_commit(repo, head_ref)
    mb = git.merge_base(repo, base, head)
    changes = git.diff_changes(repo, mb, head)
    touched = frozenset(p for c in changes for p in (c.path, c.old_path) if p is not None)
    source = deciding_map(repo, map_option, base, head, touched)
    review_map = source.review_map
    snapshots = (harness.snapshot(repo, mb), harness.snapshot(repo, head))
    sorter = _Sorter(
        repo=repo,
        commits=(mb, head),
        review_map=review_map,
        props=property_module_prefixes(review_map),
        map_rel=source.path if source.source != "file" else None,
        found=_found_control(repo, snapshots, changes, review_map),
        named=replay_command.named_paths(repo) if replay_command is not None else frozenset(),
        collects=collects(repo, snapshots[0]),
    )
    files = [sorter.file(change) for change in changes]
    if sorter.collected:
        source = dataclasses.replace(source, review_map=_with_tests(review_map, sorter.collected))
        review_map = source.review_map
    unmapped = tuple(sorted(set(sorter.unmapped)))
    complete, why = _coverage(files, unmapped, bool(changes))
    alone = sorted({p for p in touched if judged_by_tests_alone(p, review_map, sorter.props)})
    return Classification(
        base=base,
        head=head,
        merge_base=mb,
        map_source=source,
        files=tuple(files),
        lanes=_lane_summary(review_map, files, tuple(alone)),
        unmapped=unmapped,
        control_plane=tuple(sorted(sorter.control)),
        map_complete=complete,
        map_reason=why,
        control_why=sorter.whys,
        applied_from=applied_from,
        tests_alone=tuple(alone),
    )


@dataclass
class _Sorter:
    """Sorts changed files into lanes and control kinds, collecting what is unmapped and
    each control file's route as it goes."""

    repo: Path
    commits: tuple[str, str]  # the merge base and the head
    review_map: ReviewMap
    props: tuple[str, ...]
    map_rel: str | None
    found: dict[str, str]  # harness files found by route (``_found_control``)
    named: frozenset[str]  # the paths the replay command names (``ReplayCommand``)
    collects: Collects  # what the base's pytest collects (``project.collects``)
    unmapped: list[str] = field(default_factory=list)
    # Paths whose harness kind comes from a route in ``found``, not from their name.
    routed: set[str] = field(default_factory=set)
    # Paths an ``ignore`` entry names that the base's pytest collects: test files.
    collected: list[str] = field(default_factory=list)
    control: list[tuple[str, str]] = field(default_factory=list)
    whys: dict[tuple[str, str], str] = field(default_factory=dict)

    def kinds(self, side: str) -> list[str]:
        """Return the control kinds of one path, noting the harness routes found."""
        kinds = control_kinds(side, self.review_map, self.map_rel, self.props)
        if HARNESS not in kinds and sectioned_harness(self.repo, self.commits, side):
            kinds.append(HARNESS)
            self.whys[(side, HARNESS)] = "holds pytest configuration"
        if HARNESS not in kinds and side in self.found:
            kinds.append(HARNESS)
            self.whys[(side, HARNESS)] = self.found[side]
            self.routed.add(side)
        if side in self.named:
            kinds.append(REPLAY_COMMAND)
            self.whys[(side, REPLAY_COMMAND)] = "named by --replay"
        return kinds

    def file(self, change: git.Change) -> FileClass:
        """Return one changed file's class (both sides of a rename count)."""
        sides = [change.path] + ([change.old_path] if change.old_path else [])
        lanes: list[str] = []
        kinds: list[str] = []
        ignored: str | None = None
        collected: str | None = None
        for side in sides:
            side_lanes = lanes_for(side, self.review_map, self.props)
            side_kinds = self.kinds(side)
            reason = next(
                (e.reason for e in self.review_map.ignore if under_any(side, (e.path,))), None
            )
            why = self.collects.why(side) if reason is not None else None
            if not side_lanes and not side_kinds and why is not None:
                # An ignore entry never covers what the suite collects: a test file (§2).
                side_lanes = ["replay"]
                collected = f"{why}; the map's ignore entry ({reason}) does not cover it"
                self.collected.append(side)
            # A harness route (an import from the harness, a shadow, a test that stores) is
            # what the file's content does, not the map covering it: such a file no lane
            # and no ignore entry covers is unmapped too, so rule 5 says "extend the map"
            # beside the harness reason (docs/architecture.md §1).
            named = [k for k in side_kinds if not (k == HARNESS and side in self.routed)]
            if not side_lanes and not named and reason is None:
                self.unmapped.append(side)
            elif not side_lanes and not side_kinds:
                ignored = reason
            lanes.extend(x for x in side_lanes if x not in lanes)
            for kind in side_kinds:
                if (side, kind) not in self.control:
                    self.control.append((side, kind))
                if kind not in kinds:
                    kinds.append(kind)
        return FileClass(
            status=change.status,
            path=change.path,
            old_path=change.old_path,
            lanes=tuple(lane for lane in LANES if lane in lanes),
            ignored_reason=ignored,
            control=tuple(kinds),
            collected=collected,
        )


def _with_tests(review_map: ReviewMap, paths: list[str]) -> ReviewMap:
    """``review_map`` with ``paths`` (files the suite collects) among the replay's test
    paths, so that every lane judges them as the test files they are: in the slice as
    changed test files, their base versions run against the head (edited expectations,
    deleted tests), run apart from the base's tests."""
    replay = review_map.replay
    tests = (*replay.tests, *(p for p in dict.fromkeys(paths) if p not in replay.tests))
    return dataclasses.replace(review_map, replay=dataclasses.replace(replay, tests=tests))


# The three ways to cover a path (rule 5's advice): a property oracle, the base's tests
# alone, or none at all with a reason. Adding an ignore entry is only the last of them.
EXTEND_THE_MAP = (
    "extend the map: name each under lanes.property.paths with properties that check it, "
    "under lanes.replay.paths to judge it by the base's tests alone, or in ignore with a reason"
)


def _coverage(files: list[FileClass], unmapped: tuple[str, ...], changed: bool) -> tuple[bool, str]:
    """Return whether the map covers the diff (rule 5), and why."""
    if unmapped:
        return False, (
            f"{len(unmapped)} changed path(s) no lane, lanes.replay.paths or ignore entry "
            f"covers: {EXTEND_THE_MAP}"
        )
    if not changed:
        return False, "the patch changes no file"
    if not any(f.lanes or f.control for f in files):
        return False, "the patch touches no mapped path (only ignored ones): extend the map"
    return True, "every changed path is covered by a lane or an ignore entry"


def _found_control(
    repo: Path,
    snapshots: tuple[harness.Snapshot, harness.Snapshot],
    changes: list[git.Change],
    review_map: ReviewMap,
) -> dict[str, str]:
    """Return the harness files of the merge base and the head (``snapshots``; the base's
    reason first) and the added modules that shadow, each with why (see
    ``patchlane.project.harness``)."""
    base, head = snapshots
    found = harness.harness_files(repo, head, review_map)
    found.update(harness.harness_files(repo, base, review_map))
    added = [c.path for c in changes if c.status[:1] in ("A", "C", "R")]
    settings = harness.pytest_settings(repo, base)
    for path, why in harness.shadowing(base, head, added, review_map, settings).items():
        found.setdefault(path, why)
    kept = [c.path for c in changes if c.status[:1] != "D"]
    for path, why in _storing_tests(repo, head, kept, review_map, settings).items():
        found.setdefault(path, why)
    return found


def _storing_tests(
    repo: Path,
    head: harness.Snapshot,
    paths: list[str],
    review_map: ReviewMap,
    settings: harness.PytestSettings,
) -> dict[str, str]:
    """The patch's test files (under ``replay.tests``, or test modules by the base's
    ``python_files``) that store into the code under test or into pytest (``teststores``),
    each with why."""
    tests = review_map.replay.tests
    wanted = [
        p
        for p in paths
        if p.endswith(".py")
        and p.rsplit("/", 1)[-1] != "conftest.py"
        and (under_any(p, tests) or settings.modules.is_test_module(p))
        and p in head.files
        and head.files[p].mode in git.REGULAR_MODES
    ]
    if not wanted:
        return {}
    roots = harness.import_roots(head, review_map, settings)
    packages = {n.split(".", 1)[0] for p in head.python for n in importgraph.module_names(p, roots)}
    found: dict[str, str] = {}
    blobs = git.read_blobs(repo, [head.files[p].oid for p in wanted])
    for path, data in zip(wanted, blobs, strict=True):
        where = harness_store(data, path, packages)
        if where is not None:
            found[path] = (
                f"test code that stores into the code under test or pytest ({where}): the "
                "base's tests beside it would not run as the project's suite runs them"
            )
    return found


# How many paths the property lane's reason names (classify.json lists them all).
_ALONE_SHOWN = 10


def tests_alone_reason(paths: tuple[str, ...]) -> str:
    """Return the property lane's reason for a patch whose code ``paths`` only the replay
    judges (``lanes.replay.paths``): no property covers them."""
    shown = ", ".join(paths[:_ALONE_SHOWN])
    if len(paths) > _ALONE_SHOWN:
        shown += f" and {len(paths) - _ALONE_SHOWN} more"
    return (
        f"no property covers {shown}: lanes.replay.paths names them, so the base's tests "
        "alone judge them (the replay)"
    )


def _on_new_bytes(configured: dict[str, bool], out: dict[str, LaneApplicability]) -> bool:
    """Whether the property lane runs on changed fixture bytes (it exists, and the fixture
    lane, summarised first, applies)."""
    return configured["property"] and out["fixture"].applicable


def _lane_summary(
    review_map: ReviewMap, files: list[FileClass], tests_alone: tuple[str, ...]
) -> dict[str, LaneApplicability]:
    """Return each lane's applicability to the changed ``files``; the property lane's reason
    names the ``tests_alone`` paths (``judged_by_tests_alone``) when it has nothing else to
    look at."""
    configured = {
        "property": review_map.property is not None,
        "fixture": review_map.fixture is not None,
        "freeze": review_map.freeze is not None,
        "replay": True,
    }
    out: dict[str, LaneApplicability] = {}
    # The fixture lane is summarised first: the property lane's applicability depends on it.
    for lane in ("fixture", "property", "freeze", "replay"):
        hits = tuple(
            sorted({p for f in files if lane in f.lanes for p in (f.path, f.old_path) if p})
        )
        if lane == "property" and tests_alone and not hits and not _on_new_bytes(configured, out):
            out[lane] = LaneApplicability(False, tests_alone_reason(tests_alone), ())
        elif not configured[lane]:
            out[lane] = LaneApplicability(False, f"the map has no {lane} lane", ())
        elif hits:
            out[lane] = LaneApplicability(True, f"{len(hits)} changed path(s) in this lane", hits)
        elif lane == "property" and out["fixture"].applicable:
            # docs/architecture.md §2: after a lock update "the property lane still runs on the new
            # bytes" -- properties may read fixtures, and a new lock grandfathers nothing.
            reason = "fixture bytes changed: the properties run on the new bytes"
            out[lane] = LaneApplicability(True, reason, ())
        else:
            reason = f"no changed path is in the {lane} lane's paths"
            out[lane] = LaneApplicability(False, reason, ())
    return {lane: out[lane] for lane in LANES}
