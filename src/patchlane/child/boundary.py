"""The judging machinery that is not a namespace: the import system's lists and the plugins
pytest holds (``tripwire``'s other half; DESIGN §2, "watched at its boundary, not by name").

``tripwire`` compares modules and classes entry by entry. What decides how a test module is
compiled and which code runs as a hook also lives in lists and registries, and code under
test can change those without rebinding any name:

- ``sys.meta_path`` and ``sys.path_hooks``: the entries held when the run started must still
  be the first, in order, by identity. An entry put ahead of them sees every test module
  first (a finder that compiles them with their asserts stripped); one appended behind them
  finds only what none of them finds (``six``'s importer) and is no change.
- ``sys.path_importer_cache``: every finder in it must be of a type the cache or the path
  hooks made (``FileFinder``, ``zipimporter``, what was there): a finder planted for the
  tests' directory is another type.
- a finder object held at the start may not gain a callable of its own (an ``exec_module``
  set on pytest's ``AssertionRewritingHook`` instance shadows its class's).
- the plugins pytest holds: one registered after the session started is a change unless it
  is a module whose hook functions are defined where their code says (a conftest, a module
  a ``pytest_plugins`` names): the file exists and, at the code's first line, defines a
  function of that name. A plugin whose code claims a file it did not come from
  (``exec(compile(src, "/usr/lib/..."))``), or one that is not a module, is a change
  whatever file it names. A module of the tree that registers itself is a genuine module
  plugin, and the parent holds its file against the patch (``channel.tree_plugins``).
- every hook implementation: one that was not there at the start and does not belong to such
  a plugin (appended to a hook caller's list by hand) is a change.

Every check reads what it needs from default arguments captured at import, never a global of
this module, and never raises: a broken structure is a change.
"""

from __future__ import annotations

import itertools
import operator
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

_BOOTSTRAP = sys.modules.get("_frozen_importlib_external")
_FINDERS: frozenset[type] = frozenset(
    t
    for t in (
        type(None),
        getattr(_BOOTSTRAP, "FileFinder", None),
        getattr(sys.modules.get("zipimport"), "zipimporter", None),
    )
    if isinstance(t, type)
)

# (meta_path, its entries, path_hooks, its entries, path_importer_cache, the finder types
# allowed in it, the finder types pytest itself may put ahead: its assertion rewriter).
Imports = tuple[
    list[Any],
    tuple[Any, ...],
    list[Any],
    tuple[Any, ...],
    dict[Any, Any],
    frozenset[type],
    frozenset[type],
]
# (the plugin manager, its plugins at the start, their hook implementations kept alive, the
# ids of those implementations, and the fast path: the hook callers' lists and their copies).
Plugins = tuple[
    Any,
    frozenset[Any],
    tuple[Any, ...],
    frozenset[int],
    tuple[tuple[list[Any], ...], tuple[tuple[Any, ...], ...], frozenset[int], int],
]


def take_imports(
    ahead: Iterable[type] = (), _sys: Any = sys, _finders: frozenset[type] = _FINDERS
) -> Imports:
    """Return the import system's state now (see the module docstring); ``ahead``: the
    finder types pytest itself puts ahead of the entries later (its assertion rewriter,
    when pytest configures)."""
    cache = _sys.path_importer_cache
    allowed = _finders | frozenset(type(v) for v in list(cache.values()))
    return (
        _sys.meta_path,
        tuple(_sys.meta_path),
        _sys.path_hooks,
        tuple(_sys.path_hooks),
        cache,
        allowed,
        frozenset(ahead),
    )


def _name(obj: Any, _type: type[type] = type) -> str:
    """Return a short name of ``obj``'s class for a reason (never raises)."""
    try:
        return str(_type(obj).__name__)[:80]
    except Exception:  # noqa: BLE001 - hostile attributes
        return "?"


