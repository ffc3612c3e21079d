"""JSON Schemas of every file format patchlane reads or writes (docs/architecture.md §4)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

NAMES = (
    "review-map", "lock", "freeze-registry", "receipt", "classify",
    "fixture-report", "property-report", "freeze-report", "replay-report", "verdict",
    "review-note",
)  # fmt: skip


def load_schema(name: str) -> dict[str, Any]:
    """Return the shipped JSON Schema ``name`` (one of ``NAMES``). Raises ``KeyError`` if unknown."""
    if name not in NAMES:
        raise KeyError(name)
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    value: dict[str, Any] = json.loads(text)
    return value
