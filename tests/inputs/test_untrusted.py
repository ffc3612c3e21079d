"""Patch content is never an internal error (issue 9).

Every reader of repository content is fed what a hostile patch can write: arbitrary bytes,
arbitrary text, nesting a hundred thousand levels deep, alias bombs, huge integers, NaN,
NUL bytes, invalid UTF-8, lone surrogates and files far larger than any real one. Each
reader either returns its normal result or raises its documented ``InputError`` subclass
(exit 2, one line naming the file); the lanes turn what they read into findings. The
fuzz tests are derandomised and small, so that this file runs in seconds; the end-to-end
tests run the real CLI on a real git repository and check that the exit code is never 4
and that no traceback is printed.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from patchlane.child.oracle_audit import audit as oracle
from patchlane.child.oracle_audit.astnorm import load_source
from patchlane.child.oracle_audit.mutants import MutableFunction, Unmutatable
from patchlane.errors import InputError, LockError, MapError
from patchlane.formats.receipt import ReceiptError, parse_receipt
from patchlane.formats.slicefile import SliceError, parse
from patchlane.infra.process import ChildRun
from patchlane.inputs.committed import decode_utf8
from patchlane.inputs.jsonio import parse_json_text
from patchlane.inputs.untrusted import (
    MAX_PYTHON_BYTES,
    MAX_TOML_BYTES,
    Unreadable,
    load_toml,
    parse_python,
)
from patchlane.inputs.yamlio import load_yaml
from patchlane.lanes.fixture.hashing import NotCanonical, canonical_digest
from patchlane.lanes.fixture.lockfile import lenient_reason, parse_lock_bytes
from patchlane.lanes.freeze.registry import RegistryError, parse_registry
from patchlane.lanes.property.discover import property_names, read_version
from patchlane.lanes.replay import secrets
from patchlane.lanes.replay.collect import CollectionError, _judge
from patchlane.lanes.replay.staticrules import named_basenames
from patchlane.project import importgraph
from patchlane.project.config import parse_review_map
from patchlane.project.controlfiles import configures_pytest
from tests.gitrepo import GitRepo, run_patchlane
from tests.sample import FIXTURE_MAP, FIXTURES, LOCK, SEED_MAP, make_billing_repo

# Modest and reproducible: the fuzz tests together run in a few seconds.
FUZZ = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
)

DEEP = 100_000
MB = 1024 * 1024

# Nesting in each format: (written once, repeated ``depth`` times, closer repeated).
Nesting = tuple[str, str, str]
JSON_NESTING = [("", "[", "]"), ("", '{"a":', "}"), ('{"files":', "[", "]")]
YAML_NESTING = [("", "[", "]"), ("", "{a: ", "}"), ("", "- ", ""), ("x: ", "!!seq [", "]")]
TOML_NESTING = [
    ("a = ", "[", "]"),
    ("a = ", "{b = ", "}"),
    ("[tool.pytest.ini_options]\nm = ", "[", "]"),
]
PYTHON_NESTING = [
    ("", "(", ")"),
    ("", "[", "]"),
    ("x = ", "-", ""),
    ("", "not ", ""),
    ("", "lambda: ", ""),
    ("", "1+", ""),
    ("a", ".b", ""),
    ("f", "(", ")"),
    ("", "x if y else ", ""),
    ("", "2**", ""),
]


def nested(kinds: list[Nesting], max_depth: int = DEEP) -> st.SearchStrategy[str]:
    """Text nested ``depth`` levels deep in one of ``kinds``, closed or left open."""

    def build(kind: Nesting, depth: int, closed: bool, middle: str) -> str:
        prefix, opener, closer = kind
        return prefix + opener * depth + middle + (closer * depth if closed else "")

    return st.builds(
        build,
        st.sampled_from(kinds),
        st.one_of(st.integers(1, 100), st.integers(900, 3_000), st.just(max_depth)),
        st.booleans(),
        st.sampled_from(["", "1", "x", '"s"', "null", "NaN"]),
    )


def hostile_text(kinds: list[Nesting]) -> st.SearchStrategy[str]:
    """Arbitrary text, deep nesting in the format, or both glued together."""
    return st.one_of(
        st.text(max_size=400),
        nested(kinds),
        st.builds(lambda a, b: a + b, st.text(max_size=50), nested(kinds, 5_000)),
    )


def hostile_bytes(kinds: list[Nesting]) -> st.SearchStrategy[bytes]:
    """Arbitrary bytes, or hostile text as UTF-8 with arbitrary bytes spliced in."""
    return st.one_of(
        st.binary(max_size=400),
        hostile_text(kinds).map(str.encode),
        st.builds(
            lambda t, b: t.encode() + b + t.encode(), hostile_text(kinds), st.binary(max_size=8)
        ),
    )


def one_line_error(error: InputError, label: str) -> None:
    """The contract of exit 2: one line, starting with the file's name."""
    message = str(error)
    assert message.startswith(label), message
    assert "\n" not in message and "\r" not in message


