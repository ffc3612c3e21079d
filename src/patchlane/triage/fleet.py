"""``patchlane triage --tasks``: a benchmark's worth of tasks at once
(docs/how-to/benchmark-run.md).

The driver's steps, in order:

1. The tasks and predictions are read strictly and grouped into units, one per base
   (``tasks``): bad input is exit 2 before anything runs.
2. The resume ledger (``ledger``): a pair whose content key already has a judged row in the
   out dir's ``triage.jsonl`` is not gated again, nor is a second pair with the key of an
   earlier one in this run (the same patch for the same base, under another name): each
   such pair gets the row of the gate it shares.
3. The engine prepares each base once where it runs and gates its pairs there. Every
   result that comes back is checked here before it is believed (``evidence``): the
   archive unpacked safely into ``OUT/<instance>/<model>/``, and an ``accept_for_review``
   whose receipt does not verify against its slice becomes ``undecided``. The row is then
   appended to ``triage.jsonl`` at once, so a driver killed mid-run keeps what was judged.
4. At the end: ``triage.jsonl`` rewritten in the predictions' order, ``triage.md``, and the
   SWE-bench outputs (``swebench``: ``swebench-report.json``, ``accepted.jsonl``).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.infra.ui import one_line
from patchlane.inputs.jsonio import atomic_write_text
from patchlane.triage.evidence import EvidenceRefused, check_receipt, unpack
from patchlane.triage.ledger import (
    JsonRow,
    append,
    as_row,
    pair_row,
    read_ledger,
    reused_row,
    rewrite,
)
from patchlane.triage.summary import JSONL_NAME, MD_NAME, to_markdown
from patchlane.triage.swebench import write_swebench
from patchlane.triage.units import (
    INFRA_VERDICT,
    BaseEvent,
    BaseSpec,
    Engine,
    Pair,
    PairResult,
    RunPlan,
    Unit,
    infra_result,
)

PROGRESS_EVERY_S = 10.0


@dataclass(frozen=True)
class FleetOptions:
    """A tasks run: the ``units`` to judge (``tasks.group``'s), ``out_dir`` (absolute,
    created), the ``plan`` every pair is gated with, and ``seed``: the ``--seed`` given,
    which every receipt must answer to (``None``: the one its replay report names)."""

    units: tuple[Unit, ...]
    out_dir: Path
    plan: RunPlan
    seed: int | None = None
    # The tasks file's instance ids (a task without predictions counts in the SWE-bench
    # report); ``None``: the instances of the units.
    task_ids: tuple[str, ...] | None = None
    # The pairs' sources (``FILE:LINE``) in the predictions' order: the order of the rows.
    order: tuple[str, ...] = ()


Say = Callable[[str], None]


def run_tasks(opts: FleetOptions, engine: Engine, say: Say | None = None) -> list[JsonRow]:
    """Judge every pair of ``opts.units`` (those the ledger has not judged) on ``engine``
    and return one row per pair, in the predictions' order (``opts.order``); ``say`` takes the progress line every
    10 s and once at the end (``None``: silent). Writes the evidence folders,
    ``triage.jsonl`` and ``triage.md``. Raises what the engine raises for a failure of its
    own (a cluster that cannot be reached); never for one pair's or one base's failure."""
    jsonl = opts.out_dir / JSONL_NAME
    judged = read_ledger(jsonl)
    todo, plan_rows = _plan(opts.units, judged, opts.out_dir)
    collector = _Collector(opts, {p.key: (p, u.base) for u in todo for p in u.pairs}, engine.name)
    ticker = _Ticker(collector, say) if say is not None else None
    try:
        if todo:
            engine.run(todo, opts.plan, collector.report)
    finally:
        if ticker is not None:
            ticker.stop()
    results = collector.rows()
    pairs = _in_order([(p, u.base) for u in opts.units for p in u.pairs], opts.order)
    rows = [_final_row(p, base, plan_rows, results, judged) for p, base in pairs]
    _write_summary(opts.out_dir, rows)

    write_swebench(opts.out_dir, rows, [p for p, _ in pairs], opts.task_ids)
    return rows


def _in_order(
    pairs: list[tuple[Pair, BaseSpec]], order: Sequence[str]
) -> list[tuple[Pair, BaseSpec]]:
    """``pairs`` in the predictions' order (``order``: their sources), else as given."""
    position = {source: i for i, source in enumerate(order)}
    return sorted(pairs, key=lambda pb: position.get(pb[0].source, len(position)))


def _plan(
    units: Sequence[Unit], judged: Mapping[str, JsonRow], out_dir: Path
) -> tuple[tuple[Unit, ...], dict[str, str]]:
    """The units left to gate (each with only its pairs to gate) and, for every pair that
    is not gated, the name of the pair whose row it takes (``""``: the ledger's row)."""
    first: dict[str, str] = {}
    shares: dict[str, str] = {}
    todo: list[Unit] = []
    for unit in units:
        gate: list[Pair] = []
        for pair in unit.pairs:
            earlier = judged.get(pair.key)
            if earlier is not None and _evidence_kept(earlier, out_dir):
                shares[pair.name] = ""
            elif pair.key in first:
                shares[pair.name] = first[pair.key]
            else:
                first[pair.key] = pair.name
                gate.append(pair)
        if gate:
            todo.append(Unit(unit.base, tuple(gate)))
    return tuple(todo), shares


