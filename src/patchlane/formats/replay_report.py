"""The replay lane's report (``replay-report.json``) and its strict reader.

Declared as a model (``inputs.model``): the writer, the reader and the committed schema are
derived from ``ReplayReport``.

``replay verify`` writes what one receipt's verification found; the replay lane
adds what it knows around it (the slice, the run, the checks at the base, the review
events), or says why no receipt was verified (not run, empty slice, a private file, an
unreachable host). Every key but ``lane``, ``status`` and ``reason`` is optional in the
format (``schemas/replay-report.schema.json``), so each field here is ``None`` (or empty)
when the report does not have it, and ``to_json`` writes only what the report has.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from patchlane.formats.canary import CANARY_KEY, Canary
from patchlane.formats.envelope import (
    ENVELOPE_KEYS,
    REVIEW_EVENTS_MEANING,
    envelope,
    read_report,
    read_review_events,
    report_document,
)
from patchlane.formats.receipt import MAX_HASH_SEED
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document, Fields
from patchlane.inputs.model import from_fields, spec, to_data

LANE = "replay"


class ReplayOutcome(StrEnum):
    """Which case a replay report is, beside its ``status`` (a member is its own JSON text).

    ``pass`` and ``fail`` come from a verified receipt (``fail`` also when a failure at the
    head passes at the base); every other outcome is no evidence (``error``): the receipt is
    ``refused`` or holds ``no_evidence``, the replay was ``not_run``, the slice was
    ``empty`` or needs a ``private`` file, the host was ``unreachable``, the head's build
    failed (``build_failed``), every failure ``fails_at_base`` too, a failure passed when
    run again alone at the head (``flaky_at_head``), or the replay was ``skipped`` because
    an earlier lane is red (nothing a reject's summary needs to show).
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
    FLAKY_AT_HEAD = "flaky_at_head"
    SKIPPED = "skipped"


SKIPPED = ReplayOutcome.SKIPPED
# A receipt's digest, as the reader takes it and the schema says (64 hex digits).
_HEX64 = "[0-9a-fA-F]{64}"
# With a verified receipt its fields are written, even when ``None``; with a selected slice,
# its size and private files.
_RECEIPT, _SLICE = "receipt_sha256", "slice_count"


def _key(default: object, description: str | None = None, **settings: Any) -> Any:
    """A field of the report (``field`` with its ``spec``): a ``None`` is a key the file
    does not have (``null`` is refused unless ``null=True``), and a list holding anything
    but strings is refused whole."""
    settings = {"null": False, "item": None, "description": description, **settings}
    return field(default=default, metadata=spec(**settings))


def _listed(description: str) -> Any:
    """A list of node ids or paths, written when not ``None`` (even empty)."""
    return _key(None, description, write="notnone")


def _sha256(top: Fields, key: str) -> str:
    digest = top.string(key)
    if not re.fullmatch(_HEX64, digest):
        raise top.wrong(key, "a sha256 (64 hex digits)", digest)
    return digest


def _slice_digest_written(report: ReplayReport) -> bool:
    # With a receipt, among its fields (even ``None``); without one, when a slice has one.
    return report.receipt_sha256 is not None or report.slice_sha256 is not None


def _sorted_counts(counts: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items()))


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


