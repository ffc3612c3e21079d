"""The dependency map: what each test of the base's suite depended on (docs/architecture.md §4).

``patchlane replay map`` runs the whole suite once on the base commit and keeps, per test,
the lines it executed in the tree's files, the files it opened and the directories it
listed, the project modules it imported first, the fixtures it used, and whether it started
a process (``child.recorder`` records them). Selection reads the map to narrow the
slice (``lanes.replay.mapselect``).

A map is bound to what it was recorded with: the base commit id and the versions of Python,
pytest and coverage.py (``Binding``); a map whose binding is not the patch's is not used. It
is written once, as compact JSON with sorted keys, to a file named by the SHA-256 of its own
bytes (content-addressed: ``MAPS/<base>/<sha256>.json`` in a cache directory), so a copy
whose bytes changed no longer matches its name and is not used either. Beside it,
``<sha256>.mac`` holds the MAC of those bytes for that base under the user's cache key
(``patchlane.infra.cachekey``): a map whose MAC is missing or wrong was not written by patchlane
with this key, and is not read at all.

The file is declared once, as ``MapFile`` (``inputs.model``): its writer, its strict reader
and its schema (``map_schema``) derive from it; ``DependencyMap`` is what selection reads.

In a map, a *context* is an index into ``tests`` followed by ``fixtures``: a test's own
context, or a fixture's setup (``fixtures[i]`` is at ``len(tests) + i``). What ran outside
every test and fixture (imports, collection) is kept apart, as ``import_lines`` and
``opened_at_import``/``listed_at_import``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from patchlane.child.messages import FIXTURE, IMPORT
from patchlane.errors import DependencyMapError
from patchlane.formats.envelope import document_schema
from patchlane.infra.cachekey import CacheKey
from patchlane.inputs.fields import Fields, json_document, non_blank
from patchlane.inputs.jsonio import atomic_write_bytes, parse_json_bytes, read_file_bytes
from patchlane.inputs.model import from_fields, schema_parts, spec, to_data

FORMAT = "patchlane-dependency-map"
VERSION = 4
MAPS = "maps"
# The MAC's purpose (``CacheKey.mac``) and the sidecar that holds it.
PURPOSE = "dependency-map"
MAC_SUFFIX = ".mac"
_MAC_LIMIT = 1024


class UnverifiedMapError(DependencyMapError):
    """A map file whose MAC is missing or does not verify under the user's key."""


@dataclass(frozen=True)
class Binding:
    """What a map was recorded with; a map is used only where all of it is the same."""

    base: str
    python: str
    pytest: str
    coverage: str

    @classmethod
    def here(cls, base: str) -> Binding:
        """Return the binding of a map of ``base`` recorded in this environment."""
        from importlib.metadata import version

        return cls(base, platform.python_version(), version("pytest"), version("coverage"))

    def differences(self, other: Binding) -> list[str]:
        """Return one phrase per field where ``other`` differs (``base abc… not def…``)."""
        return [
            f"{name} {getattr(other, name)} not {getattr(self, name)}"
            for name in ("base", "python", "pytest", "coverage")
            if getattr(self, name) != getattr(other, name)
        ]


