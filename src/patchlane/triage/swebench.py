"""A tasks run's results in SWE-bench's own shapes: ``swebench-report.json`` and
``accepted.jsonl`` (docs/reference/files.md, "What ``triage --tasks`` writes").

``swebench-report.json`` is keyed as the run report SWE-bench's harness writes
(``swebench/harness/reporting.py`` ``make_run_report``, swebench 5.0.2): the same key names
for the counts and id lists, with patchlane's own keys beside them for what patchlane
decides (``accepted_*``, ``rejected_*``, ``undecided_*``). It never holds ``resolved_*`` or
``unresolved_*``: "resolved" is the verdict of the benchmark's hidden tests
(``FAIL_TO_PASS``/``PASS_TO_PASS``), which patchlane does not run. A zero there would read
as "nothing was resolved", so the keys are absent and ``not_measured`` names them: a
consumer that needs them fails loudly instead of reading a claim nobody made.

``accepted.jsonl`` holds the predictions that earned ``accept_for_review`` in SWE-bench's
predictions format (``instance_id``, ``model_name_or_path``, ``model_patch``, the patch
exactly as given), ready for ``python -m swebench.harness.run_evaluation
--predictions_path accepted.jsonl``. That harness keys predictions by ``instance_id``
(``{pred["instance_id"]: pred for pred in predictions}``): a second line for an instance
would silently replace the first. So the file holds at most one prediction per instance
and one model:

- one model in the run: ``swebench-report.json`` and ``accepted.jsonl``;
- several models: one pair per model, ``swebench-report.<M>.json`` and
  ``accepted.<M>.jsonl``, ``M`` the model's name as SWE-bench names its files (``/`` as
  ``__``) made safe as a file name; the two plain names are then not written, so a script
  that expects one model finds no file rather than a file that mixes models;
- several candidates of one model for one instance: the instance counts once, by its best
  outcome (accepted, then infrastructure, undecided, rejected, not gated, empty); the first
  accepted candidate in the predictions' order is written, the others are named in the
  report's ``accepted_not_written``.

The out dir holds exactly this run's SWE-bench files: ones an earlier run wrote under a
layout or a model this run does not have are removed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import InputError

# SWE-bench's run-report keys that patchlane never writes (``formats.swebench_report``).
from patchlane.formats.swebench_report import NOT_MEASURED as NOT_MEASURED
from patchlane.formats.swebench_report import SwebenchReport
from patchlane.inputs.jsonio import atomic_write_text, dumps_report, loads_strict
from patchlane.inputs.model import to_data
from patchlane.triage.candidates import safe_name, unique_names
from patchlane.triage.summary import (
    DOES_NOT_APPLY,
    EMPTY_PATCH,
    ERROR,
    GATED,
    JSONL_NAME,
    NOT_GATED,
    Row,
)
from patchlane.triage.units import INFRA_VERDICT, Pair

REPORT_NAME = "swebench-report.json"
ACCEPTED_NAME = "accepted.jsonl"
# Every name this module may write into the out dir (a candidate's folder must take none).
OUTPUT_NAMES = frozenset({REPORT_NAME, ACCEPTED_NAME})
_PER_MODEL = re.compile(r"\A(?:swebench-report\..+\.json|accepted\..+\.jsonl)\Z")
# The keys a tasks run adds to triage's own row (``Row.to_json``).
TASK_KEYS = ("instance_id", "model_name_or_path", "key", "infra", "attempts", "base_commit", "repo")
ROW_KEYS = tuple(Row("", "", "", None, "", 0, "", None, None, 0.0, None).to_json()) + TASK_KEYS
_HEX64 = re.compile(r"\A[0-9a-f]{64}\Z")

# An instance's outcome for one model, best first: the rank that picks it among the
# instance's candidates.
ACCEPTED, INFRA, UNDECIDED, REJECTED, NOT_APPLIED, FAILED, MISSING, EMPTY = (
    "accepted", "infra", "undecided", "rejected", "does_not_apply", "error", "missing", "empty",
)  # fmt: skip
_RANK = {o: i for i, o in enumerate((ACCEPTED, INFRA, UNDECIDED, REJECTED, NOT_APPLIED,
                                     FAILED, MISSING, EMPTY))}  # fmt: skip
_BY_VERDICT = {
    "accept_for_review": ACCEPTED,
    "undecided": UNDECIDED,
    "reject": REJECTED,
    DOES_NOT_APPLY: NOT_APPLIED,
    EMPTY_PATCH: EMPTY,
    ERROR: FAILED,
}


@dataclass(frozen=True)
class TaskRow:
    """The part of one tasks-run row (a line of its ``triage.jsonl``) these reports read:
    the pair's evidence folder ``name``, ``instance_id``, ``model`` (the prediction's
    ``model_name_or_path``), ``key`` (the pair's content key), ``verdict``, ``reason``,
    ``infra`` and ``attempts``."""

    name: str
    instance_id: str
    model: str
    key: str
    verdict: str
    reason: str
    infra: bool
    attempts: int

    @classmethod
    def from_json(cls, value: object, file: str, line: int | None = None) -> TaskRow:
        """Return the row ``value`` (a JSON object) as read from ``file`` (at ``line``).

        Raises ``InputError`` naming the file and line when ``value`` is not an object with
        exactly ``ROW_KEYS``, or a value the reports read has the wrong type (non-empty
        strings; a verdict triage writes; ``key`` 64 lowercase hex; ``infra`` a bool, and
        then ``verdict`` undecided; ``attempts`` a positive integer)."""

        def bad(what: str) -> InputError:
            return InputError(file, f"not a tasks-run row: {what}", line)

        if not isinstance(value, Mapping):
            raise bad(f"a JSON {type(value).__name__} where an object is expected")
        missing = [k for k in ROW_KEYS if k not in value]
        extra = sorted(k for k in value if k not in ROW_KEYS)
        if missing or extra:
            said = [f"missing keys {missing}"] if missing else []
            raise bad(", ".join(said + ([f"unknown keys {extra}"] if extra else [])))
        for k in ("name", "instance_id", "model_name_or_path", "verdict"):
            if not isinstance(value[k], str) or not value[k]:
                raise bad(f"{k} must be a non-empty string")
        if not isinstance(value["reason"], str):
            raise bad("reason must be a string")
        if value["verdict"] not in GATED + NOT_GATED:
            raise bad(f"unknown verdict {value['verdict']!r}")
        if not isinstance(value["key"], str) or not _HEX64.match(value["key"]):
            raise bad("key must be 64 lowercase hex digits")
        infra, attempts = value["infra"], value["attempts"]
        if not isinstance(infra, bool):
            raise bad("infra must be true or false")
        if infra and value["verdict"] != INFRA_VERDICT:
            raise bad(f"an infrastructure failure's verdict is {INFRA_VERDICT}")
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise bad("attempts must be a positive integer")
        return cls(
            value["name"],
            value["instance_id"],
            value["model_name_or_path"],
            value["key"],
            value["verdict"],
            value["reason"],
            infra,
            attempts,
        )


def read_rows(path: Path) -> list[TaskRow]:
    """Return the rows of the tasks run's ``triage.jsonl`` at ``path``, in file order
    (blank lines skipped).

    Raises ``InputError`` (the file and line) when it cannot be read, is not UTF-8, or a
    line is not one JSON object with a tasks-run row's keys (``TaskRow.from_json``)."""
    label = os.fspath(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise InputError(label, f"cannot read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise InputError(label, "not UTF-8 text") from e
    rows = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            value = loads_strict(line)
        except (ValueError, RecursionError) as e:
            raise InputError(label, f"not one JSON object ({str(e)[:120]})", number) from None
        rows.append(TaskRow.from_json(value, label, number))
    return rows


def write_swebench(
    out_dir: Path,
    rows: Sequence[TaskRow | Mapping[str, object]],
    pairs: Sequence[Pair],
    task_ids: Iterable[str] | None = None,
) -> list[Path]:
    """Write the run's SWE-bench files into ``out_dir``, each atomically, and remove the
    ones an earlier run left that this run does not write. Returns the paths written,
    report first then its predictions, per model in the order models first appear in
    ``pairs``.

    ``rows`` are the run's final rows (``TaskRow``, or the JSON objects of
    ``triage.jsonl``, checked with ``TaskRow.from_json``; the i-th counts as line i).
    ``pairs`` are the predictions of this run, in the predictions' order: a row reports on
    the pair with the same ``instance_id``, ``model_name_or_path`` and ``key`` (the key
    covers the patch's bytes, so the patch written is the one judged); when several rows
    match, the last that is not an infrastructure failure, else the last. A row no pair
    matches (an earlier run's prediction) is left out; a pair with no row counts as an
    error (not judged). ``task_ids`` are the instance ids of the tasks file (a task
    without predictions is ``incomplete``, as SWE-bench counts a dataset instance without
    one); ``None``: the instances of ``pairs``.

    Raises ``InputError`` for a malformed row, ``UnsafeWriteError`` when a file to write
    is a symbolic link, ``ValueError`` when a pair's instance is not among ``task_ids``
    or its patch is not UTF-8 (a bug of the caller: the tasks reader lets neither through)."""
    label = os.fspath(out_dir / JSONL_NAME)
    checked = [
        r if isinstance(r, TaskRow) else TaskRow.from_json(r, label, i)
        for i, r in enumerate(rows, 1)
    ]
    tasks = sorted(set(task_ids) if task_ids is not None else {p.instance_id for p in pairs})
    unknown = sorted({p.instance_id for p in pairs} - set(tasks))
    if unknown:
        raise ValueError(f"predictions for instances that are no task: {unknown[:5]}")
    models = list(dict.fromkeys(p.model for p in pairs))
    final = _final_rows(checked)
    if len(models) == 1:
        names = [(REPORT_NAME, ACCEPTED_NAME)]
    else:
        files = unique_names(safe_name(m.replace("/", "__")) for m in models)
        names = [(f"swebench-report.{f}.json", f"accepted.{f}.jsonl") for f in files]
    written: list[Path] = []
    for model, (report_name, accepted_name) in zip(models, names, strict=True):
        mine = [p for p in pairs if p.model == model]
        report, accepted = _model_report(model, mine, final, tasks)
        atomic_write_text(out_dir / report_name, dumps_report(report))
        atomic_write_text(out_dir / accepted_name, accepted_jsonl(accepted))
        written += [out_dir / report_name, out_dir / accepted_name]
    _remove_stale(out_dir, {p.name for p in written})
    return written


def _model_report(
    model: str, pairs: Sequence[Pair], final: Mapping[tuple[str, str, str], TaskRow],
    task_ids: Sequence[str],
) -> tuple[dict[str, object], list[Pair]]:  # fmt: skip
    """Return one model's run report and the pairs its ``accepted.jsonl`` holds (one per
    accepted instance, in the order of ``pairs``).

    ``pairs`` are the model's predictions, ``final`` the deciding row per (instance, model,
    key) (``_final_rows``), ``task_ids`` every task's instance id, sorted. The sets keep
    SWE-bench's partition of the tasks: ``completed`` (gated to a verdict: ``accepted``,
    ``undecided`` or ``rejected``), ``error`` (not gated: the patch does not apply,
    patchlane's own error, no row, or an infrastructure failure, which is also in
    ``infra_failure_ids`` with its reason, as SWE-bench keeps its infra failures inside
    ``error_ids``), ``empty_patch`` and ``incomplete`` (no prediction)."""
    graded = [(_outcome(p, final.get((p.instance_id, p.model, p.key))), p) for p in pairs]
    outcomes: dict[str, list[tuple[str, Pair]]] = {}
    for outcome, pair in graded:
        outcomes.setdefault(pair.instance_id, []).append((outcome, pair))
    # min() keeps the first of equals: the first candidate in the predictions' order.
    best = {i: min(found, key=lambda f: _RANK[f[0]]) for i, found in outcomes.items()}

    def ids(*wanted: str) -> list[str]:
        return sorted(i for i, (o, _) in best.items() if o in wanted)

    accepted = [p for o, p in graded if o == ACCEPTED and best[p.instance_id][1] is p]
    not_written = [p.name for o, p in graded if o == ACCEPTED and best[p.instance_id][1] is not p]
    completed = ids(ACCEPTED, UNDECIDED, REJECTED)
    errors = ids(INFRA, NOT_APPLIED, FAILED, MISSING)
    empty = ids(EMPTY)
    infra = ids(INFRA)
    incomplete = sorted(set(task_ids) - set(outcomes))
    reasons = {
        i: final[(p.instance_id, p.model, p.key)].reason for i, (o, p) in best.items() if o == INFRA
    }
    report = SwebenchReport(
        # SWE-bench's keys (make_run_report), in its order, less resolved_*/unresolved_*.
        total_instances=len(task_ids),
        submitted_instances=len(outcomes),
        completed_instances=len(completed),
        infra_failure_instances=len(infra),
        # patchlane knows how each gate ended; it never guesses from logs as SWE-bench's
        # classify_logs does, so no failure is ambiguous.
        ambiguous_failure_instances=0,
        empty_patch_instances=len(empty),
        error_instances=len(errors),
        completed_ids=tuple(completed),
        incomplete_ids=tuple(incomplete),
        empty_patch_ids=tuple(empty),
        submitted_ids=tuple(sorted(outcomes)),
        infra_failure_ids=tuple(infra),
        ambiguous_failure_ids=(),
        failure_reasons=dict(sorted(reasons.items())),
        error_ids=tuple(errors),
        # patchlane's own keys.
        model_name_or_path=model,
        accepted_instances=len(ids(ACCEPTED)),
        undecided_instances=len(ids(UNDECIDED)),
        rejected_instances=len(ids(REJECTED)),
        does_not_apply_instances=len(ids(NOT_APPLIED)),
        accepted_ids=tuple(ids(ACCEPTED)),
        undecided_ids=tuple(ids(UNDECIDED)),
        rejected_ids=tuple(ids(REJECTED)),
        does_not_apply_ids=tuple(ids(NOT_APPLIED)),
        accepted_not_written=tuple(not_written),
        not_measured=NOT_MEASURED,
    )
    return to_data(report), accepted


def accepted_jsonl(pairs: Sequence[Pair]) -> str:
    """Return ``accepted.jsonl``'s text: one SWE-bench prediction per pair, one line each.

    ``model_patch`` is the pair's bytes decoded, exactly the string the prediction gave
    (the predictions reader encodes it as UTF-8 and refuses lone surrogates). Every non-ASCII
    character is escaped (``ensure_ascii``): SWE-bench opens the file in the locale's
    encoding, and ASCII reads the same in every one; no raw U+2028 either, for readers that
    split lines on it. Raises ``ValueError`` for a patch that is not UTF-8."""
    lines = []
    for p in pairs:
        prediction = {
            "instance_id": p.instance_id,
            "model_name_or_path": p.model,
            "model_patch": p.patch.decode("utf-8"),
        }
        lines.append(json.dumps(prediction, ensure_ascii=True, allow_nan=False) + "\n")
    return "".join(lines)


def _outcome(pair: Pair, row: TaskRow | None) -> str:
    # SWE-bench's own rule for an empty prediction ("" or null), whatever was run.
    if not pair.patch:
        return EMPTY
    if row is None:
        return MISSING
    if row.infra:
        return INFRA
    return _BY_VERDICT[row.verdict]


def _final_rows(rows: Sequence[TaskRow]) -> dict[tuple[str, str, str], TaskRow]:
    """Return the deciding row per (instance, model, key): the last that is not an
    infrastructure failure (a retry that judged the pair), else the last."""
    final: dict[tuple[str, str, str], TaskRow] = {}
    for row in rows:
        k = (row.instance_id, row.model, row.key)
        if not row.infra or k not in final or final[k].infra:
            final[k] = row
    return final


def _remove_stale(out_dir: Path, keep: set[str]) -> None:
    """Remove the SWE-bench files (regular files or links, never a folder) in ``out_dir``
    that this run did not write: an earlier run's, under another layout or model."""
    try:
        entries = list(os.scandir(out_dir))
    except FileNotFoundError:
        return
    for entry in entries:
        ours = entry.name in OUTPUT_NAMES or _PER_MODEL.match(entry.name)
        if ours and entry.name not in keep and not entry.is_dir(follow_symlinks=False):
            Path(entry.path).unlink()