YAML_BOMB = """\
a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]
"""
HUGE_INT = "1" * 5_000


# --- the review map, the freeze registry, and YAML itself -----------------------------------


@pytest.mark.slow
@FUZZ
@given(hostile_text(YAML_NESTING))
@example(YAML_BOMB)
@example("version: " + HUGE_INT)
@example("version: 1\nlanes:\n  property:\n    paths: [src/]\n    module: m\n    seed: .nan\n")
@example("version: 1\nlanes:\n  property:\n    paths: [src/]\n    module: m\n    seed: 1e999\n")
@example(
    "version: 1\nlanes:\n  property:\n    paths: [src/]\n    module: m\n    seed: 4294967296\n"
)
@example("version: 1\nlanes:\n  freeze:\n    registry: r.yml\n    max_age_days: 99999999\n")
@example("version: 1\nlanes: {replay: {tests: ['\\x00']}}\n")
@example("version: 1\x00\n")
@example("a: \ud800\n")
@example("".join(" " * i + "- \n" for i in range(3_000)))
@example("".join(" " * i + f"k{i}:\n" for i in range(3_000)))
def test_the_review_map_reader_refuses_hostile_text_with_one_line(text: str) -> None:
    try:
        load_yaml(text, "review-map.yml", MapError)
    except MapError as e:
        one_line_error(e, "review-map.yml")
    try:
        parse_review_map(text, "review-map.yml")
    except MapError as e:
        one_line_error(e, "review-map.yml")


@pytest.mark.slow
@FUZZ
@given(hostile_text(YAML_NESTING))
@example(YAML_BOMB)
@example("freezes:\n  - " + "[" * DEEP)
@example("freezes: [{id: a, nodeid: " + "[" * DEEP + "}]")
def test_the_freeze_registry_reader_refuses_hostile_text_with_one_line(text: str) -> None:
    review_map = parse_review_map("version: 1\nlanes:\n  replay:\n    tests: [tests/]\n", "m")
    try:
        parse_registry(text, "tests/flaky-freeze.yml", review_map)
    except RegistryError as e:
        one_line_error(e, "tests/flaky-freeze.yml")


@FUZZ
@given(st.binary(max_size=400))
@example(b"\xff\xfe")
@example(b"ok\n\xed\xa0\x80")  # an encoded lone surrogate is not UTF-8
def test_decoding_refuses_bytes_that_are_not_utf8_with_the_line(data: bytes) -> None:
    try:
        decode_utf8(data, "review-map.yml", MapError)
    except MapError as e:
        one_line_error(e, "review-map.yml")
        assert e.line is not None


# --- JSON: locks, receipts, fixtures ----------------------------------------------------------


@FUZZ
@given(hostile_bytes(JSON_NESTING))
@example(b'{"files": NaN}')
@example(b'{"files": [], "reason": ' + HUGE_INT.encode() + b"}")
@example(b'{"files": 1e999}')
@example(b'{"files": [{"path": "tests/fixtures/\\ud800", "sha256": "' + b"a" * 64 + b'"}]}')
@example(b'{"\\udc00": 1}')
@example(b"\x00" * 10)
def test_the_lock_reader_refuses_hostile_bytes_with_one_line(data: bytes) -> None:
    try:
        parse_lock_bytes(data, LOCK)
    except LockError as e:
        one_line_error(e, LOCK)
    reason = lenient_reason(data)
    assert reason is None or isinstance(reason, str)


