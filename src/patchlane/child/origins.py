"""Where each of the project's modules was imported from, as the run child saw it.

The parent names the project's importable names (``infra.origins.project_names``); this
records, for every module of those names in ``sys.modules``, the file its spec was loaded
from (a namespace package: its directories). The parent reads the record through the mounts
it made: a project module from outside the tree under judgement makes the run no evidence
(docs/architecture.md §2). Standard library only: the children load it before the tree is on
``sys.path``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable


def module_origins(names: Iterable[str]) -> dict[str, str | list[str]]:
    """Return ``{module: origin}`` for each loaded module that is one of ``names`` or below
    one: its spec's origin when it has a location (else ``__file__``), or a namespace
    package's search path as a list. Modules with neither (built in, made at run time) are
    left out. Reads each module's own dict and spec, never its attributes: a module's
    ``__getattr__`` is not called."""
    wanted = tuple(names)
    prefixes = tuple(n + "." for n in wanted)
    found: dict[str, str | list[str]] = {}
    for name, module in list(sys.modules.items()):
        if name not in wanted and not name.startswith(prefixes):
            continue
        own = getattr(module, "__dict__", None)
        if not isinstance(own, dict):
            continue
        spec = own.get("__spec__")
        origin = getattr(spec, "origin", None) if getattr(spec, "has_location", False) else None
        if not isinstance(origin, str):
            origin = own.get("__file__")
        if isinstance(origin, str):
            found[name] = origin
            continue
        path = own.get("__path__")
        try:
            entries = [p for p in list(path) if isinstance(p, str)] if path is not None else []
        except TypeError:
            entries = []
        if entries:
            found[name] = entries
    return found
