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


def wheel_site(root: Path) -> Path:
    """Write, under ``root``, patchlane's metadata as a wheel install records it (its files
    and its ``pytest11`` entry point) and return that site directory. Put first on
    ``PYTHONPATH``, it makes pytest mark the ``patchlane`` package for assertion rewriting
    in every run, as it does where patchlane is installed from a wheel (an editable install
    records no package files); the code itself still comes from this checkout."""
    info = root / "patchlane-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: patchlane\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\npatchlane = patchlane.pytest_plugin\n")
    record = ["patchlane/__init__.py", "patchlane/pytest_plugin.py", f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in record))
    return root
