"""Verify a receipt against the slice, its seed and head, the freeze report and a key.

A receipt is the output of a host patchlane does not control, so it is checked before it is
believed (docs/architecture.md §4, "Receipt"). Every rule that fails is listed, not only the first: a
reviewer reading a refusal should see everything that is wrong with the receipt at once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchlane.formats import slicefile
from patchlane.formats.receipt import Receipt, ReceiptError, parse_receipt
from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.formats.status import Status
from patchlane.lanes.replay import signing

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from patchlane.formats.freeze_report import FreezeReport

# At most this many node ids are quoted in one reason: a receipt may list thousands.
_QUOTE = 5


@dataclass(frozen=True)
class Verification:
    """What verifying one receipt found.

    ``outcome`` is ``pass`` (valid, nothing failed, at least one node passed), ``fail``
    (valid, a node failed: a non-frozen failure), ``no_evidence`` (valid, nothing failed, but
    no node passed: every node was skipped, by a freeze or by the suite) or ``refused`` (not
    to be believed: ``reasons`` says why, one line each). ``receipt_sha256`` is the hash of the receipt file's bytes, ``failed`` and
    ``skipped`` the receipt's lists (empty when the receipt could not be parsed).
    ``receipt`` is the parsed receipt, ``None`` when it was malformed.
    """

    outcome: ReplayOutcome
    reasons: tuple[str, ...]
    receipt_sha256: str
    failed: tuple[str, ...]
    skipped: tuple[str, ...]
    receipt: Receipt | None = None
    suite_skipped: tuple[str, ...] = ()
    passed: tuple[str, ...] = ()
    signature: str = "absent"  # "verified" | "absent" | "not_checked" | "bad"


def _quote(ids: list[str]) -> str:
    shown = ", ".join(repr(n) for n in ids[:_QUOTE])
    return shown + (f" and {len(ids) - _QUOTE} more" if len(ids) > _QUOTE else "")


@dataclass(frozen=True)
class Expectations:
    """What a receipt must answer to besides its slice: the public ``seed``, the patch's
    ``head`` (``None`` leaves a receipt's ``head`` unchecked), whether a signature is
    required and the ``public_key`` that checks one, and ``canary``: the slice's canary
    node ids, which a receipt's ``canary_nodeids`` must match (a receipt without them
    answers for them as slice lines), and whose passes alone are no evidence."""

    seed: int
    head: str | None
    require_signature: bool
    public_key: Ed25519PublicKey | None
    canary: tuple[str, ...] | None = None


def verify_receipt(
    slice_bytes: bytes,
    receipt: bytes,
    freeze_report: FreezeReport | None,
    expected: Expectations,
    *,
    label: str = "receipt.json",
    slice_label: str = "replay-slice.txt",
) -> Verification:
    """Check receipt bytes against the slice bytes they claim to answer and what else
    ``expected`` says they must answer to (seed, head, signature, canary:
    ``Expectations``).

    ``freeze_report`` is the freeze report whose in-play, ok records may be skipped (what it
    grants, the set the pytest plugin skips from: nothing unless its status is ``pass``);
    ``None`` leaves skips unchecked (only ``replay merge`` does that: its merged receipt is
    verified against the freeze report afterwards). A receipt that is not well formed is *refused*
    (not an input error): it is the host's output, not the user's input.

    Returns the ``Verification``. Raises ``SliceError`` for a malformed slice: that is the
    caller's own input.
    """
    seed, head, canary = expected.seed, expected.head, expected.canary
    nodeids = slicefile.parse(slice_bytes, slice_label)
    skippable = None if freeze_report is None else frozenset(freeze_report.granted())
    receipt_sha256 = hashlib.sha256(receipt).hexdigest()
    try:
        parsed = parse_receipt(receipt, label)
    except ReceiptError as e:
        return Verification(ReplayOutcome.REFUSED, (str(e),), receipt_sha256, (), ())

    refusals: list[str] = []
    if not nodeids:
        refusals.append(f"{slice_label} is empty: an empty slice is never evidence")
    actual = slicefile.sha256(slice_bytes)
    if parsed.slice_sha256 != actual:
        refusals.append(
            f"slice_sha256 {parsed.slice_sha256} is not the sha256 of {slice_label} ({actual})"
        )
    if parsed.seed != seed:
        refusals.append(f"seed {parsed.seed} is not the expected seed {seed}")
    if head is not None and parsed.head is not None and parsed.head != head:
        refusals.append(f"head {parsed.head} is not the patch's head {head}")
    refusals.extend(_coverage(parsed, frozenset(nodeids), skippable))
    refusals.extend(_canary(parsed, frozenset(nodeids), canary))
    signature_state, problem = _signature(parsed, expected.require_signature, expected.public_key)
    if problem is not None:
        refusals.append(problem)

    if refusals:
        outcome, reasons = ReplayOutcome.REFUSED, tuple(refusals)
    elif parsed.failed_nodeids:
        failed = list(parsed.failed_nodeids)
        reasons = (f"{len(failed)} node id(s) failed: {_quote(failed)}",)
        outcome = ReplayOutcome.FAIL
    elif not set(_passed_ids(parsed, nodeids)) - set(canary or ()):  # canary passes: no evidence
        outcome = ReplayOutcome.NO_EVIDENCE
        which = " outside the canary" if canary else ""
        reasons = (
            f"no node passed{which} ({len(parsed.skipped_by_freeze)} skipped by a freeze, "
            f"{len(parsed.skipped_nodeids or ())} skipped by the suite): a replay in which "
            "nothing passed is not evidence",
        )
    else:
        outcome, reasons = ReplayOutcome.PASS, ()
    return Verification(
        outcome=outcome,
        reasons=reasons,
        receipt_sha256=receipt_sha256,
        failed=parsed.failed_nodeids,
        skipped=parsed.skipped_by_freeze,
        receipt=parsed,
        signature=signature_state,
        suite_skipped=parsed.skipped_nodeids or (),
        passed=_passed_ids(parsed, nodeids) if outcome != ReplayOutcome.REFUSED else (),
    )


def _passed_ids(receipt: Receipt, slice_ids: tuple[str, ...]) -> tuple[str, ...]:
    """The slice's nodes that passed: the listed passes, or (the first receipt format, without
    ``passed_nodeids``) every node the receipt does not list as failed or skipped."""
    if receipt.passed_nodeids is not None:
        return tuple(sorted(receipt.passed_nodeids))
    rest = set(slice_ids) - set(receipt.failed_nodeids) - set(receipt.skipped_by_freeze)
    return tuple(sorted(rest - set(receipt.skipped_nodeids or ())))


def _coverage(
    receipt: Receipt, slice_ids: frozenset[str], skippable: frozenset[str] | None
) -> list[str]:
    """The coverage rules: lists inside the slice, disjoint, skips granted, complete."""
    out: list[str] = []
    failed, skipped = set(receipt.failed_nodeids), set(receipt.skipped_by_freeze)
    suite = set(receipt.skipped_nodeids or ())
    for name, ids in (
        ("failed_nodeids", failed),
        ("skipped_by_freeze", skipped),
        ("skipped_nodeids", suite),
    ):
        outside = sorted(ids - slice_ids)
        if outside:
            out.append(f"{name} lists node ids that are not in the slice: {_quote(outside)}")
    if skippable is not None:
        ungranted = sorted(skipped - skippable)
        if ungranted:
            out.append(
                "skipped_by_freeze lists node ids that are not an in-play, passing freeze of the "
                f"freeze report: {_quote(ungranted)}"
            )
    lists = [("failed_nodeids", failed), ("skipped_by_freeze", skipped)]
    if receipt.skipped_nodeids is not None:
        lists.append(("skipped_nodeids", suite))
    if receipt.passed_nodeids is not None:
        lists.insert(0, ("passed_nodeids", set(receipt.passed_nodeids)))
    for i, (name_a, a) in enumerate(lists):
        for name_b, b in lists[i + 1 :]:
            both = sorted(a & b)
            if both:
                out.append(f"{name_a} and {name_b} both list {_quote(both)}")
    if receipt.passed_nodeids is not None:
        passed = set(receipt.passed_nodeids)
        missing = sorted(slice_ids - (passed | failed | skipped | suite))
        if missing:
            out.append(
                f"passed, failed and skipped do not cover the slice: missing {_quote(missing)}"
            )
        # Failed or skipped ids outside the slice are reported above; here only the passes.
        outside = sorted(passed - slice_ids)
        if outside:
            out.append(
                f"passed_nodeids lists node ids that are not in the slice: {_quote(outside)}"
            )
    return out


def _canary(
    receipt: Receipt, slice_ids: frozenset[str], expected: tuple[str, ...] | None
) -> list[str]:
    """The canary rules: the receipt's ``canary_nodeids`` are slice lines, and the ones the
    gate drew when it knows them."""
    named = receipt.canary_nodeids
    if named is None:
        return []
    outside = sorted(set(named) - slice_ids)
    if outside:
        return [f"canary_nodeids lists node ids that are not in the slice: {_quote(outside)}"]
    if expected is not None and set(named) != set(expected):
        return [
            f"canary_nodeids names {len(named)} node id(s), not the {len(expected)} the gate drew"
        ]
    return []


def _signature(
    receipt: Receipt, required: bool, public_key: Ed25519PublicKey | None
) -> tuple[str, str | None]:
    """Return ``(signature state, refusal or None)``.

    A signature that is present is checked whenever a key is given, required or not: a
    receipt carrying a signature that does not verify has been tampered with. Without a key,
    a signature that is not required is reported as ``not_checked``.
    """
    if receipt.signature is None:
        if required:
            return (
                "absent",
                "a signed receipt is required (the map's replay.require_signature, or --public-key for merge) and this one is not signed",
            )
        return "absent", None
    if public_key is None:
        if required:
            return (
                "not_checked",
                "a signed receipt is required (the map's replay.require_signature) but no --public-key was given",
            )
        return "not_checked", None
    problem = signing.check(receipt, public_key)
    if problem is not None:
        return "bad", f"signature: {problem}"
    return "verified", None


def replay_report(
    verification: Verification,
    *,
    slice_sha256: str,
    seed: int,
    head: str | None,
) -> ReplayReport:
    """Return ``replay-report.json`` for one verification.

    ``status`` is ``pass``, ``fail`` (a non-frozen node failed) or ``error`` (refused, or no
    node passed: the receipt is no evidence, so the verdict stays ``undecided``).
    """
    status = {
        ReplayOutcome.PASS: Status.PASS,
        ReplayOutcome.FAIL: Status.FAIL,
        ReplayOutcome.REFUSED: Status.ERROR,
        ReplayOutcome.NO_EVIDENCE: Status.ERROR,
    }[verification.outcome]
    match verification.outcome:
        case ReplayOutcome.PASS:
            reason = "the receipt verifies and no node failed"
            extra = []
            if verification.skipped:
                extra.append(f"{len(verification.skipped)} skipped by an in-play, passing freeze")
            if verification.suite_skipped:
                extra.append(f"{len(verification.suite_skipped)} skipped by the suite")
            if extra:
                reason += f" ({'; '.join(extra)})"
        case ReplayOutcome.NO_EVIDENCE:
            reason = verification.reasons[0]
        case ReplayOutcome.FAIL:
            reason = (
                f"the receipt verifies and shows a non-frozen failure: {verification.reasons[0]}"
            )
        case _:
            reason = f"receipt refused: {verification.reasons[0]}"
            if len(verification.reasons) > 1:
                reason += f" (and {len(verification.reasons) - 1} more)"
    return ReplayReport(
        status=status,
        reason=reason,
        outcome=verification.outcome,
        slice_sha256=slice_sha256,
        receipt_sha256=verification.receipt_sha256,
        seed=seed,
        head=head,
        failed=verification.failed,
        skipped_by_freeze=verification.skipped,
        skipped_by_suite=verification.suite_skipped,
        passed=verification.passed,
        signature=verification.signature,
        refusals=verification.reasons if verification.outcome == ReplayOutcome.REFUSED else (),
        # What the receipt says the run drew; recorded, never checked (nothing derives it).
        hash_seed=None if verification.receipt is None else verification.receipt.hash_seed,
    )
