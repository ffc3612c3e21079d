"""The review note as ``patchlane --json review`` prints it (``review-note.schema.json``),
declared once (``inputs.model``): the four fields, the control-plane changes, the notes, and
the patch and gate it is about. ``gate.review.ReviewNote.to_json`` writes it; ``NoteChangedFile``
reads it back strictly and its schema derives from it (a test holds the two to each other).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from patchlane.formats.envelope import document_schema
from patchlane.formats.verdict_file import Ruling
from patchlane.inputs.model import schema_parts, spec

ISOLATION_KINDS = ("bwrap", "netns", "none")
# git's status letters of a changed file.
STATUS_PATTERN = "^[ACDMRTUX]$"


@dataclass(frozen=True)
class NoteField:
    """One of the four fields: its text (raw) and whether evidence filled it."""

    text: str
    filled: bool


@dataclass(frozen=True)
class NoteFields:
    """The four fields, by lane."""

    property: NoteField
    fixture: NoteField
    freeze: NoteField
    replay: NoteField


@dataclass(frozen=True)
class NoteControl:
    """A changed control file: its path and kind."""

    path: str
    kind: str


@dataclass(frozen=True)
class NoteChangedFile:
    """A changed file as the note names it, as ``classify.json`` lists it."""

    status: str = field(metadata=spec(pattern=STATUS_PATTERN))
    path: str
    old_path: str | None = field(metadata=spec(required=True))


@dataclass(frozen=True)
class NoteIsolation:
    """The isolation the patch's code ran under: bwrap is the bubblewrap kernel sandbox."""

    kind: str = field(metadata=spec(choices=ISOLATION_KINDS))
    detail: str


@dataclass(frozen=True)
class NotePatch:
    """What the note is about and how it was gated; null where the evidence does not say."""

    base: str | None = field(metadata=spec(required=True))
    merge_base: str | None = field(metadata=spec(required=True))
    head: str | None = field(metadata=spec(required=True))
    files: tuple[NoteChangedFile, ...] = field(
        metadata=spec(description="the changed files, as classify.json lists them")
    )
    wall_seconds: float | None = field(
        metadata=spec(
            required=True, lo=0, description="the gate's wall time (verdict.json's timings.total)"
        )
    )
    isolation: NoteIsolation | None = field(
        metadata=spec(
            required=True,
            description="the isolation the patch's code ran under: bwrap is the bubblewrap "
            "kernel sandbox",
        )
    )


@dataclass(frozen=True)
class ReviewNoteFile:
    """The note: the verdict (``null``: none), whether it is reviewed, the four fields, the
    control-plane changes, the notes, and the patch and gate it is about."""

    verdict: Ruling | None = field(metadata=spec(required=True))
    reviewed: bool = field(
        metadata=spec(description="every field is filled from evidence and there is a verdict")
    )
    fields: NoteFields
    control_plane: tuple[NoteControl, ...]
    notes: tuple[str, ...]
    patch: NotePatch = field(
        metadata=spec(
            description="what the note is about and how it was gated; null where the "
            "evidence does not say"
        )
    )


def note_schema() -> dict[str, object]:
    """Return the JSON Schema of the review note (``review --json``), derived from
    ``ReviewNoteFile``."""
    properties, required = schema_parts(ReviewNoteFile)
    schema = document_schema(
        "review-note.json", "patchlane review note (review --json)", dict(properties), required
    )
    schema["title"] = "patchlane review note (patchlane --json review)"
    return schema