@FUZZ
@given(hostile_text(JSON_NESTING))
def test_strict_json_refuses_hostile_text_with_one_line(text: str) -> None:
    try:
        parse_json_text(text, "x.json")
    except InputError as e:
        one_line_error(e, "x.json")


@FUZZ
@given(hostile_bytes(JSON_NESTING))
@example(b'{"seed": ' + HUGE_INT.encode() + b"}")
@example(b'{"seed": 1, "slice_sha256": "' + b"a" * 64 + b'", "failed_nodeids": ["\\ud800"]}')
def test_the_receipt_reader_refuses_hostile_bytes_with_one_line(data: bytes) -> None:
    try:
        parse_receipt(data, "receipt.json")
    except ReceiptError as e:
        one_line_error(e, "receipt.json")


@FUZZ
@given(hostile_bytes(JSON_NESTING))
@example(b'{"\\udc00": 1}')  # rfc8785 sorts keys as UTF-16: a lone surrogate raised there
@example(b'"\\ud800"')
@example(b"12345678901234567890123")
@example(HUGE_INT.encode())
def test_fixture_canonicalisation_is_a_finding_for_hostile_bytes(data: bytes) -> None:
    try:
        digest = canonical_digest(data)
    except NotCanonical as e:
        assert "\n" not in str(e)
    else:
        assert re.fullmatch("[0-9a-f]{64}", digest)


# --- the slice file -----------------------------------------------------------------------------


@FUZZ
@given(hostile_bytes([("", "tests/t.py::t", "\n")]))
def test_the_slice_reader_refuses_hostile_bytes_with_one_line(data: bytes) -> None:
    try:
        parse(data, "replay-slice.txt")
    except SliceError as e:
        one_line_error(e, "replay-slice.txt")


# --- Python: the import graph, named data files, property modules ------------------------------


@pytest.mark.slow
@FUZZ
@given(hostile_bytes(PYTHON_NESTING))
@example(b"x = 1\x00\n")
@example(b"# -*- coding: no-such-codec -*-\n")
@example(b"\xff\xfe")
@example(b"x = " + HUGE_INT.encode())
@example(b"if a: pass\n" + b"elif a: pass\n" * 3_000)
def test_python_parsing_is_a_syntax_error_or_a_tree(data: bytes) -> None:
    try:
        tree = parse_python(data, "m.py")
    except SyntaxError as e:
        assert e.msg
    else:
        assert isinstance(tree, ast.Module)
    names = named_basenames(data)
    assert all(isinstance(n, str) for n in names)


@pytest.mark.slow
@FUZZ
@given(hostile_bytes(PYTHON_NESTING))
def test_an_unparsable_module_reaches_every_module_in_the_import_graph(data: bytes) -> None:
    sources = {"tests/test_t.py": b"import helper\n", "helper.py": data, "changed.py": b""}
    graph = importgraph.build(sources, [""], ["tests/test_t.py"])
    reached = graph.reach("tests/test_t.py", frozenset({"changed"}))
    if "helper.py" in graph.unparsable:
        # Nothing is known of what it imports: it may import the changed module.
        assert reached == {"changed": ("tests/test_t.py", "helper.py")}
    else:
        assert graph.imports["helper.py"] is not None


