"""Judging what a child wrote on its result channel: which records to believe.

A record is believed only when it is well-formed, for a property the parent asked about,
the first for that property, and the child's run as a whole is complete (a ``done`` line
counting every result, exit code 0); anything else is a reason not to trust the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeGuard, TypeVar

from patchlane.child.messages import AuditResult, ImportResult, RunResult
from patchlane.formats.property_report import ORACLE_KINDS
from patchlane.infra.process import ChildRun

CHILD_KINDS = frozenset({"assertion", "error", "sandbox", "module"})
STYLES = frozenset({"seed", "hypothesis", "check", "unknown"})
# The record a validator proves a line to be.
R = TypeVar("R", RunResult, ImportResult, AuditResult)


def records(
    names: tuple[str, ...],
    result: ChildRun,
    valid: Callable[[Mapping[str, object], tuple[str, ...]], TypeGuard[R]],
) -> tuple[dict[str, R], list[str]]:
    """Return a child's records by property name (those ``valid`` accepts, first of each)
    and every reason not to trust them: protocol problems, malformed or duplicate lines, a
    missing or wrong ``done`` count, a non-zero exit (the last two not after a timeout,
    which explains them)."""
    problems = list(result.problems)
    got: dict[str, R] = {}
    for record in result.records:
        if not valid(record, names):
            problems.append("a malformed result line")
        elif record["property"] in got:
            problems.append(f"two results for {record['property']}")
        else:
            got[record["property"]] = record
    if not result.timed_out:
        if result.done_count is None:
            problems.append("no 'done' line (the child ended early)")
        elif result.done_count != len(names) or len(got) != len(names):
            problems.append(
                f"'done' counts {result.done_count} results; {len(names)} were due and "
                f"{len(got)} arrived"
            )
        if result.returncode != 0:
            problems.append(exit_text(result.returncode))
    return got, problems


def exit_text(code: int) -> str:
    """Return how a child ended, in words (a negative code is a signal)."""
    if code < 0:
        return f"the child was killed by signal {-code}"
    return f"the child exited with code {code}"


def valid_run_record(record: Mapping[str, object], names: tuple[str, ...]) -> TypeGuard[RunResult]:
    """Return whether ``record`` is a well-formed result of a run child for one of
    ``names``: exactly the expected keys, a known style, and for a pass no failure data."""
    if set(record) != {
        "property", "style", "outcome", "kind", "case_index", "arguments", "message",
        "missing", "seconds",
    }:  # fmt: skip
        return False
    if record["property"] not in names or record["style"] not in STYLES:
        return False
    if not _is_seconds(record["seconds"]):
        return False
    if record["outcome"] == "pass":
        return all(
            record[k] is None for k in ("kind", "case_index", "arguments", "message", "missing")
        )
    index = record["case_index"]
    return (
        record["outcome"] == "fail"
        and _is_package(record["missing"])
        and record["kind"] in CHILD_KINDS
        and isinstance(record["message"], str)
        and (
            index is None or (isinstance(index, int) and not isinstance(index, bool) and index >= 0)
        )
    )


def valid_import_record(
    record: Mapping[str, object], names: tuple[str, ...]
) -> TypeGuard[ImportResult]:
    """Return whether ``record`` is a well-formed result of an import child: ``message``
    ``None`` when the module imported, else why not, with the ``missing`` package if any."""
    if set(record) != {"property", "missing", "message", "seconds"}:
        return False
    message = record["message"]
    return (
        record["property"] in names
        and _is_seconds(record["seconds"])
        and (message is None or isinstance(message, str))
        and _is_package(record["missing"])
        and (message is not None or record["missing"] is None)
    )


def _is_seconds(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


def _is_package(value: object) -> bool:
    """A missing package is ``None`` or a plain top-level module name (it ends up in a
    message and is compared with file names, so nothing else is believed)."""
    return value is None or (isinstance(value, str) and value.isidentifier())


def valid_audit_record(
    record: Mapping[str, object], names: tuple[str, ...]
) -> TypeGuard[AuditResult]:
    """Return whether ``record`` is a well-formed result of an audit child for one of
    ``names``: an ``error``, or findings of known kinds with mutant counts."""
    if set(record) != {"property", "audit", "seconds"} or record["property"] not in names:
        return False
    audit = record["audit"]
    if not isinstance(audit, dict):
        return False
    if set(audit) == {"error"}:
        return isinstance(audit["error"], str)
    if set(audit) != {"findings", "mutants", "killed"}:
        return False
    counts = (audit["mutants"], audit["killed"])
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
        return False
    findings = audit["findings"]
    return isinstance(findings, list) and all(
        isinstance(f, list) and len(f) == 2 and f[0] in ORACLE_KINDS and isinstance(f[1], str)
        for f in findings
    )
