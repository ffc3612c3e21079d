"""Adding one key a format does not have to a file its writer wrote, at a line the test knows.

Every format refuses an unknown key (docs/architecture.md §4): the tests write a real file
with the real writer, add one key with ``add_json_key`` or ``add_yaml_key``, and read it back
through the real reader, which must name the file, that line and the key.
"""

from __future__ import annotations

import json
from pathlib import Path

from patchlane.inputs.jsonio import line_for

# The key no format has.
KEY = "zz_unknown"


def add_json_key(path: Path, at: tuple[str | int, ...] = ()) -> int:
    """Add ``"zz_unknown": 0`` as the first key of the object at ``at`` in the JSON file
    ``path`` (written one value per line) and return the line it is on."""
    text = path.read_text(encoding="utf-8")
    value = json.loads(text)
    for part in at:
        value = value[part]
    assert isinstance(value, dict) and value, f"{at}: not a non-empty object"
    opening = line_for(text, at)
    assert opening is not None
    lines = text.splitlines(keepends=True)
    assert lines[opening - 1].rstrip().endswith("{"), lines[opening - 1]
    lines.insert(opening, f'"{KEY}": 0,\n')
    path.write_text("".join(lines), encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8"))  # still one JSON value
    return opening + 1


def add_yaml_key(path: Path, after: str, indent: str) -> int:
    """Add ``zz_unknown: 0`` (indented by ``indent``) on the line after the first line of the
    YAML file ``path`` that starts with ``after``; return the line it is on."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.startswith(after))
    lines.insert(index + 1, f"{indent}{KEY}: 0\n")
    path.write_text("".join(lines), encoding="utf-8")
    return index + 2
