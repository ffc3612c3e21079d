"""JSON Schemas of every file format patchlane reads or writes (docs/architecture.md §4)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources

NAMES = (
    "review-map", "lock", "freeze-registry", "receipt", "classify",
    "fixture-report", "property-report", "freeze-report", "replay-report", "verdict",
    "review-note", "swebench-report", "dependency-map",
)  # fmt: skip


def load_schema(name: str) -> Mapping[str, object]:
    """Return the shipped JSON Schema ``name`` (one of ``NAMES``), a JSON object. Raises
    ``KeyError`` if unknown, ``ValueError`` if the shipped file is not a JSON object."""
    if name not in NAMES:
        raise KeyError(name)
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"the schema {name!r} is not a JSON object")
    return value
