"""How a document words what its field getters refuse (``Wording``), split from
``inputs.fields`` (which re-exports it). The lane reports word theirs otherwise
(``formats.envelope.ReportWording``)."""

from __future__ import annotations

from typing import Any, Protocol

from patchlane.inputs.values import FieldPath, shown


class Named(Protocol):
    """What a ``Wording`` needs of a document (``inputs.fields.Document``): how it names a
    path and a value's kind."""

    def name(self, path: FieldPath, /) -> str:
        """Return how a message names the value at ``path``."""
        ...  # pragma: no cover - a protocol's signature

    def kind(self, value: Any) -> str:
        """Return how a message names ``value``'s kind."""
        ...  # pragma: no cover - a protocol's signature


class Wording:
    """How a ``Document`` words what the getters of ``Fields`` refuse.

    Each method returns a message (the file and line go in front), naming the field as the
    document does (``Document.name``). This class words the inputs a person writes:
    ``FIELD: missing``, ``FIELD: expected WHAT, got KIND`` (``kind_of``) and ``FIELD: must
    be at least LO, got N``. A family of files whose messages read otherwise subclasses it
    and keeps every getter (the lane reports: ``formats.envelope.ReportWording``).
    """

    def missing(self, doc: Named, path: FieldPath) -> str:
        """Return the message for the required value at ``path``, which is absent."""
        return f"{doc.name(path)}: missing"

    def wrong(self, doc: Named, path: FieldPath, expected: str, value: Any, got: bool) -> str:
        """Return the message for ``value`` at ``path``, which is not ``expected`` (without
        ``got``, the message does not say what it is)."""
        kind = f", got {doc.kind(value)}" if got else ""
        return f"{doc.name(path)}: expected {expected}{kind}"

    def out_of_range(
        self, doc: Named, path: FieldPath, expected: str, bound: str, value: float
    ) -> str:
        """Return the message for the number ``value`` at ``path``, which is ``expected``
        (``an integer``) but not ``bound`` (``at least 0``, ``at most 9``)."""
        return f"{doc.name(path)}: must be {bound}, got {shown(value)}"

    def mapping(self, doc: Named) -> str:
        """Return what the messages call a mapping: ``a mapping``, or ``an object`` in JSON."""
        return doc.kind({})


# The wording of every input but the lane reports.
FIELD_WORDING = Wording()


# The wording of every input but the lane reports.
FIELD_WORDING = Wording()
