"""The store of pytest's rewritten test modules, filled by the gate's own process
(``child.rewritten`` says why and how the test process reads it).

It lives in patchlane's cache (``rewritten/<cache tag>-pytest-<version>``), so a module
rewritten for one gate serves every later one while its bytes and path are the same; the
patch's code never writes it (the test process gets it read-only), and a file is taken
only under the key of the bytes the test process reads itself.
"""

from __future__ import annotations

import ast
import functools
import marshal
import os
import sys
import threading
from pathlib import Path
from typing import Any

from patchlane.child.rewritten import key
from patchlane.infra.cache import default_cache
from patchlane.infra.sandbox import isolation

# pytest's default ``python_files``, and conftests: what is rewritten here (a module of a
# project's own patterns is rewritten by pytest in the test process, as before).
_NAMES = ("test_*.py", "*_test.py", "conftest.py")
_MAX_FILES = 5000
_MAX_BYTES = 2 * 1024 * 1024
# A project's configuration that may turn on the hook the rewrite depends on.
_PASS_HOOK = b"enable_assertion_pass_hook"
_CONFIGS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")

_lock = threading.Lock()
_filled: dict[tuple[str, str], Path | None] = {}


@functools.cache
def _pytest() -> tuple[Any, str] | None:
    """pytest's ``rewrite_asserts`` and its version, as the test process has them (the
    same interpreter), or ``None``."""
    try:
        import pytest
        from _pytest.assertion.rewrite import rewrite_asserts
    except Exception:  # noqa: BLE001 - no usable pytest here: the test process rewrites
        return None
    return rewrite_asserts, str(pytest.__version__)


def store_for(tree: Path, at: Path) -> Path | None:
    """The store, filled with the rewritten code of ``tree``'s test modules as a test
    process that sees ``tree`` at ``at`` reads them; once per (``tree``, ``at``) in this
    process. ``None`` when no store can be used (no sandbox, no pytest here, a configuration
    that may turn on the assertion pass hook, no cache directory). Never raises."""
    found = _pytest()
    # Only where the sandbox makes the store read-only to the test process: without it,
    # that process's code could write what a later gate reads.
    if found is None or not at.is_absolute() or not isolation().sandboxed:
        return None
    rewrite_asserts, version = found
    memo = (os.path.realpath(tree), os.fspath(at))
    with _lock:
        if memo in _filled:
            return _filled[memo]
        store = _store(version) if not _pass_hook(tree) else None
        if store is not None:
            for source in _test_modules(tree):
                try:
                    _put(store, rewrite_asserts, source, at / source.relative_to(tree))
                except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                    continue
        _filled[memo] = store
        return store


def _store(version: str) -> Path | None:
    try:
        store = default_cache() / "rewritten" / f"{sys.implementation.cache_tag}-pytest-{version}"
        store.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return store


def _pass_hook(tree: Path) -> bool:
    """Whether a configuration file at ``tree``'s root may turn on the assertion pass hook
    (the rewrite then differs: left to pytest)."""
    for name in _CONFIGS:
        try:
            if _PASS_HOOK in (tree / name).read_bytes():
                return True
        except OSError:
            continue
    return False


def _test_modules(tree: Path) -> list[Path]:
    """``tree``'s test modules and conftests: no hidden directory, environment or link."""
    found: list[Path] = []
    for top, dirs, files in os.walk(tree):
        here = Path(top)
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in ("__pycache__", "node_modules")
            and not (here / d).is_symlink()
            and not (here / d / "pyvenv.cfg").exists()
        ]
        for name in sorted(files):
            path = here / name
            if any(path.match(n) for n in _NAMES) and not path.is_symlink():
                found.append(path)
                if len(found) >= _MAX_FILES:
                    return found
    return found


def _put(store: Path, rewrite_asserts: Any, source: Path, shown: Path) -> None:
    """Write the rewritten code of ``source`` (seen at ``shown``) into ``store`` unless it
    is there. Raises ``OSError``, ``SyntaxError`` and what compiling may raise."""
    data = source.read_bytes()
    if len(data) > _MAX_BYTES:
        return
    filename = os.fspath(shown)
    target = store / key(filename, data)
    if target.is_file():
        return
    module = ast.parse(data, filename=filename)
    rewrite_asserts(module, data, filename, None)
    code = compile(module, filename, "exec", dont_inherit=True)
    part = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}")
    part.write_bytes(marshal.dumps(code))
    part.replace(target)
