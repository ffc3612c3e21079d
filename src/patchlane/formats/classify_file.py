"""``classify.json``, the gate's classification of a patch (docs/architecture.md §4): one type,
``ClassificationSummary``, that the gate writes (``Classification.summary``) and that the
verdict and the review note read back, declared once as a model (``inputs.model``).

What the file says beyond what the verdict needs (each changed file's lanes, each lane's
applicability) is kept too, so that what is written is what is read. Only ``map_complete``
is required: a file written by hand for ``patchlane verdict --classify`` may say no more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from patchlane.formats.envelope import document_schema, read_report, report_document
from patchlane.formats.facts import BLOCKING_KINDS, HARNESS, REPLAY_COMMAND, PatchFacts
from patchlane.inputs.fields import Document, Fields
from patchlane.inputs.model import Group, from_fields, schema_parts, spec, to_data

FILE_NAME = "classify.json"
LANES = ("property", "fixture", "freeze", "replay")
# Every kind of control file (``project.classify.control_kinds``, and the harness routes).
CONTROL_KINDS = (
    "review map", "fixture lock", "freeze registry", "property module", HARNESS,
    "committed bytecode", "checkout attributes", REPLAY_COMMAND,
)  # fmt: skip
MAP_SOURCES = ("base", "head", "file")
APPLICABILITY = ("applicable", "not_applicable")

# A key written only when it holds something, and then never ``null``.
_OPTIONAL = spec(write="notnone", null=False)
# The deciding map: where it came from, and whether the patch changed it.
_MAP = Group("map", "the deciding review map: its path, where it was read, whether the patch "
             "changed it", optional=True)  # fmt: skip


@dataclass(frozen=True)
class ControlChange:
    """A changed control file: its path, its kind, and the route that made it one (``None``
    when the kind says it all, as for ``conftest.py``)."""

    path: str
    kind: str = field(metadata=spec(choices=CONTROL_KINDS))
    why: str | None = field(metadata=spec(absent=None, null=False, write="nonempty"))


@dataclass(frozen=True)
class ChangedFile:
    """One changed file: its path, git's status letter, the path it was renamed or copied
    from (``None`` otherwise), the lanes that look at it, why an ``ignore`` entry leaves it
    out, why the project's pytest collects it all the same, and its control-plane kinds."""

    path: str
    status: str
    old_path: str | None = None
    lanes: tuple[str, ...] = ()
    ignored: str | None = field(default=None, metadata=_OPTIONAL)
    collected: str | None = field(
        default=None,
        metadata=spec(
            write="notnone",
            null=False,
            description="why the project's pytest collects this file although an ignore "
            "entry names it: a test file of the replay lane",
        ),
    )
    control_plane: tuple[str, ...] = field(default=(), metadata=spec(write="nonempty"))


@dataclass(frozen=True)
class LaneEntry:
    """Whether one lane applies to the patch, why, and the changed paths in its paths."""

    status: str = field(metadata=spec(choices=APPLICABILITY))
    reason: str
    files: tuple[str, ...]

    @property
    def applicable(self) -> bool:
        """Return whether the lane applies."""
        return self.status == "applicable"


@dataclass(frozen=True)
class LaneTable:
    """Each lane's applicability (``None``: the file does not say)."""

    property: LaneEntry | None = field(default=None, metadata=_OPTIONAL)
    fixture: LaneEntry | None = field(default=None, metadata=_OPTIONAL)
    freeze: LaneEntry | None = field(default=None, metadata=_OPTIONAL)
    replay: LaneEntry | None = field(default=None, metadata=_OPTIONAL)


def _listed(top: Fields, key: str, shape: str, needs: tuple[str, ...]) -> list[Fields]:
    """The objects listed at ``key``, each holding a string at every key of ``needs``.
    Raises ``'KEY' must be a list of {SHAPE}`` on the line of the first that does not."""
    out = []
    for index, item in enumerate(top.sequence(key)):
        if not (isinstance(item, dict) and all(isinstance(item.get(k), str) for k in needs)):
            raise top.doc.error_at((*top.path, key, index), f"'{key}' must be a list of {shape}")
        out.append(top.element(key, index))
    return out


def _read_files(top: Fields, key: str) -> tuple[ChangedFile, ...]:
    entries = _listed(top, key, "{path, status, old_path}", ())
    return tuple(from_fields(ChangedFile, entry) for entry in entries)


def _read_details(top: Fields, key: str) -> tuple[ControlChange, ...]:
    entries = _listed(top, key, "{path, kind}", ("path", "kind"))
    return tuple(from_fields(ControlChange, entry) for entry in entries)


