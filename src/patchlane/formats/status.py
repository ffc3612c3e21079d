"""A lane report's ``status``: the one word the verdict reads first (docs/architecture.md §1).

It lives with the formats, below the lanes and the gate, so that every lane report, the
pytest plugin (which reads freeze reports inside pytest children) and the verdict share it; importing it
costs nothing but ``enum``.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """``pass``, ``fail``, ``not_applicable`` (the patch gives the lane nothing to look at) or
    ``error`` (red: only evidence counts, never its absence). A member is its own JSON text."""

    PASS = "pass"  # noqa: S105 - a status word, not a password
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"
    ERROR = "error"

    @property
    def green(self) -> bool:
        """Whether the lane lets the gate go on to the replay (``pass`` or
        ``not_applicable``)."""
        return self in (Status.PASS, Status.NOT_APPLICABLE)

    @property
    def red(self) -> bool:
        """Whether the verdict reads the lane as red (``fail`` or ``error``)."""
        return self in (Status.FAIL, Status.ERROR)
