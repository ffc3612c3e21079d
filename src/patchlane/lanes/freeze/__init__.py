"""The freeze lane (DESIGN.md §1, §2, §4): an audited registry of flaky-test freezes.

A freeze names one test node id that may be skipped on the replay host until it expires,
while the properties and the fixture lock it names stay mandatory. The registry that
decides is the base's; records are audited by rules 1-6 and only the records in play that
pass every rule are ``skippable``.
"""

from __future__ import annotations

from patchlane.lanes.freeze.audit import records_in_play
from patchlane.lanes.freeze.failure_log import FailureLogError, read_failure_log
from patchlane.lanes.freeze.lane import audit
from patchlane.lanes.freeze.registry import (
    FailureLogRef,
    FreezeRecord,
    RegistryError,
    parse_registry,
)
from patchlane.lanes.freeze.report import FreezeReport, RecordResult
from patchlane.lanes.freeze.source import Registry, load_base_registry

__all__ = [
    "FailureLogError",
    "FailureLogRef",
    "FreezeRecord",
    "FreezeReport",
    "RecordResult",
    "Registry",
    "RegistryError",
    "audit",
    "load_base_registry",
    "parse_registry",
    "read_failure_log",
    "records_in_play",
]
