"""The rows of a tasks run and its resume ledger: ``triage.jsonl`` in the out dir.

A row is triage's row (``summary.Row.to_json``) and the pair's own keys: ``instance_id``,
``model_name_or_path``, ``key`` (the pair's content key, ``units.pair_key``), ``infra``
(an infrastructure failure: ``undecided``, never a judgement of the patch), ``attempts``,
``base_commit`` and ``repo``. Each row is appended the moment its pair is judged, so a
driver killed mid-run keeps what was judged; a later run over the same out dir reads them
back and does not gate again a pair whose ``key`` has a row that is not ``infra``.
At the end the file is rewritten whole, one row per pair of the run, in the predictions'
order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from patchlane.inputs.jsonio import atomic_write_text
from patchlane.triage.summary import Row
from patchlane.triage.units import BaseSpec, Pair, PairResult

JsonRow = dict[str, object]
PAIR_KEYS = ("instance_id", "model_name_or_path", "key", "infra", "attempts", "base_commit", "repo")


def pair_row(pair: Pair, base: BaseSpec, result: PairResult, evidence: str | None) -> JsonRow:
    """Return ``pair``'s row from its ``result``: the child's triage row when there is one
    (its name, source and evidence replaced by the pair's, as the out dir holds them), the
    result's verdict, exit code and reason over it, and the pair's own keys."""
    child: dict[str, object] = {}
    if result.row:
        try:
            loaded = json.loads(result.row)
        except ValueError:
            loaded = None
        child = loaded if isinstance(loaded, dict) else {}
    row: JsonRow = {
        "name": pair.name,
        "source": pair.source,
        "kind": "patch",
        "head": _text(child.get("head")),
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "reason": result.reason,
        "slice_count": _count(child.get("slice_count")),
        "suite_size": _count(child.get("suite_size")),
        "slice_added": _count(child.get("slice_added")) or 0,
        "seconds": round(result.seconds, 3),
        "evidence": evidence,
        "same_as": None,
    }
    row.update(_pair_keys(pair, base, infra=result.infra, attempts=result.attempts))
    return row


def reused_row(earlier: Mapping[str, object], pair: Pair, base: BaseSpec, same_as: str) -> JsonRow:
    """Return ``earlier`` (a row judged for the same content key) as ``pair``'s: its own
    name, source and ids, the verdict and evidence of ``earlier``, and ``same_as`` naming
    the pair whose gate it shares."""
    row = dict(earlier)
    row.update({"name": pair.name, "source": pair.source, "same_as": same_as})
    row.update(
        _pair_keys(pair, base, infra=bool(earlier.get("infra")), attempts=_attempts(earlier))
    )
    return row


def _pair_keys(pair: Pair, base: BaseSpec, *, infra: bool, attempts: int) -> JsonRow:
    return {
        "instance_id": pair.instance_id,
        "model_name_or_path": pair.model,
        "key": pair.key,
        "infra": infra,
        "attempts": attempts,
        "base_commit": base.base_commit,
        "repo": base.repo,
    }


def read_ledger(path: Path) -> dict[str, JsonRow]:
    """Return the judged rows of an earlier run's ``triage.jsonl`` by their ``key`` (the
    last row of a key wins, a row of its own gate over one that shares another's: the
    same patch under two names); ``{}`` when there is no file.

    Rows that are ``infra`` are left out (their pairs are gated again), and so is a line
    that is not a well-formed row: the last line of a driver killed while writing it, or
    a file from a run without ``--tasks``. Such a pair is simply gated again. Raises
    nothing."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    judged: dict[str, JsonRow] = {}
    # Rows end at "\n" only: ``json.dumps`` never writes a raw one inside a row, but with
    # ``ensure_ascii=False`` it keeps U+2028, U+0085 and the like, which ``splitlines``
    # would also cut at (a model name holding one would tear its row in two).
    for line in text.split("\n"):
        row = _well_formed(line)
        if row is None or row["infra"] is not False:
            continue
        key = str(row["key"])
        # A row of the gate itself, not one that shares it: that names the folder.
        if key not in judged or row.get("same_as") is None or judged[key].get("same_as"):
            judged[key] = row
    return judged


def _well_formed(line: str) -> JsonRow | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    if not isinstance(row, dict):
        return None
    key, verdict = row.get("key"), row.get("verdict")
    if not (isinstance(key, str) and len(key) == 64 and isinstance(verdict, str)):
        return None
    if not isinstance(row.get("infra"), bool) or not isinstance(row.get("exit_code"), int):
        return None
    if not isinstance(row.get("name"), str):
        return None
    return row


def append(path: Path, row: Mapping[str, object]) -> None:
    """Append ``row`` to ``path`` as one line, in one write, so that a run killed later
    keeps it. Raises ``OSError``."""
    line = json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def rewrite(path: Path, rows: Sequence[Mapping[str, object]]) -> None:
    """Write ``rows`` as ``path``'s whole content, atomically."""

    text = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows)
    atomic_write_text(path, text)


def as_row(row: Mapping[str, object]) -> Row:
    """Return a tasks row as triage's ``Row`` (for ``triage.md`` and the exit code)."""
    seconds = row.get("seconds")
    return Row(
        name=str(row["name"]),
        source=str(row.get("source", "")),
        kind=str(row.get("kind", "patch")),
        head=_text(row.get("head")),
        verdict=str(row["verdict"]),
        exit_code=int(str(row["exit_code"])),
        reason=str(row.get("reason", "")),
        slice_count=_count(row.get("slice_count")),
        suite_size=_count(row.get("suite_size")),
        seconds=float(seconds) if isinstance(seconds, int | float) else 0.0,
        evidence=_text(row.get("evidence")),
        same_as=_text(row.get("same_as")),
        slice_added=_count(row.get("slice_added")) or 0,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _attempts(row: Mapping[str, object]) -> int:
    return _count(row.get("attempts")) or 1