@dataclass(frozen=True)
class DependencyMap:
    """One recorded map (see the module docstring for contexts)."""

    binding: Binding
    tests: tuple[str, ...]
    fixtures: tuple[str, ...]
    lines: Mapping[str, Mapping[int, tuple[int, ...]]]
    import_lines: Mapping[str, frozenset[int]]
    opened: Mapping[str, tuple[int, ...]]
    opened_at_import: frozenset[str]
    listed: Mapping[str, tuple[int, ...]]
    listed_at_import: frozenset[str]
    imported: Mapping[str, tuple[int, ...]]
    uses: tuple[tuple[int, ...], ...]
    blind: tuple[int, ...]
    whole_files: tuple[int, ...]
    shared: tuple[int, ...]  # fixtures wider than a function, the project's (not pytest's)
    # The tests that passed in the recording run (the whole suite at the base, in order).
    passed: tuple[int, ...] = ()
    # Blind context -> why (a process it started, and which; a start while a module was
    # imported, and that module), for selection's notes.
    blind_reasons: Mapping[int, str] = field(default_factory=dict)
    # The longest any one test took in the recording run (start of its setup to the end of
    # its teardown, as the parent saw it), in seconds; ``None``: not recorded. The default
    # per-test bound of a replay is derived from it (``lanes.replay.testbound``).
    slowest_s: float | None = None

    # --- reading ------------------------------------------------------------------------

    @cached_property
    def _users(self) -> dict[int, frozenset[int]]:
        """Fixture context -> the tests that used it."""
        users: dict[int, set[int]] = {}
        for test, contexts in enumerate(self.uses):
            for context in contexts:
                users.setdefault(context, set()).add(test)
        return {c: frozenset(t) for c, t in users.items()}

    def tests_of(self, contexts: Iterable[int]) -> set[str]:
        """Return the node ids of the tests behind ``contexts``: a test's own, and every
        user of a fixture's."""
        found: set[int] = set()
        for context in contexts:
            if context < len(self.tests):
                found.add(context)
            else:
                found |= self._users.get(context, frozenset())
        return {self.tests[i] for i in found}

    def ran_lines(self, path: str, lines: Iterable[int]) -> set[str]:
        """Return the tests that executed any of ``lines`` of ``path`` (their fixtures'
        setup included)."""
        by_line = self.lines.get(path, {})
        return self.tests_of(c for n in lines for c in by_line.get(n, ()))

    def ran_file(self, path: str) -> set[str]:
        """Return the tests that executed any line of ``path``."""
        return self.tests_of(c for contexts in self.lines.get(path, {}).values() for c in contexts)

    @cached_property
    def first_imports(self) -> dict[str, frozenset[str]]:
        """Test -> the project modules first imported while it ran (or while a fixture it
        uses was set up)."""
        found: dict[str, set[str]] = {}
        for name, contexts in self.imported.items():
            for test in self.tests_of(contexts):
                found.setdefault(test, set()).add(name)
        return {t: frozenset(n) for t, n in found.items()}

    def sharers(self, nodeids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """Return the tests that use a fixture wider than a function (one value for many
        tests) that one of ``nodeids`` uses: node id -> (fixture, the test in ``nodeids``)."""
        index = {t: i for i, t in enumerate(self.tests)}
        shared = set(self.shared)
        found: dict[str, tuple[str, str]] = {}
        for nodeid in sorted(nodeids):
            i = index.get(nodeid)
            for context in self.uses[i] if i is not None else ():
                if context in shared:
                    name = self.fixtures[context - len(self.tests)]
                    for other in sorted(self.tests_of([context])):
                        found.setdefault(other, (name, nodeid))
        return found

    @cached_property
    def blind_tests(self) -> frozenset[str]:
        """Tests that started a process (themselves or through a fixture): what ran there
        was not traced, so the map does not decide for them."""
        return frozenset(self.tests_of(self.blind))

    def blind_why(self, nodeid: str) -> str | None:
        """Return why the map does not decide for ``nodeid`` (its own blinding, else a
        fixture's it used), or ``None`` when it is not blind."""
        if nodeid not in self.blind_tests:
            return None
        i = self.tests.index(nodeid)
        for context in (i, *self.uses[i]):
            if context in self.blind_reasons:
                return self.blind_reasons[context]
        return "it started a process"

    @cached_property
    def passed_at_base(self) -> frozenset[str]:
        """The tests that passed when the base's whole suite ran to record the map."""
        return frozenset(self.tests[i] for i in self.passed)

    @cached_property
    def whole_file_tests(self) -> frozenset[str]:
        """Hypothesis tests: they depend on every file they executed, wholly."""
        return frozenset(self.tests[i] for i in self.whole_files)

    # --- writing ------------------------------------------------------------------------

    def to_file(self) -> MapFile:
        """Return the map as its file holds it (``MapFile``)."""
        return MapFile(
            format=FORMAT,
            version=VERSION,
            base=self.binding.base,
            python=self.binding.python,
            pytest=self.binding.pytest,
            coverage=self.binding.coverage,
            tests=self.tests,
            fixtures=self.fixtures,
            lines={p: {str(n): c for n, c in sorted(by.items())} for p, by in self.lines.items()},
            import_lines={p: tuple(sorted(n)) for p, n in self.import_lines.items()},
            opened=self.opened,
            opened_at_import=tuple(sorted(self.opened_at_import)),
            listed=self.listed,
            listed_at_import=tuple(sorted(self.listed_at_import)),
            imported=self.imported,
            uses=self.uses,
            blind=self.blind,
            blind_reasons={str(c): w for c, w in sorted(self.blind_reasons.items())},
            whole_files=self.whole_files,
            shared=self.shared,
            passed=self.passed,
            slowest_s=self.slowest_s,
        )

    def to_json(self) -> dict[str, object]:
        """Return the map as JSON data (the file's shape)."""
        return to_data(self.to_file())

    def to_bytes(self) -> bytes:
        """Return the file's bytes: compact JSON, keys sorted, ASCII, one trailing newline."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return text.encode("ascii") + b"\n"

    def write(self, cache: Path, key: CacheKey) -> Path:
        """Write the map under ``cache`` (``MAPS/<base>/<sha256>.json``, and its MAC under
        ``key`` beside it, each atomically) and return its path. Raises ``InputError`` when
        the file system refuses."""
        data = self.to_bytes()
        path = cache / MAPS / self.binding.base / f"{hashlib.sha256(data).hexdigest()}.json"
        # The MAC first: a reader that finds the map finds its MAC too.
        mac = key.mac(PURPOSE, self.binding.base, data)
        atomic_write_bytes(mac_path(path), mac.encode("ascii") + b"\n")
        atomic_write_bytes(path, data)
        return path


def mac_path(path: Path) -> Path:
    """Return the MAC sidecar of the map file ``path`` (``<sha256>.mac``)."""
    return path.with_suffix(MAC_SUFFIX)


def from_recording(
    binding: Binding,
    tests: Iterable[str],
    recording: Any,
    passed: Iterable[str] = (),
    slowest_s: float | None = None,
) -> DependencyMap:
    """Return the map of one recording run (``child.recorder``'s JSON document, which
    the base's own code wrote) over the collected ``tests``, of which ``passed`` passed;
    ``slowest_s``: the longest any test took (``DependencyMap.slowest_s``).

    Contexts the recording names that are neither a collected test nor a fixture (a test
    pytest ran but the collection did not list) are dropped. Raises nothing.
    """
    test_ids = tuple(sorted(set(tests)))
    names = sorted(
        {
            c[len(FIXTURE) :]
            for key in ("lines", "opened", "listed", "imported")
            for contexts in _context_lists(recording.get(key, {}))
            for c in contexts
            if c.startswith(FIXTURE)
        }
        | {f for used in recording.get("uses", {}).values() for f in used}
    )
    index = {t: i for i, t in enumerate(test_ids)}
    index.update({FIXTURE + f: len(test_ids) + i for i, f in enumerate(names)})

    def contexts(values: Iterable[str]) -> tuple[int, ...]:
        return tuple(sorted({index[v] for v in values if v in index}))

    def at_import(values: Mapping[str, list[str]]) -> frozenset[str]:
        return frozenset(p for p, ctx in values.items() if IMPORT in ctx)

    def by_context(values: Mapping[str, list[str]]) -> dict[str, tuple[int, ...]]:
        out = {p: contexts(ctx) for p, ctx in values.items()}
        return {p: c for p, c in out.items() if c}

    lines: dict[str, dict[int, tuple[int, ...]]] = {}
    import_lines: dict[str, frozenset[int]] = {}
    for path, by_line in recording.get("lines", {}).items():
        kept = {int(n): contexts(ctx) for n, ctx in by_line.items()}
        lines[path] = {n: c for n, c in kept.items() if c}
        import_lines[path] = frozenset(int(n) for n, ctx in by_line.items() if IMPORT in ctx)
    uses = recording.get("uses", {})
    blind = _blind(recording.get("blind", {}), index, len(test_ids))
    return DependencyMap(
        binding=binding,
        tests=test_ids,
        fixtures=tuple(names),
        lines={p: by for p, by in lines.items() if by},
        import_lines={p: n for p, n in import_lines.items() if n},
        opened=by_context(recording.get("opened", {})),
        opened_at_import=at_import(recording.get("opened", {})),
        listed=by_context(recording.get("listed", {})),
        listed_at_import=at_import(recording.get("listed", {})),
        imported=by_context(recording.get("imported", {})),
        uses=tuple(contexts(FIXTURE + f for f in uses.get(t, ())) for t in test_ids),
        blind=tuple(sorted(blind)),
        blind_reasons=blind,
        whole_files=contexts(recording.get("whole_files", [])),
        shared=contexts(FIXTURE + f for f in recording.get("shared", [])),
        passed=tuple(sorted({index[t] for t in passed if t in index and index[t] < len(test_ids)})),
        # Milliseconds: what the file keeps, so that a map reads back as it was recorded.
        slowest_s=None if slowest_s is None else round(slowest_s, 3),
    )


def _blind(blind: Mapping[str, str], index: Mapping[str, int], tests: int) -> dict[int, str]:
    """The blind contexts and why; every test when a process or an untraced thread started
    outside every test and no module could be charged with it (a conftest's server at
    import: any test may talk to it)."""
    if IMPORT in blind:
        return dict.fromkeys(range(tests), blind[IMPORT])
    return {index[c]: str(w) for c, w in blind.items() if c in index}


def _context_lists(value: Mapping[str, Any]) -> Iterable[list[str]]:
    for item in value.values():
        if isinstance(item, Mapping):
            yield from item.values()
        else:
            yield item


# --- reading a map file ----------------------------------------------------------------------


def read(path: Path, key: CacheKey) -> DependencyMap:
    """Return the map in the file ``path``, once its MAC under ``key`` verifies.

    Raises ``UnverifiedMapError`` when its MAC sidecar is missing, unreadable or does not
    verify for these bytes at this base (the folder ``path`` is in): nothing of it is
    parsed then. Raises ``DependencyMapError`` naming the file when it cannot be read, when
    its bytes do not hash to its name (a ``<sha256>.json`` that was edited or cut short),
    or when it is not a well-formed map.
    """
    label = os.fspath(path)
    data = read_file_bytes(path, label, DependencyMapError)
    try:
        with mac_path(path).open("rb") as f:
            mac = f.read(_MAC_LIMIT).decode("ascii", "replace").strip()
    except OSError:
        raise UnverifiedMapError(
            label, "it has no MAC (an older format, or not patchlane's)"
        ) from None
    if not key.verifies(PURPOSE, path.parent.name, data, mac):
        raise UnverifiedMapError(label, "its MAC does not verify under this user's key")
    digest = hashlib.sha256(data).hexdigest()
    if path.stem != digest:
        raise DependencyMapError(label, f"its bytes hash to {digest[:12]}…, not to its name")
    value, text = parse_json_bytes(data, label, DependencyMapError)
    doc = json_document(text, label, DependencyMapError)
    if not isinstance(value, dict):
        raise doc.fail((), f"expected an object, got {doc.kind(value)}")
    return _parse(doc.fields(value))


def _parse(top: Fields) -> DependencyMap:
    f = from_fields(MapFile, top)
    return DependencyMap(
        binding=Binding(f.base, f.python, f.pytest, f.coverage),
        tests=f.tests,
        fixtures=f.fixtures,
        lines={p: {int(n): c for n, c in by.items()} for p, by in f.lines.items()},
        import_lines={p: frozenset(n) for p, n in f.import_lines.items()},
        opened=f.opened,
        opened_at_import=frozenset(f.opened_at_import),
        listed=f.listed,
        listed_at_import=frozenset(f.listed_at_import),
        imported=f.imported,
        uses=f.uses,
        blind=f.blind,
        blind_reasons={int(c): w for c, w in f.blind_reasons.items()},
        whole_files=f.whole_files,
        shared=f.shared,
        passed=f.passed,
        slowest_s=f.slowest_s,
    )


# --- the file --------------------------------------------------------------------------------
#
# The readers of the keys that hold contexts need the number of contexts: ``tests`` and
# ``fixtures`` are declared (so read) before them, and each reader counts them in ``top``.


def _size(top: Fields) -> int:
    """The number of contexts: tests, then fixtures (both read already)."""
    return len(top.data["tests"]) + len(top.data["fixtures"])


def _tests(top: Fields) -> int:
    return len(top.data["tests"])


def _read_format(top: Fields, key: str) -> str:
    if top.text(key) != FORMAT:
        raise top.fail(key, f"expected {FORMAT!r}")
    return FORMAT


def _read_lines(top: Fields, key: str) -> dict[str, dict[str, tuple[int, ...]]]:
    size = _size(top)
    lines: dict[str, dict[str, tuple[int, ...]]] = {}
    by_file = top.mapping(key)
    for path, by_line in by_file.data.items():
        where = by_file.mapping(path)
        kept: dict[str, tuple[int, ...]] = {}
        for n, ctx in by_line.items():
            _line(where, n)  # refuses a key that is not a line number
            kept[n] = _indexes(where, n, ctx, size)
        lines[path] = kept
    return lines


def _read_import_lines(top: Fields, key: str) -> dict[str, tuple[int, ...]]:
    at_import = top.mapping(key)
    return {p: _indexes(at_import, p, v, None) for p, v in at_import.data.items()}


def _read_index_map(top: Fields, key: str) -> dict[str, tuple[int, ...]]:
    return _index_map(top, key, _size(top))


def _read_uses(top: Fields, key: str) -> tuple[tuple[int, ...], ...]:
    size = _size(top)
    return tuple(
        _indexes(top, (key, i), u, size) for i, u in enumerate(top.sequence(key, expected="a list"))
    )


def _read_contexts(top: Fields, key: str) -> tuple[int, ...]:
    return _indexes(top, key, top.get(key), _size(top))


def _read_test_contexts(top: Fields, key: str) -> tuple[int, ...]:
    return _indexes(top, key, top.get(key), _tests(top))


def _read_reasons(top: Fields, key: str) -> dict[str, str]:
    return {str(c): w for c, w in _reasons(top, _size(top)).items()}


def _read_shared(top: Fields, key: str) -> tuple[int, ...]:
    return _shared(top, _tests(top), _size(top))


_INDEXES = "a list of contexts: indexes into tests, then fixtures"
_BY_CONTEXT = "by path (a module, for imported): the contexts that {}"


@dataclass(frozen=True)
class MapFile:
    """The dependency map's file (``MAPS/<base>/<sha256>.json``): what ``replay map``
    recorded, as the file holds it (line numbers and contexts as text keys)."""

    format: str = field(metadata=spec(pattern=f"^{FORMAT}$", read=_read_format))
    version: int = field(metadata=spec(lo=VERSION, hi=VERSION, expected=f"the integer {VERSION}"))
    base: str = field(metadata=spec(pattern="^[0-9a-f]{40}$", expected="a commit id"))
    python: str = field(metadata=spec(accept=non_blank, expected="a non-empty string"))
    pytest: str = field(metadata=spec(accept=non_blank, expected="a non-empty string"))
    coverage: str = field(metadata=spec(accept=non_blank, expected="a non-empty string"))
    tests: tuple[str, ...] = field(metadata=spec(duplicate="listed twice"))
    fixtures: tuple[str, ...] = field(metadata=spec(duplicate="listed twice"))
    lines: Mapping[str, Mapping[str, tuple[int, ...]]] = field(
        metadata=spec(
            read=_read_lines, lo=0, description="by file, by line: the contexts that ran it"
        )
    )
    import_lines: Mapping[str, tuple[int, ...]] = field(
        metadata=spec(read=_read_import_lines, lo=0, description="by file: the lines run at import")
    )
    opened: Mapping[str, tuple[int, ...]] = field(
        metadata=spec(read=_read_index_map, lo=0, description=_BY_CONTEXT.format("opened it"))
    )
    opened_at_import: tuple[str, ...]
    listed: Mapping[str, tuple[int, ...]] = field(
        metadata=spec(read=_read_index_map, lo=0, description=_BY_CONTEXT.format("listed it"))
    )
    listed_at_import: tuple[str, ...]
    imported: Mapping[str, tuple[int, ...]] = field(
        metadata=spec(
            read=_read_index_map, lo=0, description=_BY_CONTEXT.format("imported it first")
        )
    )
    uses: tuple[tuple[int, ...], ...] = field(
        metadata=spec(read=_read_uses, lo=0, description="by test: the fixture contexts it used")
    )
    blind: tuple[int, ...] = field(metadata=spec(read=_read_contexts, lo=0, description=_INDEXES))
    blind_reasons: Mapping[str, str] = field(
        metadata=spec(read=_read_reasons, description="by blind context: why it is blind")
    )
    whole_files: tuple[int, ...] = field(metadata=spec(read=_read_test_contexts, lo=0))
    shared: tuple[int, ...] = field(metadata=spec(read=_read_shared, lo=0))
    passed: tuple[int, ...] = field(metadata=spec(read=_read_test_contexts, lo=0))
    # A map recorded before durations were kept has none (the bound then falls back).
    slowest_s: float | None = field(
        default=None,
        metadata=spec(lo=0, expected="a number of seconds", write="notnone", null=False),
    )


def map_schema() -> dict[str, object]:
    """Return the JSON Schema of a dependency map file, derived from ``MapFile``."""
    properties, required = schema_parts(MapFile)
    return document_schema(
        "dependency-map.json", "patchlane dependency map", dict(properties), required
    )


def _reasons(top: Fields, size: int) -> dict[int, str]:
    where = top.mapping("blind_reasons")
    out: dict[int, str] = {}
    for key in where.data:
        if not key.isdigit() or int(key) >= size:
            raise where.fail(key, "expected a context index")
        out[int(key)] = where.text(key)
    return out


def _shared(top: Fields, tests: int, size: int) -> tuple[int, ...]:
    shared = _indexes(top, "shared", top.get("shared"), size)
    if any(i < tests for i in shared):
        raise top.fail("shared", "expected fixture contexts, not tests")
    return shared


def _index_map(top: Fields, key: str, size: int) -> dict[str, tuple[int, ...]]:
    where = top.mapping(key)
    return {k: _indexes(where, k, v, size) for k, v in where.data.items()}


def _line(where: Fields, key: str) -> int:
    # coverage.py reports line 0 for a module with no statements (an empty __init__.py).
    if not key.isdigit() or (key.startswith("0") and key != "0"):
        raise where.fail(key, "expected a line number")
    return int(key)


def _indexes(
    where: Fields, at: str | tuple[str | int, ...], value: Any, size: int | None
) -> tuple[int, ...]:
    """Return ``value`` as a tuple of indexes below ``size`` (any non-negative integer when
    ``size`` is ``None``). Raises ``DependencyMapError`` at ``at`` for anything else."""
    if not isinstance(value, list):
        raise where.wrong(at, "a list of indexes", value)
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise where.wrong(at, "a list of indexes", value)
        if size is not None and item >= size:
            raise where.fail(at, f"index {item} is past the {size} contexts")
    return tuple(value)
