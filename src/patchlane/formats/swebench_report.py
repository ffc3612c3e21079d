"""``swebench-report.json``, a tasks run's report in SWE-bench's run-report shape
(``triage.swebench``), declared once (``inputs.model``): ``SwebenchReport`` is its model, its
schema derives from it, ``triage.swebench`` writes through it, and it reads the file back
strictly (a test reads every report the tests write).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from patchlane.formats.envelope import document_schema
from patchlane.inputs.fields import Fields
from patchlane.inputs.model import schema_parts, spec

# SWE-bench's run-report keys that patchlane never writes: it does not run the hidden tests.
NOT_MEASURED = ("resolved_instances", "unresolved_instances", "resolved_ids", "unresolved_ids")
_ID = "^.+$"
_TWICE = "{!r} is listed twice"
_NOT_MEASURED = "^(resolved|unresolved)_(instances|ids)$"
# A list of instance ids, each once.
_IDS: dict[str, object] = {"pattern": _ID, "duplicate": _TWICE}


@dataclass(frozen=True)
class SwebenchReport:
    """One model's run report: SWE-bench's keys (``make_run_report``, in its order, less
    ``resolved_*``/``unresolved_*``), then patchlane's own."""

    total_instances: int = field(
        metadata=spec(lo=0, description="SWE-bench's key: the tasks file's instances")
    )
    submitted_instances: int = field(
        metadata=spec(
            lo=0, description="SWE-bench's key: the instances this model gave a prediction for"
        )
    )
    completed_instances: int = field(
        metadata=spec(
            lo=0,
            description="SWE-bench's key: instances gated to a verdict (accepted + undecided + rejected)",
        )
    )
    infra_failure_instances: int = field(
        metadata=spec(
            lo=0,
            description="SWE-bench's key: instances whose outcome is an infrastructure failure (a lost worker, a timeout, a set-up that failed): undecided, never a verdict; also counted in error_instances, as SWE-bench does",
        )
    )
    ambiguous_failure_instances: int = field(
        metadata=spec(
            lo=0, description="SWE-bench's key: always 0 (patchlane knows how each gate ended)"
        )
    )
    empty_patch_instances: int = field(
        metadata=spec(
            lo=0, description="SWE-bench's key: instances whose prediction's model_patch is empty"
        )
    )
    error_instances: int = field(
        metadata=spec(
            lo=0,
            description="SWE-bench's key: instances not gated to a verdict: the patch does not apply, patchlane's own error, no row, or an infrastructure failure",
        )
    )
    completed_ids: tuple[str, ...] = field(metadata=spec(**_IDS, description="SWE-bench's key"))
    incomplete_ids: tuple[str, ...] = field(
        metadata=spec(
            **_IDS, description="SWE-bench's key: tasks this model gave no prediction for"
        )
    )
    empty_patch_ids: tuple[str, ...] = field(metadata=spec(**_IDS, description="SWE-bench's key"))
    submitted_ids: tuple[str, ...] = field(metadata=spec(**_IDS, description="SWE-bench's key"))
    infra_failure_ids: tuple[str, ...] = field(metadata=spec(**_IDS, description="SWE-bench's key"))
    ambiguous_failure_ids: tuple[str, ...] = field(
        metadata=spec(**_IDS, description="SWE-bench's key: always empty")
    )
    failure_reasons: Mapping[str, str] = field(
        metadata=spec(
            description="SWE-bench's key: the infrastructure reason per infra_failure_ids instance"
        )
    )
    error_ids: tuple[str, ...] = field(metadata=spec(**_IDS, description="SWE-bench's key"))
    model_name_or_path: str = field(
        metadata=spec(
            pattern=_ID,
            description="the model whose run this is (SWE-bench's reports are per model run)",
        )
    )
    accepted_instances: int = field(
        metadata=spec(lo=0, description="instances with a candidate that earned accept_for_review")
    )
    undecided_instances: int = field(
        metadata=spec(
            lo=0, description="instances gated to undecided (not an infrastructure failure)"
        )
    )
    rejected_instances: int = field(metadata=spec(lo=0, description="instances gated to reject"))
    does_not_apply_instances: int = field(
        metadata=spec(
            lo=0,
            description="instances whose patch does not apply to the base (in error_instances)",
        )
    )
    accepted_ids: tuple[str, ...] = field(
        metadata=spec(**_IDS, description="the instances accepted.jsonl holds")
    )
    undecided_ids: tuple[str, ...] = field(metadata=spec(**_IDS))
    rejected_ids: tuple[str, ...] = field(metadata=spec(**_IDS))
    does_not_apply_ids: tuple[str, ...] = field(metadata=spec(**_IDS))
    accepted_not_written: tuple[str, ...] = field(
        metadata=spec(
            description="evidence folders of accepted candidates left out of accepted.jsonl: another candidate of the same model for the same instance, earlier in the predictions, is written (SWE-bench keys predictions by instance_id)"
        )
    )
    not_measured: tuple[str, ...] = field(
        metadata=spec(
            pattern=_NOT_MEASURED,
            duplicate=_TWICE,
            description="SWE-bench's keys patchlane never writes: resolved is the verdict of the benchmark's hidden tests, which patchlane does not run",
        )
    )

    def check_read(self, top: Fields) -> None:
        """Refuse a report whose ``not_measured`` is not exactly ``NOT_MEASURED`` or that
        names an ambiguous failure (patchlane knows how each gate ended)."""
        if self.not_measured != NOT_MEASURED:
            raise top.fail("not_measured", f"expected {list(NOT_MEASURED)}")
        if self.ambiguous_failure_ids or self.ambiguous_failure_instances:
            raise top.fail("ambiguous_failure_ids", "expected none")


def swebench_schema() -> dict[str, object]:
    """Return the JSON Schema of ``swebench-report.json``, derived from ``SwebenchReport``."""
    properties, required = schema_parts(SwebenchReport)
    schema = document_schema("swebench-report.json", "", dict(properties), required)
    schema["title"] = (
        "patchlane triage --tasks: SWE-bench run report (swebench-report.json, one per model)"
    )
    return schema
