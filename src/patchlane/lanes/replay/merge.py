"""Merge the receipts of a split slice's shards into one receipt for the whole slice.

Each shard receipt is verified against its own sub-slice first (hash, coverage, signature when
a key is given); the sub-slices must partition the whole slice exactly; the shards must agree
on their seed and head. Only then are the lists united. Skips are not checked here (merge has
no freeze report): the merged receipt is verified with ``replay verify`` like any other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

import patchlane
from patchlane.formats import slicefile
from patchlane.formats.receipt import Receipt, ReceiptError, parse_receipt
from patchlane.formats.replay_report import ReplayOutcome
from patchlane.lanes.replay.verify import Expectations, verify_receipt


@dataclass(frozen=True)
class Shard:
    """One shard: its sub-slice and receipt bytes, and the names they go by in messages."""

    slice_label: str
    slice_bytes: bytes
    receipt_label: str
    receipt_bytes: bytes


@dataclass(frozen=True)
class Merged:
    """The result: the merged (unsigned) receipt, or ``None`` with the refusals (one line each)."""

    receipt: Receipt | None
    refusals: tuple[str, ...]


def merge_receipts(
    whole: bytes,
    shards: Sequence[Shard],
    *,
    public_key: Ed25519PublicKey | None,
    whole_label: str = "replay-slice.txt",
) -> Merged:
    """Merge shard receipts into one receipt for the slice ``whole``.

    Returns ``Merged`` with the receipt, or with every refusal found. Raises ``SliceError``
    when the whole slice or a sub-slice file is malformed (the caller's own input).
    """
    whole_ids = slicefile.parse(whole, whole_label)
    parsed = [(s, slicefile.parse(s.slice_bytes, s.slice_label)) for s in shards]
    refusals: list[str] = []
    if not shards:
        refusals.append("no shards to merge")
    refusals.extend(_partition(whole_ids, parsed, whole_label))

    receipts: list[tuple[Shard, Receipt]] = []
    for shard, _ in parsed:
        # Seed and head are checked across shards below, so each is compared with itself here.
        own = _peek(shard)
        v = verify_receipt(
            shard.slice_bytes,
            shard.receipt_bytes,
            None,
            Expectations(
                seed=own.seed if own is not None else 0,
                head=None,
                require_signature=public_key is not None,
                public_key=public_key,
            ),
            label=shard.receipt_label,
            slice_label=shard.slice_label,
        )
        if v.outcome == ReplayOutcome.REFUSED or v.receipt is None:
            refusals.extend(f"shard {shard.receipt_label}: {r}" for r in v.reasons)
            continue
        if v.receipt.passed_nodeids is None:
            refusals.append(
                f"shard {shard.receipt_label}: no passed_nodeids, so it cannot show that it "
                "covered its sub-slice"
            )
            continue
        receipts.append((shard, v.receipt))
    if refusals:
        return Merged(None, tuple(refusals))

    seeds = {r.seed for _, r in receipts}
    if len(seeds) > 1:
        refusals.append(f"the shards ran different seeds: {', '.join(map(str, sorted(seeds)))}")
    heads = {r.head for _, r in receipts}
    if len(heads) > 1:
        shown = ", ".join(h or "none" for h in sorted(heads, key=lambda h: h or ""))
        refusals.append(f"the shards ran different heads: {shown}")
    if refusals:
        return Merged(None, tuple(refusals))

    return Merged(_merged([r for _, r in receipts], whole), ())


def _merged(shards: list[Receipt], whole: bytes) -> Receipt:
    """The one receipt of verified ``shards`` that partition the slice ``whole``."""
    roles: list[str] = []
    for r in shards:
        if r.host_role not in roles:
            roles.append(r.host_role)
    starts = [r.started for r in shards if r.started is not None]
    ends = [r.finished for r in shards if r.finished is not None]
    return Receipt(
        seed=shards[0].seed,
        slice_sha256=slicefile.sha256(whole),
        failed_nodeids=_union(r.failed_nodeids for r in shards),
        skipped_by_freeze=_union(r.skipped_by_freeze for r in shards),
        host_role="+".join(roles),
        passed_nodeids=_union(r.passed_nodeids or () for r in shards),
        skipped_nodeids=_union(r.skipped_nodeids or () for r in shards),
        head=shards[0].head,
        # Only when every shard says when it ran: a missing stamp could be the extreme one.
        started=min(starts, key=_instant) if len(starts) == len(shards) else None,
        finished=max(ends, key=_instant) if len(ends) == len(shards) else None,
        patchlane_version=patchlane.__version__,
        split_base=_one_split_base(shards),
        isolation=_weakest_isolation(shards),
        hash_seed=_one_hash_seed(shards),
    )


def _weakest_isolation(receipts: list[Receipt]) -> str | None:
    """The merged run is only as isolated as its least isolated shard (``None``: a shard
    that does not say)."""
    kinds = [r.isolation for r in receipts]
    if any(k is None for k in kinds):
        return None
    order = ("none", "netns", "bwrap")
    return min((k for k in kinds if k is not None), key=order.index)


def _one_split_base(receipts: list[Receipt]) -> str | None:
    """Split only when every shard ran the patch's test files apart, from one base."""
    bases = {r.split_base for r in receipts}
    return bases.pop() if len(bases) == 1 else None


def _one_hash_seed(receipts: Iterable[Receipt]) -> int | None:
    """The hash seed every shard drew, or ``None`` when they differ (each drew its own, and
    each shard's receipt still records it) or one has none."""
    seeds = {r.hash_seed for r in receipts}
    return seeds.pop() if len(seeds) == 1 else None


def _instant(stamp: str) -> str:
    # "…SSZ" and "…SS.ffffffZ": pad to one width so that text order is time order.
    body = stamp[:-1]
    if "." not in body:
        body += "."
    return body.ljust(26, "0")


def _union(lists: Iterable[Iterable[str]]) -> tuple[str, ...]:
    out: set[str] = set()
    for ids in lists:
        out.update(ids)
    return tuple(sorted(out))


def _peek(shard: Shard) -> Receipt | None:
    """The shard's receipt if it parses (to learn its seed); ``None`` if it does not."""
    try:
        return parse_receipt(shard.receipt_bytes, shard.receipt_label)
    except ReceiptError:
        return None


def _partition(
    whole: tuple[str, ...], parsed: Sequence[tuple[Shard, tuple[str, ...]]], whole_label: str
) -> list[str]:
    """The sub-slices must be disjoint and together exactly the whole slice."""
    out: list[str] = []
    owner: dict[str, str] = {}
    for shard, ids in parsed:
        for nodeid in ids:
            if nodeid in owner:
                out.append(
                    f"node id {nodeid!r} is in two shards ({owner[nodeid]}, {shard.slice_label})"
                )
            else:
                owner[nodeid] = shard.slice_label
    missing = sorted(set(whole) - set(owner))
    extra = sorted(set(owner) - set(whole))
    if missing:
        out.append(
            f"no shard holds {len(missing)} node id(s) of {whole_label}, e.g. {missing[0]!r}"
        )
    if extra:
        out.append(f"shards hold {len(extra)} node id(s) not in {whole_label}, e.g. {extra[0]!r}")
    return out
