"""Whether a changed module's import-time code changed state outside it, as the head showed.

``inert`` reads the text: a changed top-level statement that is not known to bind only the
module's own names (a call, a store elsewhere) may change what every test sees, so it selects
every test. The run child that collects the head imports the module anyway, and watches that
import (``child.importstate``): what it changed outside the module, or that the look cannot
be trusted. ``judge`` keeps the whole-suite widening unless exactly one trusted look came
back and it saw no change (docs/architecture.md §2, "State widens where the head shows it").

Every other case widens, and says which rule did: a module the patch adds, one the base did
not import at collection (``inert.LAZY``), a change that imports such a module, text that is
not Python, no look, more than one, a look that is not ``ok``, a look that saw a change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from patchlane.lanes.replay.collect import ImportSeen

# What a changed module's import-time change cannot be lifted by a look, and why.
NEW_MODULE = "the module is new: the base's map never saw it import"
NOT_COLLECTED = "the base did not import it at collection"
UNREADABLE = "its text is not read"
NEW_IMPORT = "no look covers a module whose code now runs at collection where it did not"


@dataclass(frozen=True)
class Finding:
    """A changed code module ``path`` whose import-time change ``inert`` found may reach
    outside it (``where``: ``line N: what``), the dotted ``names`` it imports under, and
    ``fixed``: why no look can lift it (``None``: a look may)."""

    path: str
    where: str
    names: tuple[str, ...]
    fixed: str | None = None


@dataclass(frozen=True)
class Judged:
    """``widen``: whether every test is selected; ``why``: the rule that applied, one line."""

    widen: bool
    why: str


def judge(finding: Finding, imports: Mapping[str, tuple[ImportSeen, ...]]) -> Judged:
    """Return whether ``finding`` still selects every test, given the run child's looks at
    the imports (``Collected.imports``), and the rule that applied. Raises nothing."""
    head = f"import-time code that may reach outside it, {finding.where}"
    if finding.fixed is not None:
        return Judged(True, f"{head} ({finding.fixed})")
    seen = [s for name in finding.names for s in imports.get(name, ())]
    if not seen:
        return Judged(True, f"{head} (no look at its import at the head came back)")
    if len(seen) > 1:
        return Judged(True, f"{head} (imported {len(seen)} times at the head: no one look holds)")
    look = seen[0]
    if look.status != "ok":
        return Judged(True, f"{head} (its import at the head was not watched: {look.status})")
    if look.changes:
        shown = "; ".join(look.changes[:3])
        more = f" and {len(look.changes) - 3} more" if len(look.changes) > 3 else ""
        return Judged(True, f"{head}, and importing it at the head changed {shown}{more}")
    return Judged(
        False,
        f"{finding.path}: {head}, but importing it at the head changed nothing outside it "
        "that the watch reads: its importers and the map select",
    )
