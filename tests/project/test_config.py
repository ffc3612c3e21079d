"""The review map: the seed's form, every extended key, and precise errors (FILE:LINE: ...)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from patchlane.errors import MapError
from patchlane.project.classify import load_map_file
from patchlane.project.config import (
    FixtureLane,
    FixtureRoot,
    FreezeLane,
    IgnoreEntry,
    PropertyLane,
    ReplayLane,
    ReviewMap,
    parse_review_map,
)
from tests.gitrepo import GitRepo, make_project, run_patchlane, start_patch, stderr_lines

# seed-examples/review-map.yml, byte for byte.
SEED_MAP = """\
# review-map.yml — proposal, edit per repository
lanes:
  property:
    paths: ["src/billing/", "src/quota/"]
    module: "checks.billing_props"
  fixture:
    paths: ["tests/fixtures/billing/"]
    lock: "tests/fixtures/billing/LOCK.json"
  freeze:
    registry: "tests/flaky-freeze.yml"
    max_age_days: 14
"""

# DESIGN.md §4, the full example.
FULL_MAP = """\
version: 1
lanes:
  property:
    paths: ["src/billing/", "src/quota/"]
    module: "checks.billing_props"      # or modules: [...]
    seed: 20260924                      # default for --seed
    cases: 200                          # default for --cases
    timeout_s: 60                       # per property module run
    pythonpath: ["lib"]                 # added to the repo root and src/ (when present)
  fixture:
    paths: ["tests/fixtures/billing/"]
    lock: "tests/fixtures/billing/LOCK.json"
    canonical_json: true                # hash RFC 8785 canonical JSON of *.json files
    # or several: roots: [{path, lock, canonical_json}]
  freeze:
    registry: "tests/flaky-freeze.yml"
    max_age_days: 14
    max_extensions: 1
  replay:
    tests: ["tests/"]                   # where slice node ids come from (default: tests/)
    private: ["tests/fixtures/customer/"]   # never leaves for a shared host
    require_signature: false
ignore:
  - path: "docs/"
    reason: "prose only"