@pytest.mark.parametrize(
    "source",
    [
        b"(" * DEEP + b")" * DEEP,  # SyntaxError: too many nested parentheses
        b"[" * 10**6,
        b"-" * DEEP + b"1",  # MemoryError: the parser's stack
        b"+".join([b"1"] * DEEP),  # RecursionError: during ast construction
        b"import changed\x00\n",  # NUL byte
        b"import changed\n" + b"#" * (MAX_PYTHON_BYTES + 1),  # too large to parse
        b"def broken(:\n",
    ],
    ids=["parens", "lists", "minus", "additions", "nul", "huge", "syntax"],
)
def test_a_test_file_that_cannot_be_parsed_selects_on_every_change(source: bytes) -> None:
    sources = {"tests/test_t.py": source, "changed.py": b"", "other.py": b""}
    graph = importgraph.build(sources, [""], ["tests/test_t.py"])
    assert graph.unparsable == ("tests/test_t.py",)
    assert set(graph.reach("tests/test_t.py", frozenset({"changed"}))) == {"changed"}
    assert graph.files_reached("tests/test_t.py") == set(sources)


def test_an_unparsable_source_still_names_its_data_files() -> None:
    source = b'open("tests/data/rates.json")\n' + b"(" * DEEP
    names = named_basenames(source)
    assert "rates.json" in names
    assert named_basenames(b'x = f"{root}/fees.csv"\n' + b"-" * DEEP + b"1") >= {"fees.csv"}


@FUZZ
@given(hostile_text(PYTHON_NESTING))
@example("if a:\n    pass\n" + "elif a:\n    def prop_x(): pass\n" * 2_500)
def test_property_discovery_never_raises_but_syntax_error(text: str) -> None:
    try:
        names = property_names(text, "checks/p.py")
    except SyntaxError:
        return
    assert all(name.startswith("prop_") for name in names)


def test_a_long_elif_chain_of_properties_is_walked_without_recursion() -> None:
    # Two thousand five hundred elifs parse (each If nests in the one before) and used to
    # overflow the recursive walk of top-level blocks.
    source = "if a:\n    def prop_0(): pass\n" + "".join(
        f"elif a:\n    def prop_{i}(): pass\n" for i in range(1, 2_500)
    )
    names = property_names(source, "checks/p.py")
    assert names[:3] == ("prop_0", "prop_1", "prop_2") and len(names) == 2_500


@pytest.mark.parametrize(
    "data",
    [
        b"def prop_x(seed, n=200):\n    return " + b"(" * DEEP + b")" * DEEP,
        b"def prop_x(seed, n=200):\n    return " + b"-" * DEEP + b"1",
        b"def prop_x(seed, n=200):\n    return " + b"+".join([b"1"] * DEEP),
        b"def prop_x(seed, n=200):\n    pass\x00\n",
        b"def prop_x(seed, n=200):\n    pass\n\xff",
        b"def prop_x(seed, n=200):\n    pass\n" + b"#" * (MAX_PYTHON_BYTES + 1),
    ],
    ids=["parens", "minus", "additions", "nul", "utf8", "huge"],
)
def test_an_unparsable_property_module_is_a_failure_not_a_crash(
    tmp_path: Path, data: bytes
) -> None:
    file = tmp_path / "p.py"
    file.write_bytes(data)
    version = read_version("checks.p", "head", file, "checks/p.py")
    assert version.names == () and version.error is not None
    assert version.error.startswith("checks/p.py") and "\n" not in version.error


# --- the oracle audit and its mutants (run in the property child) ------------------------------

DEEP_CODE = (
    "def total(x):\n    return " + "+".join(["x"] * 2_500) + "\n\n"
    "def pick(x):\n    if x:\n        return 1\n" + "    elif x:\n        return 1\n" * 1_500 + "\n"
)
DEEP_PROPS = """\
import deep_code


def prop_total():
    assert deep_code.total(1) + 1 * 2 > 0


def prop_pick():
    assert deep_code.pick(1) == 1
"""