def imports_changed(
    saved: Imports,
    _sys: Any = sys,
    _len: Callable[[Any], int] = len,
    _all: Callable[[Iterable[Any]], bool] = all,
    _map: type[map[Any]] = map,
    _is: Callable[[Any, Any], bool] = operator.is_,
    _type: type[type] = type,
    _list: type[list[Any]] = list,
    _vars: Callable[[Any], Any] = vars,
    _callable: Callable[[Any], bool] = callable,
    _name: Callable[[Any], str] = _name,
) -> list[str]:
    """Return one phrase per change of the import system since ``saved`` (``[]``: none)."""
    meta, metas, hooks, hook_entries, cache, allowed, pytests = saved
    changed: list[str] = []
    for label, live, held, entries in (
        ("sys.meta_path", _sys.meta_path, meta, metas),
        ("sys.path_hooks", _sys.path_hooks, hooks, hook_entries),
    ):
        if live is not held:
            changed.append("the import system's " + label + " was replaced")
            continue
        size = _len(entries)
        if _len(live) == size and _all(_map(_is, live, entries)):
            continue  # the fast path
        kept = [e for e in _list(live) if _type(e) not in pytests or any(e is o for o in entries)]
        if _len(kept) < size or not _all(_map(_is, kept[:size], entries)):
            ahead = [e for e in kept if not any(e is o for o in entries)]
            what = ", ".join(_name(e) for e in ahead[:3]) or "an entry removed"
            changed.append(f"the import system's {label} was changed ahead of its entries ({what})")
    rewriters = [e for e in _list(_sys.meta_path) if _type(e) in pytests]
    for finder in (*metas, *rewriters):
        if _type(finder) is type:
            continue
        own = getattr(finder, "__dict__", None)
        if isinstance(own, dict) and any(_callable(v) for v in _list(own.values())):
            changed.append(f"the import system's {_name(finder)} finder gained a method of its own")
    if _sys.path_importer_cache is not cache:
        changed.append("the import system's sys.path_importer_cache was replaced")
    else:
        odd = {_type(v) for v in _list(cache.values())} - allowed
        if odd:
            names = ", ".join(sorted(t.__qualname__ for t in odd)[:3])
            changed.append(f"the import system's sys.path_importer_cache holds a finder ({names})")
    return changed


def _impls(pluginmanager: Any) -> list[tuple[str, Any]]:
    """Return ``(hook name, implementation)`` for every hook implementation registered."""
    out: list[tuple[str, Any]] = []
    for name, caller in list(vars(pluginmanager.hook).items()):
        impls = getattr(caller, "_hookimpls", None)
        if isinstance(impls, list):
            out.extend((name, impl) for impl in list(impls))
    return out


def take_plugins(pluginmanager: Any) -> Plugins:
    """Return the plugins ``pluginmanager`` holds now and their hook implementations."""
    impls = tuple(impl for _name, impl in _impls(pluginmanager))
    plugins = frozenset(pluginmanager.get_plugins())
    lists = tuple(
        held
        for caller in list(vars(pluginmanager.hook).values())
        if isinstance(held := getattr(caller, "_hookimpls", None), list)
    )
    fast = (
        lists,
        tuple(tuple(i) for i in lists),
        frozenset(id(p) for p in plugins),
        len(vars(pluginmanager.hook)),
    )
    return (pluginmanager, plugins, impls, frozenset(id(i) for i in impls), fast)


def _plugins_same(
    saved: Plugins,
    _all: Callable[[Iterable[Any]], bool] = all,
    _map: type[map[Any]] = map,
    _is: Callable[[Any, Any], bool] = operator.is_,
    _repeat: type[itertools.repeat[Any]] = itertools.repeat,
    _len: Callable[[Any], int] = len,
    _id: Callable[[Any], int] = id,
    _vars: Callable[[Any], Any] = vars,
) -> bool:
    """Return whether no plugin and no hook implementation came or went since ``saved``
    (the same callers, lists and entries, by identity; iterated in C)."""
    pluginmanager, _plugins, _alive, _ids, (lists, copies, plugin_ids, callers) = saved
    now = pluginmanager.get_plugins()
    return (
        _len(_vars(pluginmanager.hook)) == callers
        and _len(now) == _len(plugin_ids)
        and _all(_map(plugin_ids.__contains__, _map(_id, now)))
        and _all(_map(_all, _map(_map, _repeat(_is), lists, copies)))
        and _all(_map(int.__eq__, _map(_len, lists), _map(_len, copies)))
    )


def _code(function: Any) -> Any:
    """Return ``function``'s code object (through ``__wrapped__`` and bound methods)."""
    for _ in range(100):
        wrapped = getattr(function, "__wrapped__", None)
        if wrapped is None:
            break
        function = wrapped
    return getattr(getattr(function, "__func__", function), "__code__", None)


