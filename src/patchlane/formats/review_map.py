"""The review map (``review-map.yml``), declared once (``inputs.model``): ``MapFile`` and the
lanes' models say every key, its type, bounds and pattern; the schema derives from them, and
the strict reader (``project.config.parse_review_map``) refuses any key they do not declare.
What the reader checks across keys (``module`` or ``modules`` or ``tests``; ``roots`` or
``paths``/``lock``) each model's ``SCHEMA_ACROSS`` says in the schema too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from patchlane.formats.canary import DEFAULT_MIN, DEFAULT_SHARE
from patchlane.formats.envelope import document_schema
from patchlane.inputs.model import keys, schema_of, schema_parts, spec

DEFAULT_CASES = 200
DEFAULT_TIMEOUT_S = 60.0
# The oracle audit is informational (it never changes the verdict): it gets a few seconds.
DEFAULT_AUDIT_BUDGET_S = 5.0
DEFAULT_MAX_AGE_DAYS = 14
DEFAULT_MAX_EXTENSIONS = 1
DEFAULT_REPLAY_TESTS = ("tests/",)
# A C extension's build takes seconds to minutes; a build that hangs must still end.
DEFAULT_BUILD_TIMEOUT_S = 900.0
# A seed can become a child's PYTHONHASHSEED (``replay map`` records the base under it),
# which Python accepts only up to 2**32 - 1 (a larger one makes every test process fail to
# start). The replay's own runs draw theirs (``replay.run.draw_hash_seed``).
MAX_SEED = 2**32 - 1
# ``today + max_age_days`` must stay a date (year 9999 at most); a century is already
# beyond any review period.
MAX_AGE_DAYS = 36500
ISOLATION_CHOICES = ("preferred", "required")
MODULE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"

# A repository path as far as a schema can say (``inputs.paths.path_problem`` says all):
# relative, no ``..`` component, no backslash.
PATH_PATTERN = r"^(?!/)(?!(.*/)?\.\.(/|$))[^\\]+$"
_PATH = spec(pattern=PATH_PATTERN)
_PATHS = spec(pattern=PATH_PATTERN)
_SEED = spec(lo=0, hi=MAX_SEED)
_SECONDS = spec(above=0)


def _sorted_keys(model: type) -> tuple[str, ...]:
    """A model's keys as the reader's refusals list them: sorted."""
    return tuple(sorted(keys(model)))


@dataclass(frozen=True)
class PropertyFile:
    """``lanes.property``: the paths its properties cover, the property modules (``module``
    or ``modules``) and existing Hypothesis tests (``tests``), and how they run."""

    SCHEMA_ACROSS: ClassVar[Mapping[str, object]] = {
        "not": {"required": ["module", "modules"]},
        "anyOf": [{"required": ["module"]}, {"required": ["modules"]}, {"required": ["tests"]}],
    }

    paths: tuple[str, ...] = field(metadata=_PATHS)
    module: str | None = field(default=None, metadata=spec(pattern=MODULE_PATTERN, null=False))
    modules: tuple[str, ...] | None = field(
        default=None, metadata=spec(pattern=MODULE_PATTERN, null=False)
    )
    seed: int | None = field(default=None, metadata=spec(lo=0, hi=MAX_SEED, null=False))
    cases: int = field(default=DEFAULT_CASES, metadata=spec(lo=1))
    timeout_s: float = field(default=DEFAULT_TIMEOUT_S, metadata=_SECONDS)
    audit_budget_s: float = field(default=DEFAULT_AUDIT_BUDGET_S, metadata=_SECONDS)
    pythonpath: tuple[str, ...] = field(default=(), metadata=_PATHS)
    tests: tuple[str, ...] = field(
        default=(),
        metadata=spec(
            pattern=PATH_PATTERN,
            duplicate="{!r} is listed twice",
            description="existing Hypothesis tests run as properties: pytest node ids "
            "(FILE.py::test, FILE.py::Class::test) or paths (a test file, a directory)",
        ),
    )


@dataclass(frozen=True)
class RootFile:
    """One entry of ``lanes.fixture.roots``: a path, its lock, and whether its JSON files
    are hashed in canonical form."""

    path: str = field(metadata=_PATH)
    lock: str = field(metadata=_PATH)
    canonical_json: bool = False


@dataclass(frozen=True)
class FixtureFile:
    """``lanes.fixture``: ``roots``, or one root written as ``paths``, ``lock`` and
    ``canonical_json``."""

    SCHEMA_ACROSS: ClassVar[Mapping[str, object]] = {
        "oneOf": [
            {"required": ["paths", "lock"], "not": {"required": ["roots"]}},
            {
                "required": ["roots"],
                "not": {"anyOf": [{"required": [k]} for k in ("paths", "lock", "canonical_json")]},
            },
        ]
    }

    paths: tuple[str, ...] | None = field(
        default=None, metadata=spec(pattern=PATH_PATTERN, null=False)
    )
    lock: str | None = field(default=None, metadata=spec(pattern=PATH_PATTERN, null=False))
    canonical_json: bool = False
    roots: tuple[RootFile, ...] | None = field(default=None, metadata=spec(null=False))


@dataclass(frozen=True)
class FreezeFile:
    """``lanes.freeze``: the registry, and how old and how often extended a freeze may be."""

    registry: str = field(metadata=_PATH)
    max_age_days: int = field(default=DEFAULT_MAX_AGE_DAYS, metadata=spec(lo=0, hi=MAX_AGE_DAYS))
    max_extensions: int = field(default=DEFAULT_MAX_EXTENSIONS, metadata=spec(lo=0))


@dataclass(frozen=True)
class CanaryFile:
    """``lanes.replay.canary`` as a mapping: the share of the tests outside the slice to
    draw, and the least number of them."""

    share: float = field(default=DEFAULT_SHARE, metadata=spec(lo=0, hi=1))
    min: int = field(default=DEFAULT_MIN, metadata=spec(lo=0))


_CANARY_SCHEMA = {
    "oneOf": [schema_of(CanaryFile), {"enum": ["off", False, 0]}],
    "description": "the random sample of the tests outside the slice that runs with it: "
    "max(ceil(share * outside), min), capped at what there is (default share 0.05, min 20); "
    "off (or false, or 0) for none",
}


@dataclass(frozen=True)
class ReplayFile:
    """``lanes.replay``: the suite's tests, the private ones, whether a receipt must be
    signed, the build command, the canary, the code the replay alone judges and a seed."""

    tests: tuple[str, ...] = field(default=DEFAULT_REPLAY_TESTS, metadata=_PATHS)
    private: tuple[str, ...] = field(default=(), metadata=_PATHS)
    require_signature: bool = False
    build: str | None = field(
        default=None, metadata=spec(pattern=r"^[\s\S]*\S[\s\S]*$", null=False)
    )
    build_timeout_s: float = field(default=DEFAULT_BUILD_TIMEOUT_S, metadata=_SECONDS)
    canary: object = field(
        default=None, metadata=spec(schema=_CANARY_SCHEMA, read=lambda r, k: r.get(k))
    )
    paths: tuple[str, ...] = field(
        default=(),
        metadata=spec(
            pattern=PATH_PATTERN,
            description="code the replay alone judges (no property oracle): covered, and the "
            "note says it was judged by the base's tests alone",
        ),
    )
    seed: int | None = field(
        default=None,
        metadata=spec(
            lo=0, hi=MAX_SEED, null=False,
            description="a map's seed when it has no property lane: the default --seed",
        ),
    )  # fmt: skip


@dataclass(frozen=True)
class LanesFile:
    """``lanes``: each lane the map configures (the replay's defaults when not written)."""

    property: PropertyFile | None = field(default=None, metadata=spec(null=False))
    fixture: FixtureFile | None = field(default=None, metadata=spec(null=False))
    freeze: FreezeFile | None = field(default=None, metadata=spec(null=False))
    replay: ReplayFile | None = field(default=None, metadata=spec(null=False))


@dataclass(frozen=True)
class IgnoreFile:
    """An ``ignore`` entry: a path no lane looks at, and why (one line)."""

    path: str = field(metadata=_PATH)
    reason: str = field(metadata=spec(pattern=r"^[^\n]*\S[^\n]*\n?$"))


@dataclass(frozen=True)
class MapFile:
    """The review map: its version (1), its lanes, its ignored paths and the isolation it
    requires."""

    version: int = field(default=1, metadata=spec(lo=1, hi=1))
    lanes: LanesFile = field(default_factory=LanesFile, metadata=spec(required=True))
    ignore: tuple[IgnoreFile, ...] = ()
    isolation: str = field(
        default="preferred",
        metadata=spec(
            choices=ISOLATION_CHOICES,
            description="required: a gate whose children could not run in the kernel sandbox "
            "(bubblewrap) is undecided; preferred (the default): the fallback runs and the "
            "note says which isolation ran",
        ),
    )


# The keys of each object, as the reader's refusals list them.
TOP_KEYS = _sorted_keys(MapFile)
LANE_KEYS = _sorted_keys(LanesFile)
PROPERTY_KEYS = _sorted_keys(PropertyFile)
FIXTURE_KEYS = _sorted_keys(FixtureFile)
ROOT_KEYS = _sorted_keys(RootFile)
FREEZE_KEYS = _sorted_keys(FreezeFile)
REPLAY_KEYS = _sorted_keys(ReplayFile)
CANARY_KEYS = _sorted_keys(CanaryFile)
IGNORE_KEYS = _sorted_keys(IgnoreFile)


def map_schema() -> dict[str, object]:
    """Return the JSON Schema of the review map, derived from ``MapFile``."""
    properties, required = schema_parts(MapFile)
    return document_schema(
        "review-map.yml", "patchlane review map", dict(properties), required, name="review-map"
    )
