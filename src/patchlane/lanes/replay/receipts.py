"""Receipts issued on this machine: signed when a key is configured, then written.

``issue`` is what ``patchlane replay run`` and ``replay merge`` do with the receipt they
built (the command only parses arguments and prints); ``local_receipt`` is the receipt of a
gate's ``--replay local`` run, written to the evidence directory. The written file is
evidence only: the gate verifies the local receipt it holds in memory (``checks.verify``),
and only a host's receipt is read back from its file.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.formats.receipt import Receipt
from patchlane.inputs.jsonio import atomic_write_bytes
from patchlane.lanes.replay import signing
from patchlane.lanes.replay.hostrun import HostRun, receipt_for
from patchlane.lanes.replay.results import RunResult, TestRun
from patchlane.lanes.replay.selection import Selection
from patchlane.lanes.replay.stage import Stage

if TYPE_CHECKING:
    # Only for the annotation: ``signing`` imports cryptography when a key is used.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def issue(receipt: Receipt, key: Ed25519PrivateKey | None, path: Path) -> Receipt:
    """Sign ``receipt`` with ``key`` (``None``: left unsigned), write it to ``path``
    atomically, and return what was written. Raises ``OSError`` when it cannot be written."""
    if key is not None:
        receipt = signing.sign(receipt, key)
    atomic_write_bytes(path, receipt.render())
    return receipt


def local_receipt(stage: Stage, selection: Selection, run: TestRun, started: str) -> RunResult:
    """The receipt of a local run of ``selection`` that began at ``started``, under the
    stage's seeds (the public seed, the drawn hash seed), signed when a key is configured
    (``signing.configured_private_key``) and written to the evidence directory."""
    host = HostRun(
        seed=stage.seed,
        head=stage.cls.head,
        host_role="local",
        freeze_report=stage.freeze_path,
        timeout_s=stage.timeout_s,
        canary=None if selection.canary is None else selection.canary.nodeids,
    )
    receipt = receipt_for(
        run, host, slice_sha256=selection.sha256, hash_seed=stage.hash_seed, started=started
    )
    key = signing.configured_private_key(None)
    result = RunResult(receipt, run)
    if key is not None:
        result = dataclasses.replace(result, receipt=signing.sign(receipt, key))
    atomic_write_bytes(stage.opts.receipt_path, result.receipt.render())
    return result