@pytest.fixture
def deep_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Code under test that parses but is too deep to walk recursively, and properties."""
    (tmp_path / "deep_code.py").write_text(DEEP_CODE)
    (tmp_path / "deep_props.py").write_text(DEEP_PROPS)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("deep_code", "deep_props"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import deep_code  # type: ignore[import-not-found]
    import deep_props  # type: ignore[import-not-found]

    return deep_code, deep_props


def test_code_too_deep_to_walk_is_unmutatable_and_the_audit_says_so(deep_modules: Any) -> None:
    code, props = deep_modules
    for func in (code.total, code.pick):
        assert load_source(func).name.endswith(func.__name__)
        with pytest.raises(Unmutatable, match="nested too deeply"):
            MutableFunction(func)
    for prop, func in ((props.prop_total, code.total), (props.prop_pick, code.pick)):

        def run(prop: Callable[[], None] = prop) -> None:
            prop()

        run.__wrapped__ = prop  # type: ignore[attr-defined]
        result = oracle.audit_property(run, [func], mutants_limit=3, per_mutant_timeout_s=1.0)
        assert result.mutants == 0
        assert any("nested too deeply to analyse" in note for note in result.notes)
        assert any("not mutated" in note for note in result.notes)


# --- pytest configuration ------------------------------------------------------------------------


@FUZZ
@given(hostile_bytes(TOML_NESTING))
@example(b"a = " + b"[" * DEEP)
@example(b"[tool.pytest.ini_options]\nm = " + b"[" * DEEP + b"]" * DEEP)
@example(b"a = " + b"{b = " * DEEP + b"1" + b"}" * DEEP)
@example(b"[tool.x]\na = " + HUGE_INT.encode())
@example(b"a" + b".b" * 40_000 + b" = 1\n")  # tomllib: quadratic in the parts, 35 s
def test_pytest_config_detection_never_raises(data: bytes) -> None:
    for name in ("pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", "other.txt"):
        assert configures_pytest(name, data) in (True, False)


@pytest.mark.parametrize(
    "data",
    [
        b"a = " + b"[" * DEEP,
        b"[tool.pytest.ini_options]\nmarkers = " + b"[" * DEEP + b"]" * DEEP,
        b"[tool.x]\na = " + HUGE_INT.encode(),
        b"a" + b".b" * 40_000 + b" = 1\n",
        b"[project]\nname = 'x'\n" + b"#" * MAX_TOML_BYTES,
        b"[project]\nname = '\xff'\n",
        b"[project\n",
    ],
    ids=["deep", "deep-pytest", "huge-int", "dotted", "huge", "utf8", "syntax"],
)
def test_an_unreadable_pyproject_counts_as_pytest_configuration(data: bytes) -> None:
    with pytest.raises(Unreadable):
        load_toml(data)
    assert configures_pytest("pyproject.toml", data) is True


def test_a_readable_pyproject_is_judged_by_its_content() -> None:
    assert configures_pytest("pyproject.toml", b"[tool.ruff]\nline-length = 100\n") is False
    assert configures_pytest("pyproject.toml", b"[tool.pytest.ini_options]\naddopts = 'x'\n")


# --- the secret scan ------------------------------------------------------------------------------

_SECRET_ATOMS = [
    "\n", "\r", "\r\n", "\x0b", "\x85", "\u2028", "\x1c", "\x1f", " ", "\t", "'", '"', "=",
    ":", "token", "API_KEY", "AKIA", "ABCDEFGHIJKLMNOP", "ghp_", "a1B2" * 9, "xoxb-",
    "1234567890-", "-----BEGIN ", "RSA ", "PRIVATE KEY-----", "x", "Z", "s3cr3t-v4lue-x9",
]  # fmt: skip


def _per_line(path: str, text: str) -> list[secrets.Finding]:
    """The scanner's definition: each rule searched in each line."""
    return [
        secrets.Finding(path, number, rule)
        for number, line in enumerate(text.splitlines(), start=1)
        for rule, pattern in secrets.RULES
        if pattern.search(line)
    ]


@FUZZ
@given(st.lists(st.sampled_from(_SECRET_ATOMS), max_size=40).map("".join))
def test_the_whole_text_scan_finds_what_a_line_by_line_scan_finds(text: str) -> None:
    assert secrets.scan_text("f", text) == _per_line("f", text)


@FUZZ
@given(st.binary(max_size=2_000))
def test_the_secret_scan_never_raises_on_odd_bytes(tmp_path_factory: Any, data: bytes) -> None:
    root = tmp_path_factory.mktemp("scan")
    (root / "blob").write_bytes(data)
    assert all(f.path == "blob" for f in secrets.scan_file(root, "blob"))


