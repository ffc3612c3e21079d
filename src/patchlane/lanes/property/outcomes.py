"""The judge step: each property's outcome from its run child's records (``judge`` says
which to believe), and what the children said of imports that failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from patchlane.formats.property_report import Failure, PropertyRun
from patchlane.lanes.property import judge
from patchlane.lanes.property.jobs import Finished

# How the child's message for a module that did not import begins (``child.properties``).
IMPORT_FAILED = "import failed: "


@dataclass(frozen=True)
class Outcomes:
    """The judge step's result: every property's run and every failure, in job order;
    the seconds each head property that passed took (``passed``, by ``(module, name)``:
    the audit's budget); the package a run's import could not find, by ``(module,
    source)`` (``missing``: the child's hint); and the property modules whose base version
    did not import against the head's code (``base_import_failed``: the patch's fault,
    unless the base's own code fails it too)."""

    runs: tuple[PropertyRun, ...]
    failures: tuple[Failure, ...]
    passed: Mapping[tuple[str, str], float]
    missing: Mapping[tuple[str, str], str]
    base_import_failed: frozenset[str]


def judge_runs(finished: Sequence[Finished], seed: int) -> Outcomes:
    """Return what the run children's results (``run.Ran.finished``) say of each property
    they were asked about: a pass only from a trusted record of one; a child that timed
    out, or whose results cannot be trusted, fails every property it gave no pass for."""
    runs: list[PropertyRun] = []
    failures: list[Failure] = []
    passed: dict[tuple[str, str], float] = {}
    missing: dict[tuple[str, str], str] = {}
    base_import_failed: set[str] = set()
    for one in finished:
        job, result = one.job, one.result
        got, problems = judge.records(job.names, result, judge.valid_run_record)
        for name in job.names:
            record = got.get(name)
            style = record["style"] if record is not None else "unknown"
            if record is not None and record["outcome"] == "fail":
                if record["missing"] is not None and not problems:
                    missing.setdefault((job.module, job.source), record["missing"])
                if job.source == "base" and str(record["message"]).startswith(IMPORT_FAILED):
                    # A claim of the child, where head code ran: ``faults`` decides.
                    base_import_failed.add(job.module)
                failure = Failure(
                    name,
                    job.module,
                    job.source,
                    seed,
                    record["case_index"],
                    record["arguments"],
                    record["message"],
                    record["kind"],
                )
            elif record is not None and not problems:
                runs.append(PropertyRun(job.module, name, job.source, style, "pass"))
                if job.source == "head":
                    passed[(job.module, name)] = float(record["seconds"])
                continue
            elif record is None and result.timed_out:
                message = (
                    f"timed out after {job.timeout_s:g} s (timeout_s); "
                    "the child's process group was killed"
                )
                failure = Failure(
                    name, job.module, job.source, seed, None, None, message, "timeout"
                )
            else:
                why = "; ".join(problems[:3]) or "no result"
                prefix = "reported a pass, but " if record is not None else ""
                message = f"{prefix}the child's results cannot be trusted: {why}"
                failure = Failure(
                    name, job.module, job.source, seed, None, None, message, "protocol"
                )
            failures.append(failure)
            outcome = {"assertion": "fail", "timeout": "timeout"}.get(failure.kind, "error")
            runs.append(PropertyRun(job.module, name, job.source, style, outcome))
    return Outcomes(tuple(runs), tuple(failures), passed, missing, frozenset(base_import_failed))
