"""What the verdict needs to know of a patch's classification: the kinds of control file whose
change keeps it at ``undecided``, and the facts the classification hands the verdict
(docs/architecture.md §1, §2). ``classify.json`` (``formats.classify_file``) carries them."""

from __future__ import annotations

from dataclasses import dataclass

HARNESS = "test harness"
# A repository file the ``--replay`` command names (docs/architecture.md §2).
REPLAY_COMMAND = "replay command"
# Control files whose change keeps the verdict at ``undecided`` whatever the replay says: a
# hook can rewrite outcomes, bytecode runs instead of the source, attributes change what a
# checkout holds (docs/explanation/decisions/0009-harness-found.md); the replay command's own
# files run from the base, so a change to them is one the replay never tried.
BLOCKING_KINDS = frozenset({HARNESS, "committed bytecode", "checkout attributes", REPLAY_COMMAND})


@dataclass(frozen=True)
class PatchFacts:
    """What the verdict needs from the classification."""

    map_complete: bool
    map_reason: str
    harness_changed: tuple[str, ...]
    # Why the patch's changed review map does not load at the head (the base's decides).
    head_map_problem: str | None = None