"""

DEFAULT_REPLAY = ReplayLane(tests=("tests/",), private=(), require_signature=False)


def test_seed_map_loads_as_printed() -> None:
    m = parse_review_map(SEED_MAP, "review-map.yml")
    assert m == ReviewMap(
        label="review-map.yml",
        property=PropertyLane(
            paths=("src/billing/", "src/quota/"),
            modules=("checks.billing_props",),
            seed=None,
            cases=200,
            timeout_s=60.0,
            pythonpath=(),
        ),
        fixture=FixtureLane(
            roots=(
                FixtureRoot(
                    paths=("tests/fixtures/billing/",),
                    lock="tests/fixtures/billing/LOCK.json",
                    canonical_json=False,
                ),
            )
        ),
        freeze=FreezeLane(registry="tests/flaky-freeze.yml", max_age_days=14, max_extensions=1),
        replay=DEFAULT_REPLAY,
        ignore=(),
    )
    assert m.fixture is not None
    assert m.fixture.paths == ("tests/fixtures/billing/",)
    assert m.fixture.locks == ("tests/fixtures/billing/LOCK.json",)


def test_full_design_map_loads_every_extended_key() -> None:
    m = parse_review_map(FULL_MAP, "review-map.yml")
    assert m.property == PropertyLane(
        paths=("src/billing/", "src/quota/"),
        modules=("checks.billing_props",),
        seed=20260924,
        cases=200,
        timeout_s=60.0,
        pythonpath=("lib",),
    )
    assert isinstance(m.property.timeout_s, float)
    assert m.fixture == FixtureLane(
        roots=(
            FixtureRoot(
                paths=("tests/fixtures/billing/",),
                lock="tests/fixtures/billing/LOCK.json",
                canonical_json=True,
            ),
        )
    )
    assert m.freeze == FreezeLane(
        registry="tests/flaky-freeze.yml", max_age_days=14, max_extensions=1
    )
    assert m.replay == ReplayLane(
        tests=("tests/",), private=("tests/fixtures/customer/",), require_signature=False
    )
    assert m.ignore == (IgnoreEntry(path="docs/", reason="prose only"),)


def test_non_default_values_are_read() -> None:
    m = parse_review_map(
        textwrap.dedent(
            """\
            lanes:
              property:
                paths: []
                modules: ["checks.a", "props"]
                cases: 7
                timeout_s: 2.5
              freeze:
                registry: "flaky.yml"
                max_age_days: 0
                max_extensions: 3
              replay:
                tests: ["t/", "more_tests"]
                require_signature: true
            ignore:
              - {path: "docs/", reason: "  prose  "}
              - {path: "CHANGELOG.md", reason: "notes"}
            """
        ),
        "m.yml",
    )
    assert m.property is not None
    assert m.property.modules == ("checks.a", "props")
    assert (m.property.cases, m.property.timeout_s, m.property.seed) == (7, 2.5, None)
    assert m.fixture is None
    assert m.freeze == FreezeLane(registry="flaky.yml", max_age_days=0, max_extensions=3)
    assert m.replay == ReplayLane(tests=("t/", "more_tests"), private=(), require_signature=True)
    assert m.ignore == (IgnoreEntry("docs/", "prose"), IgnoreEntry("CHANGELOG.md", "notes"))


def test_fixture_roots_form() -> None:
    m = parse_review_map(
        textwrap.dedent(
            """\
            lanes:
              fixture:
                roots:
                  - path: "tests/fixtures/billing/"
                    lock: "tests/fixtures/billing/LOCK.json"
                    canonical_json: true
                  - {path: "tests/fixtures/quota/", lock: "tests/quota.lock.json"}
            """
        ),
        "m.yml",
    )
    assert m.fixture == FixtureLane(
        roots=(
            FixtureRoot(("tests/fixtures/billing/",), "tests/fixtures/billing/LOCK.json", True),
            FixtureRoot(("tests/fixtures/quota/",), "tests/quota.lock.json", False),
        )
    )
    assert m.fixture.paths == ("tests/fixtures/billing/", "tests/fixtures/quota/")
    assert m.fixture.locks == ("tests/fixtures/billing/LOCK.json", "tests/quota.lock.json")


def test_the_replay_build_command_and_its_timeout() -> None:
    text = 'lanes:\n  replay:\n    build: "python setup.py build_ext --inplace"\n'
    m = parse_review_map(text + "    build_timeout_s: 120\n", "m.yml")
    assert (m.replay.build, m.replay.build_timeout_s) == (
        "python setup.py build_ext --inplace",
        120.0,
    )
    assert parse_review_map(text, "m.yml").replay.build_timeout_s == 900.0
    assert DEFAULT_REPLAY.build is None


def test_a_map_with_no_lanes_is_valid_and_empty() -> None:
    m = parse_review_map("lanes: {}\n", "m.yml")
    assert (m.property, m.fixture, m.freeze, m.ignore) == (None, None, None, ())
    assert m.replay == DEFAULT_REPLAY


# --- errors: every one is "FILE:LINE: what" ---------------------------------------------

BASE = """\
version: 1
lanes:
  property:
    paths: ["src/billing/"]
    module: "checks.props"
  fixture:
    paths: ["tests/fixtures/"]
    lock: "tests/fixtures/LOCK.json"
  freeze:
    registry: "tests/flaky-freeze.yml"
  replay:
    tests: ["tests/"]
ignore:
  - path: "docs/"
    reason: "prose"
