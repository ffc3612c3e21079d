"""The base's oracle audits, one per base (docs/explanation/decisions/0016-caches.md).

A patch that changes no property module and nothing they import gets the *base's* audit
findings (``lanes.property.audit``): the audit of the same oracles against the same code.
It is made once, by the first such lane run against that base, and kept here, so that a
near-vacuous base property is flagged on every patch against the base (a comment-only one
too) while the audit's children start once per base, not once per patch.

An entry's **key** is the SHA-256 of its ``Description``: the base commit's tree (another
base is another audit), the digest of the sources the audit reached (the property modules
and every file they import, as the import graph sees them), the properties audited, the
options that bear on the audit (mutants, seed, cases, the lane's timeout and audit budget),
the isolation layers and the environment's versions (Python, Hypothesis, patchlane).
Anything else, or a different one of these, is a miss.

The entry holds the findings and kill ratios, sealed like the result cache's entries with
the user's cache key under a purpose of its own (``sealed``); an entry whose MAC does not
verify is not used, is removed and is listed in ``AuditCache.unverified``. The folder is
one of those a property child's sandbox may not write (``jobs.guarded``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from patchlane.formats.property_report import ORACLE_KINDS, Mutation, OracleFinding
from patchlane.infra.cachekey import CacheKey
from patchlane.lanes.property.cache import sealed
from patchlane.lanes.property.cache.results import Versions, versions
from patchlane.project.config import PropertyLane

FORMAT = 1
# The MAC's purpose (``CacheKey.mac``): never the result cache's.
PURPOSE = "oracle-audit"
# The cache's folder in patchlane's cache directory (``patchlane.infra.cache.default_cache``).
FOLDER = "oracle-audit"
# Entries kept per key (a key names one base and its options: one entry is the rule).
VARIANTS = 2
_ENTRY_KEYS = {"format", "description", "modules", "findings", "mutations", "mac"}


class Description(TypedDict):
    """What a base audit's key is made of (see the module docstring)."""

    format: int
    base_tree: str
    reached: str
    audited: list[list[str]]
    mutants: int
    seed: int
    cases: int
    timeout_s: float
    audit_budget_s: float
    isolation: list[str]
    versions: Versions


@dataclass(frozen=True)
class BaseAudit:
    """A base's audit as stored: its findings and kill ratios in job order, and the
    modules whose audit child ran (each gets a cached entry in the report's timings)."""

    modules: tuple[str, ...]
    findings: tuple[OracleFinding, ...]
    mutations: tuple[Mutation, ...]


def describe(
    base_tree: str,
    reached: str,
    audited: Sequence[tuple[str, Sequence[str]]],
    *,
    mutants: int,
    seed: int,
    cases: int,
    lane: PropertyLane,
    isolation: Sequence[str],
) -> Description:
    """Return the description a base audit's key is made of: ``base_tree`` (the base
    commit's tree id), ``reached`` (the digest of the sources the audit reaches),
    ``audited`` (each module with the properties audited), the options (``lane``: its
    timeout and audit budget) and ``isolation`` (the layers' kind and command prefix)."""
    return {
        "format": FORMAT,
        "base_tree": base_tree,
        "reached": reached,
        "audited": [[module, *names] for module, names in audited],
        "mutants": mutants,
        "seed": seed,
        "cases": cases,
        "timeout_s": float(lane.timeout_s),
        "audit_budget_s": float(lane.audit_budget_s),
        "isolation": list(isolation),
        "versions": versions(),
    }


class AuditCache:
    """The base audits under ``directory``, sealed and verified with ``key``.
    ``unverified`` lists the entries lookups found whose MAC did not verify (removed)."""

    def __init__(self, directory: Path, key: CacheKey) -> None:
        self.directory = directory
        self.key = key
        self.unverified: list[str] = []

    def lookup(self, description: Description) -> BaseAudit | None:
        """Return the base audit stored for ``description``, or ``None`` (never raises for
        what the cache holds). An entry whose MAC does not verify is removed and listed in
        ``unverified``."""
        folder = self.directory / sealed.key_of(description)
        for path, entry in sealed.entries(folder, FOLDER, self.key, PURPOSE, self.unverified):
            found = _parsed(entry, description)
            if found is not None:
                sealed.touch(path)
                return found
        return None

    def store(self, description: Description, audit: BaseAudit) -> str:
        """Store ``audit`` as the base audit of ``description``; return ``""`` or why it
        could not be written."""
        entry: dict[str, object] = {
            "format": FORMAT,
            "description": description,
            "modules": list(audit.modules),
            "findings": [[f.module, f.property, f.kind, f.detail] for f in audit.findings],
            "mutations": [
                [m.module, m.property, m.mutants, m.killed, m.error] for m in audit.mutations
            ],
        }
        folder = self.directory / sealed.key_of(description)
        return sealed.write(folder, entry, self.key, PURPOSE, VARIANTS)


def _parsed(entry: dict[str, object], description: Description) -> BaseAudit | None:
    """Return a verified entry as a ``BaseAudit`` when it is one of this format for
    ``description`` and every item has its shape; ``None`` otherwise."""
    if set(entry) != _ENTRY_KEYS or entry["format"] != FORMAT:
        return None
    if entry["description"] != description:
        return None
    modules, findings, mutations = entry["modules"], entry["findings"], entry["mutations"]
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        return None
    if not isinstance(findings, list) or not isinstance(mutations, list):
        return None
    found: list[OracleFinding] = []
    for item in findings:
        if not _strings(item, 4) or item[2] not in ORACLE_KINDS:
            return None
        found.append(OracleFinding(module=item[0], property=item[1], kind=item[2], detail=item[3]))
    measured: list[Mutation] = []
    for item in mutations:
        if not isinstance(item, list) or len(item) != 5 or not _strings(item[:2], 2):
            return None
        module, name, mutants, killed, error = item
        counts = (mutants, killed)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            return None
        if error is not None and not isinstance(error, str):
            return None
        measured.append(Mutation(module, name, mutants, killed, error))
    return BaseAudit(tuple(modules), tuple(found), tuple(measured))


def _strings(item: object, size: int) -> bool:
    """Whether ``item`` is a list of ``size`` strings."""
    return isinstance(item, list) and len(item) == size and all(isinstance(s, str) for s in item)
