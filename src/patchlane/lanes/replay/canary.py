"""Drawing the canary: a random sample of the tests outside the slice (the setting and the
record are ``formats.canary``; docs/architecture.md §4, "Replay slice")."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable, Sequence

from patchlane.formats.canary import (
    ENV,
    ENV_SOURCE,
    REASON,
    RULE,
    Canary,
    CanarySetting,
)

__all__ = ["ENV", "ENV_SOURCE", "REASON", "RULE", "draw", "setting_for", "widen"]


def setting_for(written: CanarySetting | None) -> CanarySetting:
    """Return the setting that runs: the map's ``replay.canary`` (``written``), else off
    when the environment sets ``PATCHLANE_CANARY=off``, else the default. The user's
    environment is trusted input, never the patch's; the note names the source."""
    if written is not None:
        return written
    if os.environ.get(ENV, "").strip().lower() == "off":
        return CanarySetting(0.0, 0, ENV_SOURCE)
    return CanarySetting()


def _rng() -> random.Random:
    # Every choice from the kernel's ``os.urandom``: nothing a patch can see or steer.
    return random.SystemRandom()


def draw(pool: Iterable[str], outside: int, setting: CanarySetting) -> Canary:
    """Draw the canary from ``pool`` (the runnable tests outside the slice) for ``outside``
    tests outside it (``pool`` may hold fewer: the size is capped at what there is).
    Returns the ``Canary``."""
    candidates = sorted(set(pool))
    k = min(setting.size(outside), len(candidates))
    picked = _rng().sample(candidates, k) if k else []
    return Canary(tuple(sorted(picked)), outside, setting)


def widen(
    only: Sequence[str], suite: Sequence[str], setting: CanarySetting, file_of: Callable[[str], str]
) -> tuple[str, ...]:
    """Return ``only`` (the test files a dependency map lets selection collect) with the
    files of a random sample of ``suite`` (the map's tests) added, so that the canary,
    drawn from what is collected, can land in any test file, not only in the map's
    candidates. ``file_of`` gives a node id's file. Returns the files, sorted."""
    chosen = set(only)
    outside = [n for n in sorted(set(suite)) if file_of(n) not in chosen]
    k = min(setting.size(len(outside)), len(outside))
    for nodeid in _rng().sample(outside, k) if k else []:
        chosen.add(file_of(nodeid))
    return tuple(sorted(chosen))