def _code_file(function: Any) -> str | None:
    """Return the file ``function``'s code says it is in."""
    where = getattr(_code(function), "co_filename", None)
    return where if isinstance(where, str) else None


def _defined_there(function: Any, files: dict[str, list[bytes] | None] | None = None) -> bool:
    """Return whether ``function``'s code is where it says: the file it names exists and,
    from its first line (its decorators), the first ``def`` defines a function of its
    name. Code compiled under a file name it did not come from fails this. ``files``: the
    lines of files already read."""
    code = _code(function)
    path, line, name = (
        getattr(code, a, None) for a in ("co_filename", "co_firstlineno", "co_name")
    )
    if not isinstance(path, str) or not isinstance(line, int) or not isinstance(name, str):
        return False
    files = {} if files is None else files
    if path not in files:
        try:
            with open(path, "rb") as f:  # noqa: PTH123 - a plain read
                files[path] = f.read(8_000_000).splitlines()
        except OSError:
            files[path] = None
    lines = files[path]
    if lines is None:
        return False
    for text in lines[line - 1 : line + 50]:
        stripped = text.strip()
        if stripped.startswith((b"def ", b"async def ")):
            return stripped.startswith((f"def {name}(".encode(), f"async def {name}(".encode()))
    return False


def misplaced(pluginmanager: Any) -> list[str]:
    """Return one phrase per hook implementation held now whose code is not defined where
    it says (``_defined_there``): a plugin registered before the session started (from a
    package a root conftest imports) that claims a file it did not come from. Never
    raises."""
    changed: list[str] = []
    files: dict[str, list[bytes] | None] = {}
    try:
        for hook, impl in _impls(pluginmanager):
            function = getattr(impl, "function", None)
            if not _defined_there(function, files):
                where = (_code_file(function) or "?")[-100:]
                changed.append(
                    f"a {hook} implementation ({where}, which does not define it) was "
                    "registered before the session started"
                )
    except Exception as e:  # noqa: BLE001 - the plugin manager is in the patch's process
        changed.append(f"pytest's plugins could not be read ({type(e).__name__})")
    return changed


def _genuine(plugin: Any, impls: list[tuple[str, Any]]) -> str | None:
    """Return ``None`` when ``plugin`` (registered after the start) is a module whose every
    hook function is defined where its code says (a conftest, a module a ``pytest_plugins``
    names, even one that imports its hooks from a helper); else why not, one phrase. A hook
    file in the tree is also reported by ``channel.tree_plugins``, whose files the parent
    holds against what the patch changes."""
    label = f"a pytest plugin ({_name(plugin)}"
    if not isinstance(plugin, types.ModuleType):
        return f"{label}, not a module) was registered during the run"
    odd = [impl for _hook, impl in impls if not _defined_there(getattr(impl, "function", None))]
    if odd:
        where = _code_file(getattr(odd[0], "function", None)) or "?"
        return f"{label}, code in {where[-100:]}, which does not define it) was registered during the run"
    return None


def plugins_changed(saved: Plugins) -> list[str]:
    """Return one phrase per plugin or hook implementation added since ``saved`` that is not
    a genuine module plugin (see the module docstring); ``[]`` when none."""
    pluginmanager, plugins, _alive, impl_ids, _fast = saved
    changed: list[str] = []
    try:
        if _plugins_same(saved):
            return changed
        now = _impls(pluginmanager)
        new = [p for p in list(pluginmanager.get_plugins()) if p not in plugins]
        by_plugin: dict[int, list[tuple[str, Any]]] = {}
        for hook, impl in now:
            by_plugin.setdefault(id(getattr(impl, "plugin", None)), []).append((hook, impl))
        newcomers = {id(p) for p in new}
        for plugin in new:
            why = _genuine(plugin, by_plugin.get(id(plugin), []))
            if why is not None:
                changed.append(why)
        for hook, impl in now:
            if id(impl) in impl_ids or id(getattr(impl, "plugin", None)) in newcomers:
                continue
            where = _code_file(getattr(impl, "function", None)) or "?"
            changed.append(f"a {hook} implementation ({where[-100:]}) was added to pytest's hooks")
    except Exception as e:  # noqa: BLE001 - the plugin manager is in the patch's process
        changed.append(f"pytest's plugins could not be read ({type(e).__name__})")
    return changed