@dataclass(frozen=True)
class ClassificationSummary:
    """``classify.json``: the commits, the deciding map, the changed files and the lanes
    they need, what the map leaves out (``unmapped``), the control-plane changes, whether
    the map covers the diff (``map_complete``, and why) and the paths the base's tests alone
    judge. ``control_paths`` and ``harness_changed`` are computed from ``control_plane``."""

    base: str | None = field(default=None, metadata=_OPTIONAL)
    head: str | None = field(default=None, metadata=_OPTIONAL)
    merge_base: str | None = field(default=None, metadata=_OPTIONAL)
    # The patch file the head commit was made from (``gate --patch``), as the user named it.
    applied_from: str | None = field(
        default=None,
        metadata=spec(
            write="notnone",
            null=False,
            description="the patch file the head commit was applied from (gate --patch): "
            "the name the user gave, or stdin",
        ),
    )
    map_path: str | None = field(
        default=None, metadata=spec(key="path", group=_MAP, when="map_source")
    )
    map_source: str | None = field(
        default=None,
        metadata=spec(
            key="source", group=_MAP, required=True, null=False, write="notnone",
            choices=MAP_SOURCES,
        ),
    )  # fmt: skip
    map_changed: bool = field(
        default=False,
        metadata=spec(key="changed_by_patch", group=_MAP, required=True, when="map_source"),
    )
    # Why the patch's changed map does not load at the head (the base's decides), if so.
    head_map_problem: str | None = field(
        default=None,
        metadata=spec(key="head_problem", group=_MAP, write="notnone", null=False),
    )
    changed: tuple[ChangedFile, ...] = field(
        default=(), metadata=spec(key="files", read=_read_files)
    )
    lanes: LaneTable | None = field(default=None, metadata=_OPTIONAL)
    unmapped: tuple[str, ...] = field(default=(), metadata=spec(item=None))
    control_paths: tuple[str, ...] = field(
        default=(), init=False, metadata=spec(key="control_plane", item=None)
    )
    control_plane: tuple[ControlChange, ...] = field(
        default=(), metadata=spec(key="control_plane_details", read=_read_details)
    )
    harness_changed: bool = field(default=False, init=False)
    map_complete: bool = field(default=False, metadata=spec(required=True))
    map_reason: str = ""
    # The changed paths only the base's tests judge (``Classification.tests_alone``).
    tests_alone: tuple[str, ...] = field(
        default=(),
        metadata=spec(
            item=None,
            write="nonempty",
            description="changed paths under lanes.replay.paths that no property lane covers: "
            "the base's tests alone judge them (written when there are any)",
        ),
    )

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "control_paths", tuple(sorted({c.path for c in self.control_plane}))
        )
        object.__setattr__(self, "harness_changed", bool(self.facts.harness_changed))

    @property
    def facts(self) -> PatchFacts:
        """Return what the verdict needs: map coverage and the changed control files that
        keep it at ``undecided``, each as ``path (kind: why)``."""
        blocking = tuple(
            describe(c.path, c.kind, c.why) for c in self.control_plane if c.kind in BLOCKING_KINDS
        )
        return PatchFacts(self.map_complete, self.map_reason, blocking, self.head_map_problem)

    def check_read(self, top: Fields) -> None:
        """Refuse a file whose ``harness_changed`` is true although it lists no control file
        that keeps the verdict at ``undecided``. Raises ``ReportError``."""
        if top.get("harness_changed") is True and not self.harness_changed:
            message = "'harness_changed' is true but no harness file is listed"
            raise top.doc.error_at((*top.path, "harness_changed"), message)

    def to_json(self) -> dict[str, object]:
        """Return ``classify.json`` as JSON-ready data, keys in a fixed order."""
        return to_data(self)

    @classmethod
    def from_json(cls, data: object, label: str) -> ClassificationSummary:
        """Return what the JSON value ``data`` (a ``classify.json``) says.

        Only ``map_complete`` is required; every other key is checked when present. Raises
        ``ReportError`` naming ``label`` for a missing or mistyped value, a key the format
        does not have, or a ``harness_changed`` that lists no harness file.
        """
        return _parse(report_document(label), data)

    @classmethod
    def read(cls, path: Path, label: str | None = None) -> ClassificationSummary:
        """Read and strictly check ``classify.json`` at ``path`` (``label`` names it in
        messages). Raises ``ReportError``, ``FILE[:LINE]: what is wrong``."""
        return read_report(path, label, _parse)


def describe(path: str, kind: str, why: str | None) -> str:
    """Return a control file as the verdict names it: ``path (kind: why)``."""
    return f"{path} ({kind}: {why})" if why is not None else f"{path} ({kind})"


def _parse(doc: Document, value: object) -> ClassificationSummary:
    if not isinstance(value, dict):
        raise doc.error_at((), "expected a JSON object")
    if not isinstance(value.get("map_complete"), bool):
        raise doc.error_at(("map_complete",), "'map_complete' must be true or false")
    return from_fields(ClassificationSummary, doc.fields(value))


def classify_schema() -> dict[str, object]:
    """Return the JSON Schema of ``classify.json``, derived from ``ClassificationSummary``."""
    properties, required = schema_parts(ClassificationSummary)
    return document_schema(FILE_NAME, "patchlane classification", dict(properties), required)
