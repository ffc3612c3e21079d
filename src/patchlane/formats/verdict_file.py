"""The verdict file (``verdict.json``): the gate's answer, the rules that fired, and its
strict reader (the decision itself is ``gate.verdict``'s).

Declared as a model (``inputs.model``): the writer, the reader and the committed schema
(``schemas/verdict.schema.json``) are derived from ``Verdict``. ``status`` and ``reason``
are no fields of it: they follow from the verdict and its first reason, and a file whose
``status`` or ``reason`` disagrees with them contradicts itself and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from patchlane.errors import Exit
from patchlane.formats.canary import CANARY_KEY, Canary
from patchlane.formats.envelope import document_schema, read_report, report_document, show
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document
from patchlane.inputs.model import from_fields, keys, schema_parts, spec, to_data


class Ruling(StrEnum):
    """The gate's three answers (docs/architecture.md §1). A member is its own JSON text."""

    ACCEPT = "accept_for_review"
    REJECT = "reject"
    UNDECIDED = "undecided"


ACCEPT, REJECT, UNDECIDED = Ruling.ACCEPT, Ruling.REJECT, Ruling.UNDECIDED

EXIT_FOR = {ACCEPT: Exit.GREEN, REJECT: Exit.RED, UNDECIDED: Exit.UNDECIDED}
STATUS_FOR = {ACCEPT: Status.PASS, REJECT: Status.FAIL, UNDECIDED: Status.ERROR}

ISOLATION_KINDS = ("bwrap", "netns", "none")
# The keys of the file that are no field of ``Verdict``, in the order they are written.
_DERIVED = ("lane", "status", "verdict", "reason")


@dataclass(frozen=True)
class IsolationFacts:
    """Which isolation the patch's code ran under (``bwrap``, ``netns`` or ``none``: see
    ``patchlane.infra.sandbox``), in a line, and whether the base's map requires the sandbox."""

    kind: str = field(metadata=spec(choices=ISOLATION_KINDS))
    detail: str
    required: bool = field(default=False, metadata=spec(required=True))

    def to_json(self) -> dict[str, object]:
        """Return the facts as JSON-ready data, keys in a fixed order."""
        return to_data(self)


@dataclass(frozen=True)
class Reason:
    """One rule that fired: its number, the lane it concerns, its effect (``reject``,
    ``undecided`` or ``accept_for_review``) and why, one line."""

    rule: int = field(metadata=spec(lo=1, hi=7))
    lane: str
    effect: Ruling
    message: str

    def to_json(self) -> dict[str, object]:
        """Return the reason as JSON-ready data, keys in a fixed order."""
        return to_data(self)


@dataclass(frozen=True)
class Verdict:
    """The verdict (``accept_for_review``, ``reject`` or ``undecided``) and every reason
    that fired, in rule order."""

    verdict: Ruling
    reasons: tuple[Reason, ...]
    # Which isolation the children had; ``None`` where the verdict was read from reports.
    isolation: IsolationFacts | None = field(
        default=None,
        metadata=spec(
            write="notnone",
            null=False,
            description="which isolation the patch's code ran under: bwrap (the kernel "
            "sandbox), netns (a network namespace and the in-child guards) or none (the "
            "in-child guards only); required: the base's map sets isolation: required",
        ),
    )
    # The tests the replay drew at random outside its selection (``canary``), when it ran:
    # the replay report's, shown beside the verdict; no part of the decision.
    canary: Canary | None = field(
        default=None,
        compare=False,
        metadata=spec(
            **CANARY_KEY,
            write="notnone",
            null=False,
            description="the replay's canary, as in replay-report.json: the tests drawn at "
            "random (os.urandom, after selection) from outside the selection and run with "
            "the slice",
        ),
    )
    # Seconds per step of the gate that wrote it, and ``total`` (the one field that is not
    # a function of the inputs); ``None`` when not timed.
    timings: Mapping[str, float] | None = field(
        default=None,
        compare=False,
        metadata=spec(
            write="notnone",
            null=False,
            lo=0,
            description="seconds per step of the gate, and total; 'property lane: runs from "
            "the cache' counts the property runs whose result came from the result cache (no "
            "child started); the one field that is not a function of the inputs",
        ),
    )

    @property
    def exit_code(self) -> int:
        """The exit code of the verdict (docs/architecture.md §3): 0, 1 or 3."""
        return int(EXIT_FOR[self.verdict])

    def to_json(self) -> dict[str, object]:
        """Return ``verdict.json`` as JSON-ready data: ``status`` and ``reason`` (the first
        reason's message) follow from the verdict and its reasons."""
        first = self.reasons[0].message if self.reasons else ""
        data = to_data(self)
        status = STATUS_FOR[self.verdict].value
        verdict = data.pop("verdict")
        return {"lane": "verdict", "status": status, "verdict": verdict, "reason": first, **data}

    @classmethod
    def from_json(cls, data: object, label: str) -> Verdict:
        """Return the verdict that the JSON value ``data`` holds.

        Raises ``ReportError`` naming ``label`` for a value that is not a verdict: a
        missing, unknown or mistyped key, an unknown verdict or effect, or a ``status`` or
        ``reason`` that disagrees with the verdict and its reasons.
        """
        return _parse_verdict(report_document(label), data)

    @classmethod
    def read(cls, path: Path, label: str | None = None) -> Verdict:
        """Read and strictly check ``verdict.json`` at ``path`` (``label`` names it in
        messages). Raises ``ReportError``, ``FILE[:LINE]: what is wrong``."""
        return read_report(path, label, _parse_verdict)


def _parse_verdict(doc: Document, value: object) -> Verdict:
    if not isinstance(value, dict):
        raise doc.error_at((), f"a verdict must be a JSON object, not {show(value)}")
    top = doc.fields(value)
    # An unknown key is refused before a wrong ``lane``, as the reader always has.
    top.only(tuple(dict.fromkeys((*_DERIVED, *keys(Verdict)))))
    top.choice("lane", ("verdict",), expected='"verdict"')
    verdict = from_fields(Verdict, top, extra=_DERIVED)
    # ``status`` and ``reason`` follow from the rest: a file where they disagree contradicts
    # itself and is not believed either way.
    expected = verdict.to_json()
    for key in ("status", "reason"):
        if top.string(key) != expected[key]:
            raise doc.error_at(
                (key,),
                f"'{key}' is {show(top.get(key))}, but the "
                f"verdict and its reasons say {show(expected[key])}",
            )
    return verdict


def verdict_schema() -> dict[str, object]:
    """Return the JSON Schema of ``verdict.json``: the keys that follow from the verdict,
    then ``Verdict``'s. The committed schema is this function's output
    (``formats.schemas``)."""
    properties, required = schema_parts(Verdict)
    derived: dict[str, object] = {
        "lane": {"const": "verdict"},
        "status": {"enum": [s.value for s in STATUS_FOR.values()]},
        "verdict": properties.pop("verdict"),
        "reason": {"type": "string"},
    }
    return document_schema(
        "verdict.json",
        "patchlane verdict",
        {**derived, **properties},
        [*_DERIVED, *(k for k in required if k not in _DERIVED)],
    )
