"""Where patchlane keeps what it reuses between runs: dependency maps, property results and the
bytecode of the installed modules its children import (docs/explanation/decisions/0016-caches.md).

One directory, so that a CI job keeps them all with one cache step: ``$PATCHLANE_CACHE_DIR``,
else ``$XDG_CACHE_HOME/patchlane``, else ``~/.cache/patchlane``.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "PATCHLANE_CACHE_DIR"


def default_cache() -> Path:
    """Return the cache directory (see the module docstring); it may not exist yet."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "patchlane"