# --- the replay's collection child -----------------------------------------------------------------


def test_a_forged_collection_record_nested_deeply_is_a_collection_error() -> None:
    # The child runs the patch's code, which can forge records; str() of a list nested
    # deeper than the recursion limit raises RecursionError.
    deep: list[Any] = []
    for _ in range(sys.getrecursionlimit() + 100):
        deep = [deep]
    for error in ({"nodeid": "", "message": deep}, deep):
        final = {"exit": 2, "errors": [error], "violations": []}
        run = ChildRun((final,), 1, (), 0, False, 0.1, b"", b"")
        with pytest.raises(CollectionError):
            _judge(run, 10.0)
    final = {"exit": 0, "errors": [], "violations": [deep]}
    with pytest.raises(CollectionError, match="network"):
        _judge(ChildRun((final,), 1, (), 0, False, 0.1, b"", b""), 10.0)


# --- 50 MB ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_fifty_megabytes_are_refused_or_read_without_a_crash(tmp_path: Path) -> None:
    big = b"[" * (50 * MB)
    with pytest.raises(NotCanonical):
        canonical_digest(big)
    assert lenient_reason(big) is None
    with pytest.raises(LockError):
        parse_lock_bytes(big, LOCK)
    with pytest.raises(SyntaxError, match="not parsed"):
        parse_python(big, "big.py")
    assert configures_pytest("pyproject.toml", big) is True
    graph = importgraph.build({"t.py": big, "m.py": b""}, [""])
    assert graph.unparsable == ("t.py",)
    (tmp_path / "big.txt").write_bytes(b"\n" * (50 * MB))
    assert secrets.scan_file(tmp_path, "big.txt") == []


# --- end to end: the real CLI on a real repository -----------------------------------------------

CANONICAL_MAP = SEED_MAP.replace(
    '    lock: "tests/fixtures/billing/LOCK.json"\n',
    '    lock: "tests/fixtures/billing/LOCK.json"\n    canonical_json: true\n',
)


def _gate(repo: GitRepo, out: Path, *extra: str) -> tuple[int, str]:
    """Run ``patchlane gate`` in a subprocess (a crash of a C parser would kill a test
    process); return the exit code and stderr, after checking neither says "internal"."""
    proc = run_patchlane(
        "--repo", repo.path, "-q", "gate", "--base", "main", "--seed", "20260924",
        "--cases", "20", "--out-dir", out, *extra,
    )  # fmt: skip
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode != 4, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return proc.returncode, stderr


def _load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


@pytest.mark.slow
def test_gate_deeply_nested_python_in_the_code_under_test(repo: GitRepo, tmp_path: Path) -> None:
    make_billing_repo(repo)
    # The base's own suite must pass: quota lives under src/, which pytest is told of.
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("tests/test_quota.py", "import quota\n\ndef test_limit():\n    assert quota.LIMIT\n")
    repo.commit("a test that imports quota")
    repo.branch("agent")
    repo.write("src/billing/parens.py", "x = " + "(" * DEEP + ")" * DEEP + "\n")
    repo.write("src/billing/minus.py", "x = " + "-" * DEEP + "1\n")
    repo.write("src/quota/sums.py", "x = " + "+".join(["1"] * DEEP) + "\n")
    repo.write("src/quota/nul.py", b"x = 1\x00\n")
    repo.commit("hostile modules")
    out = tmp_path / "ev"
    code, _ = _gate(repo, out, "--replay", "local")
    assert code in (1, 3)
    assert _load(out, "verdict.json")["verdict"] in ("reject", "undecided")


