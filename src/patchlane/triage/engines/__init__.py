"""The engines a tasks run gates on: ``local`` (a thread pool driving child processes on
this machine) and ``ray`` (a Ray cluster, the optional extra ``patchlane[ray]``).

Each is imported only when chosen: ``patchlane --help`` and a local run never import Ray.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from patchlane.errors import UsageError

if TYPE_CHECKING:
    from patchlane.triage.units import Engine

ENGINES = ("local", "ray")
RAY_EXTRA = "pip install 'patchlane[ray]'"


def engine(name: str, address: str | None = None) -> Engine:
    """Return the engine called ``name``; ``address`` is the Ray cluster's (``None``: the
    ``RAY_ADDRESS`` environment variable, else a local cluster started for the run).

    Raises ``UsageError`` (exit 2) for an unknown name, for ``--address`` with the local
    engine, and for ``ray`` when Ray is not installed (the message says how to install it)."""
    if name == "local":
        if address is not None:
            raise UsageError("--address names a Ray cluster: it goes with --engine ray")
        from patchlane.triage.engines.local import LocalEngine

        return LocalEngine()
    if name == "ray":
        try:
            importlib.import_module("ray")
        except ImportError as e:
            raise UsageError(f"--engine ray needs Ray ({e}): {RAY_EXTRA}") from None
        # By name: the module exists only with the extra's engine (engines/ray.py).
        module = importlib.import_module("patchlane.triage.engines.ray")
        made: Engine = module.RayEngine(address)
        return made
    raise UsageError(f"--engine {name}: expected one of {', '.join(ENGINES)}")
