"""The freeze lane (docs/architecture.md §1, §2, §4): an audited registry of flaky-test freezes.

A freeze names one test node id that may be skipped on the replay host until it expires,
while the properties and the fixture lock it names stay mandatory. The registry that
decides is the base's; records are audited by rules 1-6 and only the records in play that
pass every rule are ``skippable``.

- ``lane.audit``: the lane (read the base's registry and its history, audit, report);
- ``registry``, ``source``, ``history``: the registry's format, which one decides, and its
  history on the base side (rule 6);
- ``audit``: rules 1-6; ``failure_log``: the last run's failures (rule 5).

Its report is ``formats.freeze_report``, which the pytest plugin reads inside pytest
children. The package imports nothing itself, so that loading one of its modules pays for
no other; the names listed below are loaded from their module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchlane.lanes.freeze.audit import records_in_play
    from patchlane.lanes.freeze.failure_log import FailureLogError, read_failure_log
    from patchlane.lanes.freeze.registry import (
        FailureLogRef,
        FreezeRecord,
        RegistryError,
        parse_registry,
    )
    from patchlane.lanes.freeze.source import Registry, load_base_registry

# Where each name lives. (``audit``, the lane's function, is not among them: the package
# has a module of that name, and an attribute cannot be both. Import it from ``lane``.)
_MODULES = {
    "records_in_play": "audit",
    "FailureLogError": "failure_log",
    "read_failure_log": "failure_log",
    "FailureLogRef": "registry",
    "FreezeRecord": "registry",
    "RegistryError": "registry",
    "parse_registry": "registry",
    "Registry": "source",
    "load_base_registry": "source",
}

__all__ = [
    "FailureLogError",
    "FailureLogRef",
    "FreezeRecord",
    "Registry",
    "RegistryError",
    "load_base_registry",
    "parse_registry",
    "read_failure_log",
    "records_in_play",
]


def __getattr__(name: str) -> object:
    """Load ``name`` from its module on first use. Raises ``AttributeError`` for a name the
    package does not have."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
