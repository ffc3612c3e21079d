"""The ``load`` fixture: a module written to a fresh file and imported under a unique name
(the property lane's and the child's tests; their conftests import it)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import types
import uuid
from pathlib import Path
from typing import Protocol

import pytest


class Loader(Protocol):
    def __call__(self, source: str, *, alias: str | None = None) -> types.ModuleType: ...


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Loader:
    """Write ``source`` to a fresh file, import it under a unique name (and ``alias``)."""

    def load(source: str, *, alias: str | None = None) -> types.ModuleType:
        name = f"plt_{uuid.uuid4().hex}"
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        if alias is not None:
            monkeypatch.setitem(sys.modules, alias, module)
        spec.loader.exec_module(module)
        return module

    return load
