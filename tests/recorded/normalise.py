"""What a rerun of the same gate changes, replaced by fixed placeholders (issue 21).

A gate's evidence is a function of its inputs except for these fields (every other byte is
the same on a rerun: commit ids come from ``tests.gitrepo``'s fixed dates, the seed, case
count and day are options). ``normalise`` rewrites exactly them:

=================  ===============================  ==========================  ==========
file               field                            placeholder                 why
=================  ===============================  ==========================  ==========
every report       each ``seconds``, at any depth   ``0.0``                     wall clock
verdict.json       every value of ``timings``       ``0.0``                     wall clock
receipt.json       ``started``, ``finished``        ``RECORDED_AT``             wall clock
receipt.json,      ``hash_seed``                    ``HASH_SEED``               os.urandom
replay-report                                                                   per run
receipt.json       ``patchlane_version``            ``VERSION``                 each release
receipt.json       ``isolation``                    ``bwrap``                   the host
verdict.json       ``isolation.kind``, ``.detail``  bwrap's kind and line       the host
property-report    ``isolation.network``            ``bwrap+audit``             the host
replay-report      ``receipt_sha256``               sha256 of the normalised    follows
                                                    receipt.json                the receipt
=================  ===============================  ==========================  ==========

Which sandbox a host has is no fact of the patch; ``isolation.required`` (what the map
asks) is kept, and no recorded scenario's map requires the sandbox, so no rule read the
kind. ``normalise_evidence`` applies the same placeholders to ``review.md``, which shows
the receipt's hash, the hash seed, the wall time (``timings.total``) and the isolation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from patchlane.inputs.jsonio import dumps_report

RECORDED_AT = "2026-09-24T12:00:00Z"  # tests.gitrepo's fixed commit date
HASH_SEED = 1234567890
VERSION = "0.0.0+recorded"
SECONDS = 0.0
BWRAP = "bwrap"
BWRAP_DETAIL = "bwrap (read-only system, own scratch, no network, no home or cache)"
# review.md's isolation line for BWRAP_DETAIL (``PatchSection.markdown_lines``).
BWRAP_LINE = f"- isolation: {BWRAP_DETAIL}; the bubblewrap kernel sandbox ran"
RECEIPT = "receipt.json"
REPLAY = "replay-report.json"
NOTE = "review.md"


def normalise(name: str, document: Any) -> Any:
    """Return a copy of the evidence file ``name``'s parsed JSON ``document`` with the
    fields of the module's table replaced (``receipt_sha256`` excepted: it follows from the
    receipt's bytes, see ``normalise_evidence``). Never raises; a field that is absent
    stays absent."""
    doc = _seconds(document)
    if not isinstance(doc, dict):
        return doc
    if name == "verdict.json":
        if isinstance(doc.get("timings"), dict):
            doc["timings"] = dict.fromkeys(doc["timings"], SECONDS)
        if isinstance(doc.get("isolation"), dict):
            doc["isolation"] = {**doc["isolation"], "kind": BWRAP, "detail": BWRAP_DETAIL}
    if name == "property-report.json" and isinstance(doc.get("isolation"), dict):
        doc["isolation"] = {**doc["isolation"], "network": "bwrap+audit"}
    if name in (RECEIPT, REPLAY) and "hash_seed" in doc:
        doc["hash_seed"] = HASH_SEED
    if name == RECEIPT:
        for key, value in (
            ("started", RECORDED_AT),
            ("finished", RECORDED_AT),
            ("patchlane_version", VERSION),
            ("isolation", BWRAP),
        ):
            if key in doc:
                doc[key] = value
    return doc


def _seconds(value: Any) -> Any:
    """``value`` copied, every ``seconds`` key's value at any depth replaced by ``SECONDS``."""
    if isinstance(value, dict):
        return {k: SECONDS if k == "seconds" else _seconds(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_seconds(v) for v in value]
    return value


def normalise_evidence(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """Return one gate's evidence files (name to bytes) normalised: each JSON file through
    ``normalise`` and written as the gate writes it (``dumps_report``); the replay report's
    ``receipt_sha256`` set to the normalised receipt's hash; in ``review.md`` the same
    values replaced where the note shows them. Raises ``ValueError`` for a JSON file that
    does not parse (the gate wrote something else than evidence)."""
    raw = {n: json.loads(b) for n, b in files.items() if n.endswith(".json")}
    out = {n: dumps_report(normalise(n, doc)).encode() for n, doc in raw.items()}
    replay = raw.get(REPLAY, {})
    if RECEIPT in out and REPLAY in out:
        report = json.loads(out[REPLAY])
        report["receipt_sha256"] = hashlib.sha256(out[RECEIPT]).hexdigest()
        out[REPLAY] = dumps_report(report).encode()
    if NOTE in files:
        out[NOTE] = _note(files[NOTE].decode(), replay, json.loads(out.get(REPLAY, b"{}"))).encode()
    return out


def _note(text: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """``review.md``'s ``text`` with the receipt hash and hash seed of the replay report
    ``before`` replaced by those of ``after``, and the wall time and isolation lines by
    their placeholders' (each a line of its own, starting as only it does)."""
    for key, shown in (("receipt_sha256", "receipt sha256 {}"), ("hash_seed", "hash seed {}")):
        if key in before and before[key] is not None:
            text = text.replace(shown.format(before[key]), shown.format(after[key]))
    lines = []
    for line in text.split("\n"):
        if line.startswith("- gate wall time: "):
            line = f"- gate wall time: {SECONDS:.1f} s"
        elif line.startswith("- isolation: "):
            line = BWRAP_LINE
        lines.append(line)
    return "\n".join(lines)
