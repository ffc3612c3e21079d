"""The review map (``review-map.yml``): strict loading into frozen dataclasses.

The keys of docs/architecture.md §4 are accepted; anything else (unknown keys, wrong types,
duplicate keys, bad YAML, unsafe paths) is a ``MapError`` naming the file and line. The
format is declared once, in ``formats.review_map`` (its keys, types, bounds and schema);
this module reads it into the types the lanes use.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field

from patchlane.errors import MapError
from patchlane.formats.canary import DEFAULT_MIN, DEFAULT_SHARE, MAP_SOURCE, CanarySetting
from patchlane.formats.review_map import (
    CANARY_KEYS,
    FIXTURE_KEYS,
    FREEZE_KEYS,
    IGNORE_KEYS,
    LANE_KEYS,
    MODULE_PATTERN,
    PROPERTY_KEYS,
    REPLAY_KEYS,
    ROOT_KEYS,
    TOP_KEYS,
)

# The map's defaults and bounds, by the names the lanes and commands import them under.
from patchlane.formats.review_map import DEFAULT_AUDIT_BUDGET_S as DEFAULT_AUDIT_BUDGET_S
from patchlane.formats.review_map import DEFAULT_BUILD_TIMEOUT_S as DEFAULT_BUILD_TIMEOUT_S
from patchlane.formats.review_map import DEFAULT_CASES as DEFAULT_CASES
from patchlane.formats.review_map import DEFAULT_MAX_AGE_DAYS as DEFAULT_MAX_AGE_DAYS
from patchlane.formats.review_map import DEFAULT_MAX_EXTENSIONS as DEFAULT_MAX_EXTENSIONS
from patchlane.formats.review_map import DEFAULT_REPLAY_TESTS as DEFAULT_REPLAY_TESTS
from patchlane.formats.review_map import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
from patchlane.formats.review_map import ISOLATION_CHOICES as ISOLATION_CHOICES
from patchlane.formats.review_map import MAX_AGE_DAYS as MAX_AGE_DAYS
from patchlane.formats.review_map import MAX_SEED as MAX_SEED
from patchlane.inputs.fields import Fields, kind_of, yaml_document
from patchlane.inputs.paths import path_problem
from patchlane.inputs.yamlio import YamlMap, load_yaml

DEFAULT_MAP = "review-map.yml"
_MODULE_RE = re.compile(MODULE_PATTERN)


@dataclass(frozen=True)
class PropertyLane:
    paths: tuple[str, ...]
    modules: tuple[str, ...]
    seed: int | None
    cases: int
    timeout_s: float
    pythonpath: tuple[str, ...]
    audit_budget_s: float = DEFAULT_AUDIT_BUDGET_S
    # Where the map names the modules (``module`` or ``modules``, and the line), so that an
    # error about one of them can point there; not part of what the lane is.
    modules_key: str = field(default="modules", compare=False)
    modules_line: int | None = field(default=None, compare=False)
    # Existing Hypothesis tests run as properties: pytest node ids and paths (``tests``).
    tests: tuple[str, ...] = ()
    tests_line: int | None = field(default=None, compare=False)


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
    # A shell command that builds the project's compiled code in place (``python setup.py
    # build_ext --inplace``), run in every materialised tree before collection
    # (docs/architecture.md §2); ``None``: nothing is built.
    build: str | None = None
    build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S
    # The random sample of the tests outside the slice that runs with it (``canary``);
    # ``None``: not written (``canary.setting_for`` gives the default).
    canary: CanarySetting | None = None
    # Code the replay alone judges (no property oracle covers it): the diff's paths under
    # these are covered (no "map incomplete"), and the note says the code was judged by the
    # base's tests alone. ``init`` writes it when it finds no properties.
    paths: tuple[str, ...] = ()
    # A map's seed when it has no property lane (``ReviewMap.seed``): the gate's default
    # ``--seed``, so that a map with the replay alone still runs ``gate`` as written.
    seed: int | None = None


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
    # ``required``: a gate whose children ran without the kernel sandbox is ``undecided``
    # (docs/architecture.md §2); ``preferred``: the fallback runs and the note says so.
    isolation: str = "preferred"

    # ``builtins``: the field ``property`` above shadows the decorator's name in this body.
    @builtins.property
    def seed(self) -> int | None:
        """The map's seed, the default ``--seed`` of every command: ``lanes.property.seed``,
        else ``lanes.replay.seed``; ``None`` when neither is written."""
        if self.property is not None and self.property.seed is not None:
            return self.property.seed
        return self.replay.seed


def parse_review_map(text: str, label: str) -> ReviewMap:
    """Validate the text of a review map.

    Returns a ``ReviewMap``. Raises ``MapError`` (file, line, what is wrong) for bad YAML,
    duplicate or unknown keys, wrong types and unsafe paths.
    """
    doc = load_yaml(text, label, MapError)
    if not isinstance(doc, YamlMap):
        raise MapError(label, f"expected a mapping at the top, got {kind_of(doc)}", 1)
    top = yaml_document(doc, label, MapError).fields(doc).only(TOP_KEYS)
    version = top.get("version", 1)
    if type(version) is not int or version != 1:  # ``true == 1`` and ``1.0 == 1`` in Python
        raise top.fail("version", f"unsupported version {version!r} (this patchlane reads 1)")
    lanes = top.mapping("lanes").only(LANE_KEYS)
    return ReviewMap(
        label=label,
        property=_property(lanes),
        fixture=_fixture(lanes),
        freeze=_freeze(lanes),
        replay=_replay(lanes),
        ignore=_ignore(top),
        isolation=top.choice("isolation", ISOLATION_CHOICES, default="preferred"),
    )


def _file_path(value: str) -> str | None:
    return path_problem(value, directory_ok=False)


def _paths(r: Fields, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Return the list of repository paths (files or directories) at ``key``."""
    return r.text_list(
        key, expected="a list of paths", item="a path", check=path_problem, default=default
    )


