"""The review map (``review-map.yml``): strict loading into frozen dataclasses.

The seed's map loads as printed; the extended keys of DESIGN.md §4 are accepted; anything
else (unknown keys, wrong types, duplicate keys, bad YAML, unsafe paths) is a ``MapError``
naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from patchlane.errors import MapError
from patchlane.inputs.fields import kind_of
from patchlane.inputs.paths import path_problem
from patchlane.inputs.yamlio import YamlList, YamlMap, load_yaml

DEFAULT_MAP = "review-map.yml"
DEFAULT_CASES = 200
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_AGE_DAYS = 14
DEFAULT_MAX_EXTENSIONS = 1
DEFAULT_REPLAY_TESTS = ("tests/",)
# The replay passes the seed on as PYTHONHASHSEED, which Python accepts only up to 2**32 - 1
# (a larger one makes every test process fail to start).
MAX_SEED = 2**32 - 1
# ``today + max_age_days`` must stay a date (year 9999 at most); a century is already
# beyond any review period.
MAX_AGE_DAYS = 36500

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class PropertyLane:
    paths: tuple[str, ...]
    modules: tuple[str, ...]
    seed: int | None
    cases: int
    timeout_s: float
    pythonpath: tuple[str, ...]
    # Where the map names the modules (``module`` or ``modules``, and the line), so that an
    # error about one of them can point there; not part of what the lane is.
    modules_key: str = field(default="modules", compare=False)
    modules_line: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FixtureRoot:
    """One lock and the directories (or files) whose bytes it pins."""

    paths: tuple[str, ...]
    lock: str
    canonical_json: bool


@dataclass(frozen=True)
class FixtureLane:
    roots: tuple[FixtureRoot, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(p for root in self.roots for p in root.paths)

    @property
    def locks(self) -> tuple[str, ...]:
        return tuple(root.lock for root in self.roots)


@dataclass(frozen=True)
class FreezeLane:
    registry: str
    max_age_days: int
    max_extensions: int


@dataclass(frozen=True)
class ReplayLane:
    tests: tuple[str, ...]
    private: tuple[str, ...]
    require_signature: bool


@dataclass(frozen=True)
class IgnoreEntry:
    path: str
    reason: str


@dataclass(frozen=True)
class ReviewMap:
    """A validated review map. ``replay`` is always present (defaults when not written)."""

    label: str
    property: PropertyLane | None
    fixture: FixtureLane | None
    freeze: FreezeLane | None
    replay: ReplayLane
    ignore: tuple[IgnoreEntry, ...]


class _Reader:
    """Typed access to one mapping of the map, with errors that name file, line and key."""

    def __init__(
        self,
        label: str,
        mapping: YamlMap,
        where: str,
        allowed: set[str],
        named_at: int | None = None,
    ) -> None:
        self.label = label
        self.m = mapping
        self.where = where
        # The line that names this mapping (``fixture:``): where a missing key is reported.
        self.named_at = mapping.line if named_at is None else named_at
        for key in mapping:
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                message = f"{self._key(key)}: unknown key (expected one of: {known})"
                raise MapError(label, message, self.line(key))

    def _key(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def line(self, key: str | None = None) -> int:
        if key is not None and key in self.m.key_lines:
            return self.m.key_lines[key]
        return self.named_at

    def fail(self, key: str, message: str) -> MapError:
        return MapError(self.label, f"{self._key(key)}: {message}", self.line(key))

    def has(self, key: str) -> bool:
        return key in self.m

    def require(self, key: str) -> None:
        if key not in self.m:
            raise MapError(self.label, f"{self._key(key)}: missing", self.line())

    def mapping(self, key: str, allowed: set[str]) -> _Reader | None:
        if key not in self.m:
            return None
        value = self.m[key]
        if not isinstance(value, YamlMap):
            raise self.fail(key, f"expected a mapping, got {kind_of(value)}")
        return _Reader(self.label, value, self._key(key), allowed, self.line(key))

    def string(self, key: str, default: str | None = None) -> str | None:
        if key not in self.m:
            return default
        value = self.m[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"expected a non-empty string, got {kind_of(value)}")
        return value

    def path(self, key: str, *, directory_ok: bool) -> str | None:
        value = self.string(key)
        if value is not None:
            problem = path_problem(value, directory_ok=directory_ok)
            if problem:
                raise self.fail(key, problem)
        return value

    def paths(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        if key not in self.m:
            return default
        value = self.m[key]
        if not isinstance(value, YamlList):
            raise self.fail(key, f"expected a list of paths, got {kind_of(value)}")
        out = []
        for i, item in enumerate(value):
            line = value.item_lines[i]
            if not isinstance(item, str):
                raise MapError(
                    self.label, f"{self._key(key)}[{i}]: expected a path, got {kind_of(item)}", line
                )
            problem = path_problem(item)
            if problem:
                raise MapError(self.label, f"{self._key(key)}[{i}]: {problem}", line)
            out.append(item)
        return tuple(out)

    def integer(
        self, key: str, default: int | None, minimum: int, maximum: int | None = None
    ) -> int | None:
        if key not in self.m:
            return default
        value = self.m[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected an integer, got {kind_of(value)}")
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {_shown(value)}")
        if maximum is not None and value > maximum:
            raise self.fail(key, f"must be at most {maximum}, got {_shown(value)}")
        return value

    def number(self, key: str, default: float) -> float:
        if key not in self.m:
            return default
        value = self.m[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise self.fail(key, f"expected a positive number of seconds, got {value!r}")
        if value != value or value == float("inf"):
            raise self.fail(key, "must be finite")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        if key not in self.m:
            return default
        value = self.m[key]
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {kind_of(value)}")
        return value


def _shown(value: int) -> str:
    """Return ``value`` for a message: a number of more than 20 digits is elided (a hostile
    map's 4000-digit integer must not become a 4000-character line)."""
    text = str(value)
    return text if len(text) <= 20 else f"{text[:8]}...({len(text)} digits)"


def parse_review_map(text: str, label: str) -> ReviewMap:
    """Validate the text of a review map.

    Returns a ``ReviewMap``. Raises ``MapError`` (file, line, what is wrong) for bad YAML,
    duplicate or unknown keys, wrong types and unsafe paths.
    """
    doc = load_yaml(text, label, MapError)
    if not isinstance(doc, YamlMap):
        raise MapError(label, f"expected a mapping at the top, got {kind_of(doc)}", 1)
    top = _Reader(label, doc, "", {"version", "lanes", "ignore"})
    version = top.m.get("version", 1)
    if type(version) is not int or version != 1:  # ``true == 1`` and ``1.0 == 1`` in Python
        raise top.fail("version", f"unsupported version {version!r} (this patchlane reads 1)")
    top.require("lanes")
    lanes = top.mapping("lanes", {"property", "fixture", "freeze", "replay"})
    if lanes is None:  # pragma: no cover - required just above
        raise top.fail("lanes", "missing")
    return ReviewMap(
        label=label,
        property=_property(lanes),
        fixture=_fixture(lanes),
        freeze=_freeze(lanes),
        replay=_replay(lanes),
        ignore=_ignore(top),
    )


def _property(lanes: _Reader) -> PropertyLane | None:
    allowed = {"paths", "module", "modules", "seed", "cases", "timeout_s", "pythonpath"}
    r = lanes.mapping("property", allowed)
    if r is None:
        return None
    r.require("paths")
    if r.has("module") == r.has("modules"):
        # Both: point at the later of the two keys; neither: at ``property:`` itself.
        line = max(r.line("module"), r.line("modules")) if r.has("module") else r.line()
        raise MapError(r.label, f"{r.where}: give exactly one of 'module' or 'modules'", line)
    if r.has("module"):
        modules: tuple[str, ...] = (r.string("module") or "",)
        key = "module"
    else:
        key = "modules"
        raw = r.m["modules"]
        if not isinstance(raw, YamlList) or not raw or not all(isinstance(x, str) for x in raw):
            raise r.fail(key, "expected a non-empty list of module names")
        modules = tuple(raw)
    for name in modules:
        if not _MODULE_RE.match(name):
            raise r.fail(key, f"{name!r} is not a dotted Python module name")
    return PropertyLane(
        paths=r.paths("paths"),
        modules=modules,
        seed=r.integer("seed", None, 0, MAX_SEED),
        cases=r.integer("cases", DEFAULT_CASES, 1) or DEFAULT_CASES,
        timeout_s=r.number("timeout_s", DEFAULT_TIMEOUT_S),
        pythonpath=r.paths("pythonpath"),
        modules_key=key,
        modules_line=r.line(key),
    )


def _fixture(lanes: _Reader) -> FixtureLane | None:
    r = lanes.mapping("fixture", {"paths", "lock", "canonical_json", "roots"})
    if r is None:
        return None
    if r.has("roots"):
        for key in ("paths", "lock", "canonical_json"):
            if r.has(key):
                both = "give either 'roots' or 'paths'/'lock'/'canonical_json', not both"
                raise r.fail(key, both)
        raw = r.m["roots"]
        if not isinstance(raw, YamlList) or not raw:
            raise r.fail("roots", "expected a non-empty list of {path, lock, canonical_json}")
        roots = []
        for i, item in enumerate(raw):
            if not isinstance(item, YamlMap):
                where = f"{r.where}.roots[{i}]"
                raise MapError(r.label, f"{where}: expected a mapping", raw.item_lines[i])
            rr = _Reader(r.label, item, f"{r.where}.roots[{i}]", {"path", "lock", "canonical_json"})
            rr.require("path")
            rr.require("lock")
            roots.append(
                FixtureRoot(
                    paths=(rr.path("path", directory_ok=True) or "",),
                    lock=rr.path("lock", directory_ok=False) or "",
                    canonical_json=rr.boolean("canonical_json", False),
                )
            )
        locks = [root.lock for root in roots]
        if len(set(locks)) != len(locks):
            raise r.fail("roots", "two roots name the same lock file")
        return FixtureLane(roots=tuple(roots))
    r.require("paths")
    r.require("lock")
    paths = r.paths("paths")
    if not paths:
        raise r.fail("paths", "expected at least one fixture path")
    root = FixtureRoot(
        paths=paths,
        lock=r.path("lock", directory_ok=False) or "",
        canonical_json=r.boolean("canonical_json", False),
    )
    return FixtureLane(roots=(root,))


def _freeze(lanes: _Reader) -> FreezeLane | None:
    r = lanes.mapping("freeze", {"registry", "max_age_days", "max_extensions"})
    if r is None:
        return None
    r.require("registry")
    return FreezeLane(
        registry=r.path("registry", directory_ok=False) or "",
        max_age_days=r.integer("max_age_days", DEFAULT_MAX_AGE_DAYS, 0, MAX_AGE_DAYS) or 0,
        max_extensions=r.integer("max_extensions", DEFAULT_MAX_EXTENSIONS, 0) or 0,
    )


def _replay(lanes: _Reader) -> ReplayLane:
    r = lanes.mapping("replay", {"tests", "private", "require_signature"})
    if r is None:
        return ReplayLane(tests=DEFAULT_REPLAY_TESTS, private=(), require_signature=False)
    tests = r.paths("tests", DEFAULT_REPLAY_TESTS)
    if not tests:
        raise r.fail("tests", "expected at least one test path")
    return ReplayLane(
        tests=tests,
        private=r.paths("private"),
        require_signature=r.boolean("require_signature", False),
    )


def _ignore(top: _Reader) -> tuple[IgnoreEntry, ...]:
    if not top.has("ignore"):
        return ()
    raw = top.m["ignore"]
    if not isinstance(raw, YamlList):
        raise top.fail("ignore", "expected a list of {path, reason}")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, YamlMap):
            message = f"ignore[{i}]: expected a mapping {{path, reason}}"
            raise MapError(top.label, message, raw.item_lines[i])
        r = _Reader(top.label, item, f"ignore[{i}]", {"path", "reason"})
        r.require("path")
        r.require("reason")
        reason = r.string("reason") or ""
        if "\n" in reason.strip():
            raise r.fail("reason", "must be one line")
        out.append(IgnoreEntry(path=r.path("path", directory_ok=True) or "", reason=reason.strip()))
    return tuple(out)
