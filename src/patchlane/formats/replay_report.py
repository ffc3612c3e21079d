"""The replay lane's report (``replay-report.json``) and its strict reader.

``replay verify`` writes what one receipt's verification found; the replay lane
adds what it knows around it (the slice, the run, the checks at the base, the review
events), or says why no receipt was verified (not run, empty slice, a private file, an
unreachable host). Every key but ``lane``, ``status`` and ``reason`` is optional in the
format (``schemas/replay-report.schema.json``), so each field here is ``None`` (or empty)
when the report does not have it, and ``to_json`` writes only what the report has.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from patchlane.formats.canary import Canary
from patchlane.formats.envelope import (
    ENVELOPE_KEYS,
    envelope,
    read_report,
    report_document,
    review_events,
)
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document

LANE = "replay"


class ReplayOutcome(StrEnum):
    """Which case a replay report is, beside its ``status`` (a member is its own JSON text).

    ``pass`` and ``fail`` come from a verified receipt (``fail`` also when a failure at the
    head passes at the base); every other outcome is no evidence (``error``): the receipt is
    ``refused`` or holds ``no_evidence``, the replay was ``not_run``, the slice was
    ``empty`` or needs a ``private`` file, the host was ``unreachable``, the head's build
    failed (``build_failed``), every failure ``fails_at_base`` too, or the replay was
    ``skipped`` because an earlier lane is red (nothing a reject's summary needs to show).
    """

    PASS = "pass"  # noqa: S105 - an outcome word, not a password
    FAIL = "fail"
    REFUSED = "refused"
    NO_EVIDENCE = "no_evidence"
    NOT_RUN = "not_run"
    EMPTY = "empty"
    PRIVATE = "private"
    UNREACHABLE = "unreachable"
    BUILD_FAILED = "build_failed"
    FAILS_AT_BASE = "fails_at_base"
    SKIPPED = "skipped"


SKIPPED = ReplayOutcome.SKIPPED
_SHA256 = re.compile(r"[0-9a-fA-F]{64}\Z")
# Every key ``ReplayReport.to_json`` can write; the reader refuses any other.
TOP_KEYS = (
    *ENVELOPE_KEYS,
    "outcome",
    "slice_sha256",
    "receipt_sha256",
    "seed",
    "head",
    "hash_seed",
    "failed",
    "skipped_by_freeze",
    "skipped_by_suite",
    "passed",
    "signature",
    "refusals",
    "mode",
    "slice_count",
    "suite_size",
    "private",
    "slice_rules",
    "dependency_map",
    "canary",
    "plugin_files",
    "run_problems",
    "failed_why",
    "skipped_but_pass_at_base",
    "fail_at_base_too",
    "base_from_map",
    "deleted_tests",
    "edited_expectations",
    "review_events",
    "unreached",
)


@dataclass(frozen=True)
class PrivateFile:
    """A file the slice needs that is private or holds a secret, and why (it is never handed
    to a replay command)."""

    path: str
    why: str


@dataclass(frozen=True)
class EditedTest:
    """A test whose base version fails at the head: the patch changed its expectations."""

    nodeid: str
    why: str


# When ``ReplayReport.to_json`` writes a field: always (when it is not ``None``), with a
# verified receipt, without one, or with a slice.
_ALWAYS, _VERIFIED, _UNVERIFIED, _SLICED = "always", "verified", "unverified", "sliced"


def _as_is(value: Any) -> Any:
    return value


def _listed(value: Iterable[Any]) -> list[Any]:
    return list(value)


def _private(files: Iterable[PrivateFile]) -> list[dict[str, str]]:
    return [{"path": p.path, "why": p.why} for p in files]


def _sorted_counts(counts: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items()))


def _canary(canary: Canary) -> dict[str, object]:
    return canary.to_json()


def _mapping(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


def _edited(tests: Iterable[EditedTest]) -> list[dict[str, str]]:
    return [{"nodeid": e.nodeid, "why": e.why} for e in tests]


# The fields ``ReplayReport.to_json`` writes after the envelope, in the order it writes
# them (the recorded reports hold it): (when, key, how its value is written, whether it
# is written even when ``None``).
_FIELDS: tuple[tuple[str, str, Callable[[Any], Any], bool], ...] = (
    (_ALWAYS, "outcome", _as_is, False),
    (_VERIFIED, "slice_sha256", _as_is, True),
    (_VERIFIED, "receipt_sha256", _as_is, True),
    (_VERIFIED, "seed", _as_is, True),
    (_VERIFIED, "head", _as_is, True),
    (_VERIFIED, "failed", _listed, True),
    (_VERIFIED, "skipped_by_freeze", _listed, True),
    (_VERIFIED, "skipped_by_suite", _listed, True),
    (_VERIFIED, "passed", _listed, True),
    (_VERIFIED, "signature", _as_is, True),
    (_VERIFIED, "refusals", _listed, True),
    (_VERIFIED, "hash_seed", _as_is, False),
    (_ALWAYS, "mode", _as_is, False),
    (_UNVERIFIED, "slice_sha256", _as_is, False),
    (_SLICED, "slice_count", _as_is, True),
    (_SLICED, "suite_size", _as_is, True),
    (_SLICED, "private", _private, True),
    (_SLICED, "slice_rules", _sorted_counts, False),
    (_SLICED, "dependency_map", _as_is, False),
    (_SLICED, "canary", _canary, False),
    (_ALWAYS, "plugin_files", _listed, False),
    (_ALWAYS, "run_problems", _listed, False),
    (_ALWAYS, "failed_why", _mapping, False),
    (_ALWAYS, "skipped_but_pass_at_base", _listed, False),
    (_ALWAYS, "fail_at_base_too", _listed, False),
    (_ALWAYS, "base_from_map", _listed, False),
    (_ALWAYS, "deleted_tests", _listed, False),
    (_ALWAYS, "edited_expectations", _edited, False),
    (_ALWAYS, "review_events", _listed, False),
    (_ALWAYS, "unreached", _listed, False),
)


@dataclass(frozen=True)
class ReplayReport:
    """The replay lane's report.

    ``status`` is ``pass``, ``fail`` (a node outside a freeze failed) or ``error`` (no
    evidence: not run, empty, private, unreachable, refused, nothing passed, or every
    failure fails at the base too); ``outcome`` says which. ``receipt_sha256`` is set when a
    receipt was verified, and the verification's fields (``seed`` to ``refusals``) are then
    written with it; ``slice_count`` is set when a slice was selected, and ``suite_size``
    and ``private`` are then written with it. ``review_events`` is ``None`` when the report
    has no such key (the replay lane writes it, even empty, once it has checked the patch's test
    files); every other ``None`` is a key the report does not have.
    """

    status: Status
    reason: str
    outcome: ReplayOutcome | None = None
    slice_sha256: str | None = None
    receipt_sha256: str | None = None
    seed: int | None = None
    head: str | None = None
    # The receipt's ``hash_seed``: the PYTHONHASHSEED and Hypothesis seed the run drew.
    hash_seed: int | None = None
    failed: tuple[str, ...] = ()
    skipped_by_freeze: tuple[str, ...] = ()
    skipped_by_suite: tuple[str, ...] = ()
    passed: tuple[str, ...] = ()
    signature: str | None = None
    refusals: tuple[str, ...] = ()
    mode: str | None = None
    slice_count: int | None = None
    suite_size: int | None = None
    private: tuple[PrivateFile, ...] = ()
    # With a slice: how many of its tests each selection rule chose, and which dependency
    # map narrowed it (or why none did).
    slice_rules: Mapping[str, int] | None = None
    dependency_map: str | None = None
    # With a slice: the tests of it drawn at random from outside the selection (``canary``).
    canary: Canary | None = None
    plugin_files: tuple[str, ...] | None = None
    run_problems: tuple[str, ...] | None = None
    failed_why: Mapping[str, str] | None = None
    skipped_but_pass_at_base: tuple[str, ...] | None = None
    fail_at_base_too: tuple[str, ...] | None = None
    # Failed or skipped nodes whose base outcome came from the dependency map's recording
    # (they passed when the base's whole suite ran), not from a run at the base now.
    base_from_map: tuple[str, ...] | None = None
    deleted_tests: tuple[str, ...] | None = None
    edited_expectations: tuple[EditedTest, ...] | None = None
    review_events: tuple[str, ...] | None = None
    unreached: tuple[str, ...] | None = None

    @property
    def lane(self) -> str:
        """The lane's name, ``replay``."""
        return LANE

    @property
    def skipped(self) -> bool:
        """Whether the replay never ran because an earlier lane is red (``outcome``
        ``skipped``)."""
        return self.outcome == SKIPPED

    def to_json(self) -> dict[str, object]:
        """Return the report as JSON-ready data, keys in a fixed order, each written only
        when the report has it (see the class docstring)."""
        data: dict[str, object] = {"lane": LANE, "status": self.status.value, "reason": self.reason}
        sections = {
            _ALWAYS: True,
            _VERIFIED: self.receipt_sha256 is not None,
            _UNVERIFIED: self.receipt_sha256 is None,
            _SLICED: self.slice_count is not None,
        }
        for section, key, write, even_none in _FIELDS:
            value = getattr(self, key)
            if sections[section] and (even_none or value is not None):
                data[key] = write(value)
        return data

    @classmethod
    def from_json(cls, data: object, label: str) -> ReplayReport:
        """Return the report that the JSON value ``data`` holds.

        Raises ``ReportError`` naming ``label`` for a value that is not a replay report: a
        missing or mistyped ``lane``, ``status`` or ``reason``, any other key of the format
        with a value of the wrong type, or a key the format does not have.
        """
        return _parse(report_document(label), data)

    @classmethod
    def read(cls, path: Path, label: str | None = None) -> ReplayReport:
        """Read and strictly check the report file ``path`` (``label`` names it in
        messages). Raises ``ReportError``, ``FILE[:LINE]: what is wrong``."""
        return read_report(path, label, _parse)


def _parse(doc: Document, value: object) -> ReplayReport:
    top, status, reason = envelope(doc, value, LANE)
    top.only(TOP_KEYS)
    events = review_events(top) if top.has("review_events") else None
    digest = top.string("receipt_sha256", default=None)
    if digest is not None and not _SHA256.match(digest):
        raise top.wrong("receipt_sha256", "a sha256 (64 hex digits)", digest)
    why = top.mapping("failed_why", default=None)
    rules = top.mapping("slice_rules", default=None)
    canary = top.mapping("canary", default=None)
    return ReplayReport(
        status=status,
        reason=reason,
        outcome=_outcome(top.choice("outcome", tuple(ReplayOutcome), default=None)),
        slice_sha256=top.string("slice_sha256", default=None),
        receipt_sha256=digest,
        seed=top.integer("seed", default=None),
        head=top.string("head", null=True, default=None),
        hash_seed=top.integer("hash_seed", lo=0, default=None),
        failed=top.text_list("failed", item=None, default=()),
        skipped_by_freeze=top.text_list("skipped_by_freeze", item=None, default=()),
        skipped_by_suite=top.text_list("skipped_by_suite", item=None, default=()),
        passed=top.text_list("passed", item=None, default=()),
        signature=top.string("signature", default=None),
        refusals=top.text_list("refusals", item=None, default=()),
        mode=top.string("mode", default=None),
        slice_count=top.integer("slice_count", lo=0, default=None),
        suite_size=top.integer("suite_size", lo=0, default=None),
        private=tuple(
            PrivateFile(p.only(("path", "why")).string("path"), p.string("why"))
            for p in top.items("private", default=())
        ),
        slice_rules=None if rules is None else {k: rules.integer(k, lo=0) for k in rules.data},
        dependency_map=top.string("dependency_map", default=None),
        canary=None if canary is None else Canary.parse(canary),
        plugin_files=top.text_list("plugin_files", item=None, default=None),
        run_problems=top.text_list("run_problems", item=None, default=None),
        failed_why=None if why is None else {k: why.string(k) for k in why.data},
        skipped_but_pass_at_base=top.text_list("skipped_but_pass_at_base", item=None, default=None),
        fail_at_base_too=top.text_list("fail_at_base_too", item=None, default=None),
        base_from_map=top.text_list("base_from_map", item=None, default=None),
        deleted_tests=top.text_list("deleted_tests", item=None, default=None),
        edited_expectations=None
        if not top.has("edited_expectations")
        else tuple(
            EditedTest(e.only(("nodeid", "why")).string("nodeid"), e.string("why"))
            for e in top.items("edited_expectations")
        ),
        review_events=events,
        unreached=top.text_list("unreached", item=None, default=None),
    )


def _outcome(text: str | None) -> ReplayOutcome | None:
    return None if text is None else ReplayOutcome(text)