@dataclass(frozen=True)
class JudgedTest:
    """A test that ran the changed code, and what its variants or repeats showed."""

    nodeid: str
    why: str


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
    # ``_key`` returns a ``field``: no default shared between instances (RUF009).
    outcome: ReplayOutcome | None = _key(None, write="notnone")  # noqa: RUF009
    slice_sha256: str | None = _key(
        None,
        "the sha256 of the replay slice the receipt (or the selection) is for",
        write=_slice_digest_written,
    )
    receipt_sha256: str | None = _key(
        None, when=_RECEIPT, read=_sha256, schema={"type": "string", "pattern": f"^{_HEX64}$"}
    )
    seed: int | None = _key(None, "the replay run's seed, as the receipt gives it", when=_RECEIPT)
    head: str | None = _key(
        None,
        "the head commit the receipt's run replayed (null: none named)",
        when=_RECEIPT,
        null=True,
    )
    # The receipt's ``hash_seed``: the PYTHONHASHSEED and Hypothesis seed the run drew.
    hash_seed: int | None = _key(
        None,
        "the receipt's hash_seed: the PYTHONHASHSEED and Hypothesis seed the replay run drew",
        when=_RECEIPT,
        write="notnone",
        lo=0,
        hi=MAX_HASH_SEED,
    )
    failed: tuple[str, ...] = _key((), "node ids that failed in the receipt", when=_RECEIPT)
    skipped_by_freeze: tuple[str, ...] = _key(
        (), "node ids skipped by an in-play, passing freeze", when=_RECEIPT
    )
    skipped_by_suite: tuple[str, ...] = _key((), "node ids the suite itself skipped", when=_RECEIPT)
    passed: tuple[str, ...] = _key((), "node ids that passed", when=_RECEIPT)
    signature: str | None = _key(
        None,
        "what the check of the receipt's signature found: verified, absent, not_checked or bad",
        when=_RECEIPT,
    )
    refusals: tuple[str, ...] = _key(
        (), "why the receipt was refused (empty unless outcome is refused)", when=_RECEIPT
    )
    mode: str | None = _key(None, write="notnone")
    slice_count: int | None = _key(None, "how many tests the slice holds", when=_SLICE, lo=0)
    suite_size: int | None = _key(
        None,
        "how many tests the suite the slice was drawn from holds (with a dependency map, the "
        "base's recorded tests; without one, the head's collection)",
        when=_SLICE,
        lo=0,
    )
    # Of ``slice_count``, the tests the suite does not hold (the patch adds them): the slice
    # drew ``slice_count - slice_added`` of ``suite_size`` (``slice_text``).
    slice_added: int = _key(
        0,
        "how many of the slice's tests the suite does not hold: tests the patch adds "
        "(slice_count - slice_added of suite_size were drawn from the suite)",
        when=_SLICE,
        lo=0,
    )
    private: tuple[PrivateFile, ...] = _key(
        (),
        "files the slice needs that are private or hold a secret (never handed to a replay "
        "command), and why",
        when=_SLICE,
    )
    # With a slice: how many of its tests each selection rule chose, and which dependency
    # map narrowed it (or why none did).
    slice_rules: Mapping[str, int] | None = _key(
        None,
        "how many tests of the slice each selection rule chose",
        when=_SLICE,
        write="notnone",
        lo=0,
        dump=_sorted_counts,
    )
    # With a slice: for each of its tests, the rule that put it there and why (a test that
    # several rules chose carries the first; ``replay select --json`` lists them all).
    slice_reasons: Mapping[str, str] | None = _key(
        None,
        "for each test of the slice, the rule that chose it and why ('RULE: why')",
        when=_SLICE,
        write="notnone",
    )
    dependency_map: str | None = _key(
        None,
        "the dependency map that narrowed the slice, 'off', or 'none (why)'",
        when=_SLICE,
        write="notnone",
    )
    # With a slice: the tests of it drawn at random from outside the selection (``canary``).
    canary: Canary | None = _key(  # noqa: RUF009
        None,
        "the tests of the slice drawn at random (os.urandom, after selection) from the "
        "suite's tests outside the selection: count of outside, under the map's share and "
        "min (both 0: off)",
        when=_SLICE,
        write="notnone",
        **CANARY_KEY,
    )
    plugin_files: tuple[str, ...] | None = _listed(
        "pytest plugin files the collection or the run loaded"
    )
    run_problems: tuple[str, ...] | None = _listed("what went wrong in the replay run itself")
    failed_why: Mapping[str, str] | None = _key(
        None, "for a failed node id, why it failed", write="notnone"
    )
    skipped_but_pass_at_base: tuple[str, ...] | None = _listed(
        "node ids skipped at the head that pass at the base"
    )
    fail_at_base_too: tuple[str, ...] | None = _listed("failed node ids that fail at the base too")
    # Failed nodes that passed at the base, run again alone at both (``lanes.replay.rerun``).
    reran_alone: tuple[str, ...] | None = _listed(
        "failed node ids that pass at the base, run again alone at the head and at the base "
        "(empty: more failed than are run again)"
    )
    flaky_at_head: tuple[str, ...] | None = _listed(
        "failed node ids that passed when run again alone at the head: their failure does not "
        "repeat (flaky at the head: freeze it or fix it)"
    )
    # Failed or skipped nodes whose base outcome came from the dependency map's recording
    # (they passed when the base's whole suite ran), not from a run at the base now.
    base_from_map: tuple[str, ...] | None = _listed(
        "failed or skipped node ids whose base outcome came from the dependency map's recording"
    )
    deleted_tests: tuple[str, ...] | None = _listed(
        "tests collected at the base that the patch deletes"
    )
    edited_expectations: tuple[EditedTest, ...] | None = _key(
        None,
        "tests whose base version fails at the head: the patch changed their expectations",
        write="notnone",
    )
    review_events: tuple[str, ...] | None = _key(
        None,
        REVIEW_EVENTS_MEANING,
        write="notnone",
        read=read_review_events,
    )
    unreached: tuple[str, ...] | None = _listed(
        "changed files of the code under test that no test the base has and that passed reaches"
    )
    # Tests run after the slice because it left state behind (``lanes.replay.widen``).
    widened: Mapping[str, str] | None = _key(
        None,
        "tests run after the slice, in one process, because the slice left state behind that "
        "the base does not (a variable, the working directory, a module's attribute): for "
        "each, the rule that added it",
        write="notnone",
    )
    # Tests that cannot fail (docs/architecture.md §2): what the variants, repeats and the copied-values
    # scan of the tests that ran the changed code found (``lanes.replay.vacuity``).
    vacuity_counts: Mapping[str, int] | None = _key(
        None,
        "the tests that ran the changed code judged for vacuity, their impossible variants "
        "run, those that fail at the head, repeats run, whether the base's run was needed "
        "(base_run) and, when it ran, the variants that fail at the base (the ones that "
        "count), and whether the head's run started beside the slice (beside_slice); the "
        "witness's calls to the changed functions recorded, witnessed (made again outside "
        "the tests with a deterministic answer) and differing",
        write="notnone",
        lo=0,
        dump=_sorted_counts,
    )
    cannot_fail: tuple[JudgedTest, ...] | None = _key(
        None,
        "tests whose impossible variant (one expected value changed) fails at the base and "
        "passes at the head",
        write="notnone",
    )
    order_dependent: tuple[JudgedTest, ...] | None = _key(
        None,
        "tests that pass at the base and fail at the head when run again, or in another "
        "order, in one process",
        write="notnone",
    )
    copied_values: tuple[str, ...] | None = _listed(
        "literals the patch adds to the code that stand in the base's test files, and "
        "added tables most of whose values do"
    )
    witness_differing: tuple[str, ...] | None = _listed(
        "calls the tests made to the changed functions whose answer differs when the same "
        "call is made outside the tests (a difference the base shows too is not listed)"
    )
    vacuity_events: tuple[str, ...] | None = _listed(
        "why the tests that ran the changed code are no evidence (each keeps the verdict "
        "at undecided, rule 6)"
    )

    @property
    def lane(self) -> str:
        """The lane's name, ``replay``."""
        return LANE

    @property
    def skipped(self) -> bool:
        """Whether the replay never ran because an earlier lane is red (``outcome``
        ``skipped``)."""
        return self.outcome == SKIPPED

    def slice_text(self) -> str | None:
        """Return the slice's size against the suite it was drawn from, as people read it
        (``12 of 488 tests (+3 added by the patch)``), or ``None`` without a slice."""
        if self.slice_count is None:
            return None
        drawn = self.slice_count - self.slice_added
        text = f"{drawn} of {self.suite_size} tests"
        return f"{text} (+{self.slice_added} added by the patch)" if self.slice_added else text

    def to_json(self) -> dict[str, object]:
        """Return the report as JSON-ready data, keys in a fixed order, each written only
        when the report has it (see the class docstring).

        The recorded reports hold two keys away from their place in the model (and in the
        reader's list of keys): ``hash_seed`` follows the receipt's other fields, and
        without a receipt the slice's digest follows ``mode``, where the selection wrote
        it."""
        data = _moved(to_data(self, {"lane": LANE}), "hash_seed", "refusals")
        return data if self.receipt_sha256 is not None else _moved(data, "slice_sha256", "mode")

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


def _moved(data: dict[str, object], key: str, after: str) -> dict[str, object]:
    """``data`` with ``key`` right after ``after`` (as it was when either is absent)."""
    if key not in data or after not in data:
        return data
    moved: dict[str, object] = {}
    for name, item in data.items():
        if name != key:
            moved[name] = item
        if name == after:
            moved[key] = data[key]
    return moved


def _parse(doc: Document, value: object) -> ReplayReport:
    top, status, reason = envelope(doc, value, LANE)
    given = {"status": status, "reason": reason}
    report = from_fields(ReplayReport, top, given=given, extra=ENVELOPE_KEYS)
    count, added, suite = report.slice_count, report.slice_added, report.suite_size
    # A report written before ``slice_added`` counted added tests in the slice alone (it
    # could say 489 of 488): only a report that has the key is held to it.
    if (
        isinstance(value, dict)
        and "slice_added" in value
        and count is not None
        and (added > count or (suite is not None and count - added > suite))
    ):
        raise top.fail(
            "slice_added",
            f"a slice of {count} with {added} added tests is not drawn from a suite of {suite}",
        )
    return report
