"""The patch every lane judges: ``merge-base(base, head)..head`` and the map that decides.

The gate builds one ``Patch`` from its classification and hands the same value to each lane,
so no lane resolves refs, finds the merge base or lists the changed paths on its own, and
none can disagree with another about them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchlane.project.config import ReviewMap


@dataclass(frozen=True)
class Patch:
    """One patch, its commits resolved once.

    ``base``, ``head`` and ``merge_base`` are commit ids; ``changed_paths`` holds every path
    the patch touches (both sides of renames); ``review_map`` is the map that decides (the
    base's, else the head's, or a file of the user's: docs/architecture.md §2).
    """

    base: str
    head: str
    merge_base: str
    changed_paths: frozenset[str]
    review_map: ReviewMap
