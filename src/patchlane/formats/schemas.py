"""The JSON Schemas generated from the formats' models, and the command that writes them.

Each format declared as a model (``inputs.model``) has its schema generated here; the files
under ``patchlane/schemas/`` are this module's output, and a test holds them to it, so the
model, its reader, its writer and its schema cannot disagree (docs/architecture.md §4).
Run ``python -m patchlane.formats.schemas`` after changing a model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from patchlane.formats.classify_file import classify_schema
from patchlane.formats.depmap import map_schema
from patchlane.formats.envelope import report_schema
from patchlane.formats.fixture_report import LANE as FIXTURE
from patchlane.formats.fixture_report import FixtureReport
from patchlane.formats.freeze_registry import registry_schema
from patchlane.formats.freeze_report import LANE as FREEZE
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.lock_file import lock_schema
from patchlane.formats.property_report import LANE as PROPERTY
from patchlane.formats.property_report import PropertyReport
from patchlane.formats.receipt import receipt_schema
from patchlane.formats.replay_report import LANE as REPLAY
from patchlane.formats.replay_report import ReplayReport
from patchlane.formats.review_map import map_schema as review_map_schema
from patchlane.formats.review_note import note_schema
from patchlane.formats.swebench_report import swebench_schema
from patchlane.formats.verdict_file import verdict_schema

# The schema's name (``NAMES`` of ``patchlane.schemas``) -> how it is generated.
GENERATED: dict[str, Callable[[], dict[str, object]]] = {
    "review-map": review_map_schema,
    "classify": classify_schema,
    "dependency-map": map_schema,
    "lock": lock_schema,
    "freeze-registry": registry_schema,
    "fixture-report": lambda: report_schema(
        FIXTURE, FixtureReport, "fixture-report.json", "patchlane fixture report"
    ),
    "freeze-report": lambda: report_schema(
        FREEZE, FreezeReport, "freeze-report.json", "patchlane freeze report"
    ),
    "property-report": lambda: report_schema(
        PROPERTY, PropertyReport, "property-report.json", "patchlane property report"
    ),
    "replay-report": lambda: report_schema(
        REPLAY, ReplayReport, "replay-report.json", "patchlane replay report"
    ),
    "receipt": receipt_schema,
    "verdict": verdict_schema,
    "review-note": note_schema,
    "swebench-report": swebench_schema,
}


def schema_text(name: str) -> str:
    """Return the text of the generated schema ``name``, as committed. Raises ``KeyError``
    for a schema that is not generated."""
    return json.dumps(GENERATED[name](), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write every generated schema into ``patchlane/schemas/``; return 0."""
    del argv
    folder = Path(__file__).resolve().parent.parent / "schemas"
    for name in GENERATED:
        (folder / f"{name}.schema.json").write_text(schema_text(name), encoding="utf-8")
        print(f"wrote {name}.schema.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
