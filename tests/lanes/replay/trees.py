"""A materialised tree for the replay's children: files on disk with a ``pytest.ini`` that
puts ``src`` on the path (shared by the tests of the run and collection children)."""

from __future__ import annotations

from pathlib import Path

PYTEST_INI = "[pytest]\npythonpath = src\n"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (repository path -> text; ``pytest.ini`` unless given) under
    ``root`` and return ``root``."""
    for path, text in {"pytest.ini": PYTEST_INI, **files}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root