def _seconds(r: Fields, key: str, default: float) -> float:
    """Return the positive, finite number of seconds at ``key``."""
    value = r.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise r.fail(key, f"expected a positive number of seconds, got {value!r}")
    if value != value or value == float("inf"):
        raise r.fail(key, "must be finite")
    return float(value)


def _property(lanes: Fields) -> PropertyLane | None:
    r = lanes.mapping("property", default=None)
    if r is None:
        return None
    r.only(PROPERTY_KEYS)
    r.require("paths")
    tests = r.text_list(
        "tests",
        expected="a list of pytest node ids or paths",
        item="a node id or path",
        check=_test_problem,
        duplicate="{!r} is listed twice",
        default=(),
    )
    if r.has("module") and r.has("modules"):
        line = max(r.line("module") or 0, r.line("modules") or 0)
        raise r.fail((), "give exactly one of 'module' or 'modules'", line=line)
    if not r.has("module") and not r.has("modules") and not tests:
        raise r.fail((), "give 'module', 'modules' or 'tests'")
    modules: tuple[str, ...] = ()
    if r.has("module"):
        modules = (r.text("module"),)
        key = "module"
    elif not r.has("modules"):
        key = "modules"
    else:
        key = "modules"
        raw = r.get("modules")
        if not isinstance(raw, list) or not raw or not all(isinstance(x, str) for x in raw):
            raise r.fail(key, "expected a non-empty list of module names")
        modules = tuple(raw)
    for name in modules:
        if not _MODULE_RE.fullmatch(name):
            raise r.fail(key, f"{name!r} is not a dotted Python module name")
    return PropertyLane(
        paths=_paths(r, "paths"),
        modules=modules,
        seed=r.integer("seed", lo=0, hi=MAX_SEED, default=None),
        cases=r.integer("cases", lo=1, default=DEFAULT_CASES),
        timeout_s=_seconds(r, "timeout_s", DEFAULT_TIMEOUT_S),
        pythonpath=_paths(r, "pythonpath"),
        audit_budget_s=_seconds(r, "audit_budget_s", DEFAULT_AUDIT_BUDGET_S),
        modules_key=key,
        modules_line=r.line(key),
        tests=tests,
        tests_line=r.line("tests"),
    )


_TEST_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def _test_problem(entry: str) -> str | None:
    """Why ``entry`` of ``lanes.property.tests`` is neither a node id (``FILE.py::name``,
    ``FILE.py::Class::name``) nor a repository path, or ``None``."""
    path, _, rest = entry.partition("::")
    problem = path_problem(path, directory_ok=not rest)
    if problem or not rest:
        return problem
    if not path.endswith(".py"):
        return f"{entry!r}: a node id names a .py file"
    names = rest.split("::")
    if len(names) > 2 or not all(_TEST_NAME_RE.match(n) for n in names):
        return f"{entry!r}: expected FILE.py::test or FILE.py::Class::test (no parameters)"
    return None