"""


def _edit(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new, 1)


ERRORS: list[tuple[str, str, int, str]] = [
    # unknown keys, at every level
    ("top-level", BASE + "extra: 1\n", 16, "extra: unknown key"),
    ("lane", _edit("  replay:\n", "  bogus: {}\n  replay:\n"), 11, "lanes.bogus: unknown key"),
    ("property", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    sed: 1\n'),
     6, "lanes.property.sed: unknown key"),
    ("fixture", _edit('    lock: "tests/fixtures/LOCK.json"\n',
                      '    lock: "tests/fixtures/LOCK.json"\n    canonical: true\n'),
     9, "lanes.fixture.canonical: unknown key"),
    ("freeze", _edit('    registry: "tests/flaky-freeze.yml"\n',
                     '    registry: "tests/flaky-freeze.yml"\n    max_age: 3\n'),
     11, "lanes.freeze.max_age: unknown key"),
    ("replay", _edit('    tests: ["tests/"]\n', '    tests: ["tests/"]\n    all: true\n'),
     13, "lanes.replay.all: unknown key"),
    ("ignore", _edit('    reason: "prose"\n', '    reason: "prose"\n    until: 2027\n'),
     16, "ignore[0].until: unknown key"),
    ("roots", _edit('    paths: ["tests/fixtures/"]\n    lock: "tests/fixtures/LOCK.json"\n',
                    '    roots:\n      - path: "tests/fixtures/"\n'
                    '        lock: "tests/fixtures/LOCK.json"\n        hash: sha1\n'),
     10, "lanes.fixture.roots[0].hash: unknown key"),
    # wrong types
    ("string for int", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    cases: "200"\n'),
     6, "lanes.property.cases: expected an integer, got a string ('200')"),
    ("bool for int", _edit('    registry: "tests/flaky-freeze.yml"\n',
                           '    registry: "tests/flaky-freeze.yml"\n    max_age_days: true\n'),
     11, "lanes.freeze.max_age_days: expected an integer, got a boolean (True)"),
    ("float for int", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    seed: 1.5\n'),
     6, "lanes.property.seed: expected an integer"),
    ("date for int", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    seed: 2026-09-24\n'),
     6, "lanes.property.seed: expected an integer"),
    ("below minimum", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    cases: 0\n'),
     6, "lanes.property.cases: must be at least 1"),
    ("negative age", _edit('    registry: "tests/flaky-freeze.yml"\n',
                           '    registry: "tests/flaky-freeze.yml"\n    max_age_days: -1\n'),
     11, "lanes.freeze.max_age_days: must be at least 0"),
    ("timeout string", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    timeout_s: "60"\n'),
     6, "lanes.property.timeout_s: expected a positive number"),
    ("timeout zero", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    timeout_s: 0\n'),
     6, "lanes.property.timeout_s: expected a positive number"),
    ("timeout inf", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    timeout_s: .inf\n'),
     6, "lanes.property.timeout_s: must be finite"),
    ("blank build", _edit('    tests: ["tests/"]\n', '    tests: ["tests/"]\n    build: "  "\n'),
     13, "lanes.replay.build: expected a shell command"),
    ("build timeout", _edit('    tests: ["tests/"]\n', '    tests: ["tests/"]\n    build_timeout_s: 0\n'),
     13, "lanes.replay.build_timeout_s: expected a positive number"),
    ("list for mapping", _edit("  freeze:\n    registry: \"tests/flaky-freeze.yml\"\n",
                               "  freeze: [\"tests/flaky-freeze.yml\"]\n"),
     9, "lanes.freeze: expected a mapping, got a list"),
    ("lanes a list", "lanes: []\n", 1, "lanes: expected a mapping, got a list"),
    ("lanes null", "version: 1\nlanes:\n", 2, "lanes: expected a mapping, got nothing (null)"),
    ("mapping for list", _edit('    paths: ["src/billing/"]\n', '    paths: {src: billing}\n'),
     4, "lanes.property.paths: expected a list of paths, got a mapping"),
    ("string for list", _edit('    paths: ["src/billing/"]\n', '    paths: "src/billing/"\n'),
     4, "lanes.property.paths: expected a list of paths, got a string"),
    ("number in list", _edit('    tests: ["tests/"]\n', '    tests:\n      - "tests/"\n      - 7\n'),
     14, "lanes.replay.tests[1]: expected a path, got a number (7)"),
    ("list for string", _edit('    lock: "tests/fixtures/LOCK.json"\n', '    lock: ["a.json"]\n'),
     8, "lanes.fixture.lock: expected a non-empty string, got a list"),
    ("empty string", _edit('    lock: "tests/fixtures/LOCK.json"\n', '    lock: ""\n'),
     8, "lanes.fixture.lock: expected a non-empty string, got an empty string"),
    ("string for bool", _edit('    lock: "tests/fixtures/LOCK.json"\n',
                              '    lock: "tests/fixtures/LOCK.json"\n    canonical_json: "yes"\n'),
     9, "lanes.fixture.canonical_json: expected true or false"),
    ("int for bool", _edit('    tests: ["tests/"]\n', '    tests: ["tests/"]\n    require_signature: 1\n'),
     13, "lanes.replay.require_signature: expected true or false, got a number (1)"),
    ("ignore mapping", _edit('ignore:\n  - path: "docs/"\n    reason: "prose"\n',
                             'ignore:\n  path: "docs/"\n'),
     13, "ignore: expected a list"),
    ("ignore item string", _edit('ignore:\n  - path: "docs/"\n    reason: "prose"\n',
                                 'ignore:\n  - "docs/"\n'),
     14, "ignore[0]: expected a mapping"),
    ("two-line reason", _edit('    reason: "prose"\n', '    reason: "prose\\nmore"\n'),
     15, "ignore[0].reason: must be one line"),
    ("modules string", _edit('    module: "checks.props"\n', '    modules: "checks.props"\n'),
     5, "lanes.property.modules: expected a non-empty list of module names"),
    ("modules empty", _edit('    module: "checks.props"\n', '    modules: []\n'),
     5, "lanes.property.modules: expected a non-empty list"),
    ("bad module name", _edit('    module: "checks.props"\n', '    module: "checks/props.py"\n'),
     5, "lanes.property.module: 'checks/props.py' is not a dotted Python module name"),
    ("module name with a newline", _edit('    module: "checks.props"\n', '    module: "checks.props\\n"\n'),
     5, "lanes.property.module: 'checks.props\\n' is not a dotted Python module name"),
    ("version 2", _edit("version: 1\n", "version: 2\n"), 1, "version: unsupported version 2"),
    ("version bool", _edit("version: 1\n", "version: true\n"), 1, "version: unsupported version True"),
    ("version string", _edit("version: 1\n", 'version: "1"\n'), 1, "version: unsupported version '1'"),
    ("version float", _edit("version: 1\n", "version: 1.0\n"), 1, "version: unsupported version 1.0"),
    # YAML itself
    ("duplicate key", _edit('    lock: "tests/fixtures/LOCK.json"\n',
                            '    lock: "tests/fixtures/LOCK.json"\n    lock: "other.json"\n'),
     9, "duplicate key 'lock' (first on line 8)"),
    ("duplicate lane", BASE.replace("ignore:", "lanes: {}\nignore:"), 13, "duplicate key 'lanes'"),
    ("syntax error", _edit('    paths: ["tests/fixtures/"]\n', '    paths: ["tests/fixtures/"\n'),
     8, "YAML syntax error"),
    ("bad indentation", _edit('    registry: "tests/flaky-freeze.yml"\n',
                              '    registry: "tests/flaky-freeze.yml"\n   max_age_days: 3\n'),
     11, "YAML syntax error"),
    ("alias", _edit("    reason: \"prose\"\n", "    reason: &r \"prose\"\n  - path: x/\n    reason: *r\n"),
     17, "aliases are not allowed"),
    ("not a mapping", "- lanes\n", 1, "expected a mapping at the top, got a list"),
    ("empty document", "# nothing\n", 1, "expected a mapping at the top, got nothing (null)"),
    # unsafe paths
    ("absolute path", _edit('    paths: ["src/billing/"]\n', '    paths:\n      - "src/billing/"\n      - "/etc/"\n'),
     6, "lanes.property.paths[1]: absolute path '/etc/'"),
    ("dotdot path", _edit('    paths: ["tests/fixtures/"]\n', '    paths: ["tests/../../x/"]\n'),
     7, "lanes.fixture.paths[0]: '..' in 'tests/../../x/'"),
    ("backslash lock", _edit('    lock: "tests/fixtures/LOCK.json"\n', '    lock: "tests\\\\fixtures\\\\LOCK.json"\n'),
     8, "lanes.fixture.lock: backslash in"),
    ("lock is a directory", _edit('    lock: "tests/fixtures/LOCK.json"\n', '    lock: "tests/fixtures/"\n'),
     8, "lanes.fixture.lock: 'tests/fixtures/' names a directory"),
    ("absolute registry", _edit('    registry: "tests/flaky-freeze.yml"\n', '    registry: "/tmp/flaky.yml"\n'),
     10, "lanes.freeze.registry: absolute path"),
    ("dotdot ignore", _edit('  - path: "docs/"\n', '  - path: "../docs/"\n'), 14, "ignore[0].path: '..'"),
    ("dotdot pythonpath", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    pythonpath: ["../lib"]\n'),
     6, "lanes.property.pythonpath[0]: '..'"),
    ("absolute private", _edit('    tests: ["tests/"]\n', '    tests: ["tests/"]\n    private: ["/secret/"]\n'),
     13, "lanes.replay.private[0]: absolute path"),
    ("backslash root", _edit('    paths: ["tests/fixtures/"]\n    lock: "tests/fixtures/LOCK.json"\n',
                             '    roots:\n      - path: "tests\\\\fixtures"\n        lock: "L.json"\n'),
     8, "lanes.fixture.roots[0].path: backslash"),
    # module / modules, roots / paths
    ("module and modules", _edit('    module: "checks.props"\n', '    module: "checks.props"\n    modules: ["x"]\n'),
     6, "lanes.property: give exactly one of 'module' or 'modules'"),
    ("neither module", _edit('    module: "checks.props"\n', ""),
     3, "lanes.property: give 'module', 'modules' or 'tests'"),
    ("roots with paths", _edit('    lock: "tests/fixtures/LOCK.json"\n',
                               '    roots: [{path: "a/", lock: "a.json"}]\n'),
     7, "lanes.fixture.paths: give either 'roots' or 'paths'"),
    ("roots with lock", _edit('    paths: ["tests/fixtures/"]\n', '    roots: [{path: "a/", lock: "a.json"}]\n'),
     8, "lanes.fixture.lock: give either 'roots' or 'paths'"),
    ("roots empty", _edit('    paths: ["tests/fixtures/"]\n    lock: "tests/fixtures/LOCK.json"\n',
                          "    roots: []\n"),
     7, "lanes.fixture.roots: expected a non-empty list"),
    ("roots same lock", _edit('    paths: ["tests/fixtures/"]\n    lock: "tests/fixtures/LOCK.json"\n',
                              '    roots:\n      - {path: "a/", lock: "L.json"}\n'
                              '      - {path: "b/", lock: "L.json"}\n'),
     7, "lanes.fixture.roots: two roots name the same lock file"),
    ("root not mapping", _edit('    paths: ["tests/fixtures/"]\n    lock: "tests/fixtures/LOCK.json"\n',
                               '    roots:\n      - {path: "a/", lock: "L.json"}\n      - "b/"\n'),
     9, "lanes.fixture.roots[1]: expected a mapping"),
    # required keys: the line of the mapping that lacks them
    ("lanes missing", "version: 1\nignore: []\n", 1, "lanes: missing"),
    ("fixture without lock", _edit('    lock: "tests/fixtures/LOCK.json"\n', ""), 6, "lanes.fixture.lock: missing"),
    ("fixture paths empty", _edit('    paths: ["tests/fixtures/"]\n', "    paths: []\n"),
     7, "lanes.fixture.paths: expected at least one fixture path"),
    ("freeze without registry", _edit('    registry: "tests/flaky-freeze.yml"\n', "    max_age_days: 3\n"),
     9, "lanes.freeze.registry: missing"),
    ("property without paths", _edit('    paths: ["src/billing/"]\n', ""), 3, "lanes.property.paths: missing"),
    ("root without lock", _edit('    paths: ["tests/fixtures/"]\n    lock: "tests/fixtures/LOCK.json"\n',
                                '    roots:\n      - path: "a/"\n        canonical_json: true\n'),
     8, "lanes.fixture.roots[0].lock: missing"),
    ("ignore without reason", _edit('    reason: "prose"\n', ""), 14, "ignore[0].reason: missing"),
    ("replay tests empty", _edit('    tests: ["tests/"]\n', "    tests: []\n"),
     12, "lanes.replay.tests: expected at least one test path"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "line", "fragment"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_map_errors_name_file_and_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(MapError) as info:
        parse_review_map(text, "review-map.yml")
    message = str(info.value)
    assert info.value.line == line, message
    assert message.startswith(f"review-map.yml:{line}: "), message
    assert fragment in message
    assert "\n" not in message


def test_every_error_case_differs_from_the_valid_base() -> None:
    parse_review_map(BASE, "review-map.yml")  # the base itself is valid
    assert len({text for _, text, _, _ in ERRORS}) == len(ERRORS)


def test_load_map_file_errors(tmp_path: Path) -> None:
    with pytest.raises(MapError, match="no such file"):
        load_map_file(tmp_path / "missing.yml")
    (tmp_path / "bad.yml").write_bytes(b"lanes: {}\n# caf\xe9\n")
    with pytest.raises(MapError, match=r"bad\.yml:2: not UTF-8 \(byte 15\)$"):
        load_map_file(tmp_path / "bad.yml")
    with pytest.raises(MapError, match="cannot read"):
        load_map_file(tmp_path)
    (tmp_path / "ok.yml").write_text(SEED_MAP)
    assert load_map_file(tmp_path / "ok.yml").label == str(tmp_path / "ok.yml")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "line"),
    [
        (BASE + "extra: 1\n", 16),
        (_edit('    lock: "tests/fixtures/LOCK.json"\n', '    lock: "a"\n    lock: "b"\n'), 9),
        (_edit('    paths: ["tests/fixtures/"]\n', '    paths: ["tests/fixtures/"\n'), 8),
        (
            _edit(
                '    module: "checks.props"\n', '    module: "checks.props"\n    seed: 2026-02-30\n'
            ),
            6,
        ),
        (_edit("version: 1\n", "version: 1\n" + "x: " + "[" * 5000 + "]" * 5000 + "\n"), 2),
    ],
    ids=["unknown key", "duplicate key", "syntax error", "impossible date", "deep nesting"],
)
def test_malformed_map_through_the_cli(repo: GitRepo, text: str, line: int) -> None:
    make_project(repo, text)
    start_patch(repo)
    repo.write("src/billing/core.py", "changed\n")
    repo.commit("patch")
    proc = run_patchlane("--repo", repo.path, "classify", "--base", "main")
    assert proc.returncode == 2
    lines = stderr_lines(proc)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"patchlane: error: review-map.yml:{line}: "), lines
    assert "Traceback" not in proc.stderr.decode()
    assert proc.stdout == b""
