"""One walk over a source gives selection everything it reads from the syntax tree."""

from __future__ import annotations

import ast

from patchlane.project.sourcescan import ANY_MODULE, ImportFrom, scan, scan_source

SOURCE = '''\
"""Docs."""
import os, subprocess as sp
from . import sibling
from pkg.core import a, b
import importlib

PLUGINS = importlib.import_module("pkg.plugins")
pytest_plugins = ["pkg.fixtures"]
LOADED = importlib.import_module(os.environ["NAME"])


def test_cli():
    sp.run(["python", "-m", "pkg.cli"], check=True)
    open("data/rates.json")
'''


def test_one_walk_finds_imports_references_strings_and_process_starts() -> None:
    found = scan(ast.parse(SOURCE))
    assert found.imports == ("os", "subprocess", "importlib")
    assert found.from_imports == (
        ImportFrom(1, None, ("sibling",)),
        ImportFrom(0, "pkg.core", ("a", "b")),
    )
    assert sorted(found.literal_imports) == [ANY_MODULE, "pkg.fixtures", "pkg.plugins"]
    assert {"Docs.", "pkg.cli", "data/rates.json", "NAME"} <= set(found.strings)
    assert found.mains == {"pkg.cli"}
    assert found.starts_processes


def test_a_source_is_scanned_by_content_and_bytes_and_text_are_kept_apart() -> None:
    text = "import json\n"
    assert scan_source(text, "a.md") == scan_source(text.encode(), "a.py")
    # A NUL byte: refused as bytes; the str key never answers for it.
    assert scan_source(b"s" + b"\0import json\n", "x.py") is None
    assert scan_source("\0import json\n", "x.md") is None
    assert scan_source(b"def broken(:\n", "b.py") is None
    assert scan_source(b"def broken(:\n", "b.py") is None  # the same answer from the memo