@pytest.mark.slow
def test_gate_deeply_nested_property_module_is_a_property_failure(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("checks/billing_props.py", "x = " + "-" * DEEP + "1\n")
    repo.commit("hostile property module")
    out = tmp_path / "ev"
    code, _ = _gate(repo, out)
    assert code == 1
    assert _load(out, "verdict.json")["verdict"] == "reject"
    report = _load(out, "property-report.json")
    assert report["status"] in ("fail", "error")  # rule 1: failed or errored
    assert "checks/billing_props.py" in report["failures"][0]["message"]


def test_gate_deeply_nested_pyproject_with_pytest_markers_is_a_harness_change(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write(
        "pyproject.toml",
        "[tool.pytest.ini_options]\nmarkers = " + "[" * DEEP + '"slow"' + "]" * DEEP + "\n",
    )
    repo.commit("hostile pytest configuration")
    out = tmp_path / "ev"
    code, _ = _gate(repo, out)
    assert code == 3
    classify = _load(out, "classify.json")
    assert {"path": "pyproject.toml", "kind": "test harness"}.items() <= next(
        d for d in classify["control_plane_details"] if d["path"] == "pyproject.toml"
    ).items()


@pytest.mark.slow
def test_gate_hostile_canonical_json_fixtures_are_fixture_findings(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo, CANONICAL_MAP)
    entries = [
        {"path": path, "sha256": canonical_digest(content.encode())}
        for path, content in sorted(FIXTURES.items())
    ]
    repo.write(LOCK, json.dumps({"files": entries, "reason": "canonical"}, indent=2) + "\n")
    repo.commit("canonical lock")
    repo.branch("agent")
    deep = "tests/fixtures/billing/invoice_min.json"
    surrogate = "tests/fixtures/billing/key.json"
    repo.write(deep, "[" * DEEP + "]" * DEEP)
    repo.write(surrogate, '{"\\udc00": 1}\n')
    repo.commit("hostile fixtures")
    out = tmp_path / "ev"
    code, _ = _gate(repo, out)
    assert code == 1
    fixture = json.dumps(_load(out, "fixture-report.json"))
    assert _load(out, "fixture-report.json")["status"] == "fail"
    assert deep in fixture and surrogate in fixture
    assert _load(out, "verdict.json")["reasons"][0]["rule"] == 2


@pytest.mark.parametrize(
    "lock",
    ["[" * DEEP, '{"files": [], "reason": ' + HUGE_INT + "}", "\udcff"],
    ids=["deep", "huge-int", "not-utf8"],
)
def test_gate_hostile_lock_is_fixture_red(repo: GitRepo, tmp_path: Path, lock: str) -> None:
    make_billing_repo(repo, review_map=FIXTURE_MAP)  # a fixture rule: no property child
    repo.branch("agent")
    repo.write(LOCK, lock.encode("utf-8", "surrogateescape"))
    repo.commit("hostile lock")
    out = tmp_path / "ev"
    code, _ = _gate(repo, out)
    assert code == 1
    assert _load(out, "fixture-report.json")["status"] == "fail"
    assert LOCK in json.dumps(_load(out, "fixture-report.json"))


@pytest.mark.parametrize(
    "review_map",
    [
        "[" * DEEP,
        "".join(" " * i + "- \n" for i in range(3_000)),
        YAML_BOMB,
        "version: " + HUGE_INT + "\n",
        SEED_MAP.replace('module: "checks.billing_props"', "seed: .nan\n    module: m"),
        SEED_MAP.replace("max_age_days: 14", "max_age_days: 99999999999"),
        SEED_MAP.replace("version: 1", "version: 1\x00"),
        SEED_MAP + "\udcff\n",
    ],
    ids=["deep-flow", "deep-block", "alias-bomb", "huge-int", "nan", "overflow", "nul", "utf8"],
)
def test_gate_hostile_review_map_at_head_is_bad_input(
    repo: GitRepo, tmp_path: Path, review_map: str
) -> None:
    # The base has no map yet, so the head's decides (DESIGN.md §2): its content is the
    # patch's, and a malformed one is exit 2 with one line naming it.
    make_billing_repo(repo)
    repo.remove("review-map.yml")
    repo.commit("no map yet")
    repo.branch("agent")
    repo.write("review-map.yml", review_map.encode("utf-8", "surrogateescape"))
    repo.commit("hostile map")
    code, stderr = _gate(repo, tmp_path / "ev")
    assert code == 2
    lines = [line for line in stderr.splitlines() if line]
    assert len(lines) == 1 and "review-map.yml" in lines[0], lines