def _fixture(lanes: Fields) -> FixtureLane | None:
    r = lanes.mapping("fixture", default=None)
    if r is None:
        return None
    r.only(FIXTURE_KEYS)
    if r.has("roots"):
        for key in ("paths", "lock", "canonical_json"):
            if r.has(key):
                both = "give either 'roots' or 'paths'/'lock'/'canonical_json', not both"
                raise r.fail(key, both)
        entries = r.items(
            "roots",
            expected="a non-empty list of {path, lock, canonical_json}",
            item="a mapping",
            non_empty=True,
            got=False,
        )
        roots = [_root(rr) for rr in entries]
        locks = [root.lock for root in roots]
        if len(set(locks)) != len(locks):
            raise r.fail("roots", "two roots name the same lock file")
        return FixtureLane(roots=tuple(roots))
    r.require("paths", "lock")
    paths = _paths(r, "paths")
    if not paths:
        raise r.fail("paths", "expected at least one fixture path")
    root = FixtureRoot(
        paths=paths,
        lock=r.text("lock", check=_file_path),
        canonical_json=r.boolean("canonical_json", default=False),
    )
    return FixtureLane(roots=(root,))


def _root(r: Fields) -> FixtureRoot:
    """One entry of ``fixture.roots``: ``{path, lock, canonical_json}``."""
    r.only(ROOT_KEYS)
    r.require("path", "lock")
    return FixtureRoot(
        paths=(r.text("path", check=path_problem),),
        lock=r.text("lock", check=_file_path),
        canonical_json=r.boolean("canonical_json", default=False),
    )


def _freeze(lanes: Fields) -> FreezeLane | None:
    r = lanes.mapping("freeze", default=None)
    if r is None:
        return None
    r.only(FREEZE_KEYS)
    return FreezeLane(
        registry=r.text("registry", check=_file_path),
        max_age_days=r.integer("max_age_days", lo=0, hi=MAX_AGE_DAYS, default=DEFAULT_MAX_AGE_DAYS),
        max_extensions=r.integer("max_extensions", lo=0, default=DEFAULT_MAX_EXTENSIONS),
    )


def _replay(lanes: Fields) -> ReplayLane:
    r = lanes.mapping("replay", default=None)
    if r is None:
        return ReplayLane(tests=DEFAULT_REPLAY_TESTS, private=(), require_signature=False)
    r.only(REPLAY_KEYS)
    tests = _paths(r, "tests", DEFAULT_REPLAY_TESTS)
    if not tests:
        raise r.fail("tests", "expected at least one test path")
    return ReplayLane(
        tests=tests,
        private=_paths(r, "private"),
        require_signature=r.boolean("require_signature", default=False),
        build=r.text("build", expected="a shell command", default=None),
        build_timeout_s=_seconds(r, "build_timeout_s", DEFAULT_BUILD_TIMEOUT_S),
        canary=_canary(r),
        paths=_paths(r, "paths"),
        seed=r.integer("seed", lo=0, hi=MAX_SEED, default=None),
    )


def _canary(r: Fields) -> CanarySetting | None:
    """Return ``replay.canary``: ``{share, min}`` (either may be left out), or ``off``
    (also ``false`` or ``0``) for no canary; ``None`` when not written. Raises
    ``MapError`` for anything else, a share outside 0..1 or a negative ``min``."""
    value = r.get("canary", None)
    if value is None:
        return None
    if value is False or value == "off" or (type(value) is int and value == 0):
        return CanarySetting(share=0.0, min=0, source=MAP_SOURCE)
    c = r.mapping("canary", expected="{share, min} or off").only(CANARY_KEYS)
    share = c.number("share", lo=0, expected="a share between 0 and 1", default=DEFAULT_SHARE)
    if share > 1:
        raise c.fail("share", f"expected a share between 0 and 1, got {share!r}")
    least = c.integer("min", lo=0, default=DEFAULT_MIN)
    return CanarySetting(share=float(share), min=least, source=MAP_SOURCE)


def _ignore(top: Fields) -> tuple[IgnoreEntry, ...]:
    if not top.has("ignore"):
        return ()
    entries = top.items(
        "ignore", expected="a list of {path, reason}", item="a mapping {path, reason}", got=False
    )
    out = []
    for r in entries:
        r.only(IGNORE_KEYS)
        r.require("path", "reason")
        reason = r.text("reason")
        if "\n" in reason.strip():
            raise r.fail("reason", "must be one line")
        out.append(IgnoreEntry(path=r.text("path", check=path_problem), reason=reason.strip()))
    return tuple(out)