def _evidence_kept(row: Mapping[str, object], out_dir: Path) -> bool:
    """Whether an earlier row's evidence folder is still there (a row without one never
    had any: a patch that does not apply)."""
    evidence = row.get("evidence")
    return evidence is None or (isinstance(evidence, str) and (out_dir / evidence).is_dir())


def _final_row(
    pair: Pair,
    base: BaseSpec,
    shares: Mapping[str, str],
    results: Mapping[str, JsonRow],
    judged: Mapping[str, JsonRow],
) -> JsonRow:
    """``pair``'s row: its own result, the ledger's, or that of the pair it shares."""
    if pair.name not in shares:
        got = results.get(pair.key)
        if got is not None:
            return got
        lost = infra_result(pair, "the engine returned no result for it", 1)
        return pair_row(pair, base, lost, None)
    first = shares[pair.name]
    if first == "":
        earlier = judged[pair.key]
        row = reused_row(earlier, pair, base, str(earlier["name"]))
        if earlier["name"] == pair.name:  # its own row again: it shares what it shared
            row["same_as"] = earlier.get("same_as")
        return row
    return reused_row(results[pair.key], pair, base, first)


class _Collector:
    """Takes the engine's reports (one at a time): checks and writes each result."""

    def __init__(
        self, opts: FleetOptions, pairs: Mapping[str, tuple[Pair, BaseSpec]], engine: str
    ) -> None:
        self._opts = opts
        self._pairs = pairs
        self._rows: dict[str, JsonRow] = {}
        self._lock = threading.Lock()
        self.engine = engine
        self.bases_total = len({b.key for _, b in pairs.values()})
        self.bases_ready = 0
        self.bases_failed = 0
        self.pairs_total = len(pairs)
        self.verdicts: Counter[str] = Counter()
        self.infra = 0

    def report(self, event: BaseEvent | PairResult) -> None:
        if isinstance(event, BaseEvent):
            with self._lock:
                self.bases_ready += event.error is None
                self.bases_failed += event.error is not None
            return
        got = self._pairs.get(event.key)
        if got is None or event.key in self._rows:
            return  # not a pair of this run, or reported twice: the first report stands
        pair, base = got
        row = self._checked(pair, base, event)
        append(self._opts.out_dir / JSONL_NAME, row)
        with self._lock:
            self._rows[pair.key] = row
            self.verdicts[str(row["verdict"])] += 1
            self.infra += bool(row["infra"])

    def _checked(self, pair: Pair, base: BaseSpec, result: PairResult) -> JsonRow:
        """``result`` made a row: its evidence unpacked, its receipt checked."""

        folder = self._opts.out_dir / pair.name
        evidence: str | None = None
        if result.evidence:
            try:
                unpack(result.evidence, folder)
                evidence = pair.name
            except (EvidenceRefused, OSError) as e:
                result = _infra(result, f"infrastructure: evidence refused: {e}")
        row = pair_row(pair, base, result, evidence)
        if row["verdict"] == "accept_for_review":
            head = row["head"] if isinstance(row["head"], str) else None
            problem = (
                "evidence: none came back"
                if evidence is None
                else check_receipt(folder, head, self._opts.seed)
            )
            if problem is not None:
                row.update(verdict=INFRA_VERDICT, exit_code=3, reason=one_line(problem))
        return row

    def rows(self) -> dict[str, JsonRow]:
        with self._lock:
            return dict(self._rows)

    def line(self) -> str:
        """The progress line: bases ready, pairs done by verdict, infrastructure failures."""
        with self._lock:
            done = sum(self.verdicts.values())
            by = ", ".join(f"{n} {v}" for v, n in sorted(self.verdicts.items()))
            failed = f", {self.bases_failed} failed" if self.bases_failed else ""
            return (
                f"tasks [{self.engine}]: bases {self.bases_ready}/{self.bases_total} ready"
                f"{failed}; pairs {done}/{self.pairs_total} done"
                + (f" ({by})" if by else "")
                + f"; {self.infra} infrastructure"
            )


def _infra(result: PairResult, reason: str) -> PairResult:
    return dataclasses.replace(
        result, verdict=INFRA_VERDICT, exit_code=3, reason=one_line(reason), infra=True
    )


class _Ticker:
    """Says the collector's line every ``PROGRESS_EVERY_S`` seconds, and once at the end."""

    def __init__(self, collector: _Collector, say: Say) -> None:
        self._collector = collector
        self._say = say
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tasks-progress", daemon=True)
        self._start = time.monotonic()
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(PROGRESS_EVERY_S):
            self._say(f"{self._collector.line()} ({time.monotonic() - self._start:.0f} s)")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._say(f"{self._collector.line()} ({time.monotonic() - self._start:.0f} s)")


def _write_summary(out_dir: Path, rows: Sequence[JsonRow]) -> None:
    """``triage.jsonl`` (the run's rows in order) and ``triage.md``."""

    rewrite(out_dir / JSONL_NAME, rows)
    text = to_markdown([as_row(r) for r in rows])
    infra = sum(bool(r["infra"]) for r in rows)
    if infra:
        text += (
            f"\n{infra} of them undecided for the infrastructure (a lost worker, a timeout, "
            "a set-up that failed): not a judgement of the patch; a rerun over this "
            "folder gates them again.\n"
        )
    atomic_write_text(out_dir / MD_NAME, text)


def stderr_line(text: str) -> None:
    """Print a progress line on stderr."""
    print(f"patchlane: {one_line(text)}", file=sys.stderr, flush=True)
