"""The freeze registry's strict parser, and which registry decides (base, never head)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import jsonschema
import pytest

from patchlane.errors import InputError
from patchlane.inputs.yamlio import load_yaml
from patchlane.lanes.freeze import (
    FailureLogRef,
    FreezeRecord,
    RegistryError,
    load_base_registry,
    parse_registry,
)
from patchlane.project.config import parse_review_map
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo, add_symlink
from tests.lanes.freeze import project as P

SEED = Path(__file__).resolve().parents[4] / "shared" / "seed-examples" / "flaky-freeze.yml"
EXAMPLE = Path(__file__).resolve().parents[3] / "src/patchlane/demo/example/tests/flaky-freeze.yml"
REVIEW_MAP = parse_review_map(P.MAP, "review-map.yml")
LABEL = "tests/flaky-freeze.yml"


def parse(text: str) -> tuple[FreezeRecord, ...]:
    return parse_registry(text, LABEL, REVIEW_MAP)


def refused(text: str) -> RegistryError:
    with pytest.raises(RegistryError) as info:
        parse(text)
    return info.value


SEED_RECORD = FreezeRecord(
    id="billing-clock-skew",
    nodeid=P.NODE,
    owner="qa-rotation",
    reason="wall-clock assertion races the sandbox clock",
    expires=date(2026, 10, 8),
    required_properties=(P.PROP,),
    fixture_lock=P.LOCK,
    failure_log=None,
)


# --- the seed's file, as printed -------------------------------------------------------------


@pytest.mark.parametrize("path", [SEED, EXAMPLE], ids=["seed", "bundled-example"])
def test_the_seeds_registry_loads_as_printed(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is laid beside the checkout in CI)")
    (record,) = parse(path.read_text(encoding="utf-8"))
    assert record == SEED_RECORD
    assert record.line == 3 and record.test_file == P.TEST_FILE


@pytest.mark.parametrize("written", ["2026-10-08", '"2026-10-08"', "'2026-10-08'"])
def test_dates_may_be_quoted_or_not(written: str) -> None:
    (record,) = parse(P.registry(P.record(expires=written)))
    assert record.expires == date(2026, 10, 8)


def test_failure_log_is_parsed_and_its_hash_lowercased() -> None:
    text = P.registry(P.record(log="run-1")).replace(
        P.log_hash("run-1"), P.log_hash("run-1").upper()
    )
    (record,) = parse(text)
    assert record.failure_log == FailureLogRef("ci/run/run-1", P.log_hash("run-1"))
    jsonschema.validate(
        load_yaml(P.registry(P.record(log="x")), "f"), load_schema("freeze-registry")
    )


def test_a_missing_or_empty_expiry_loads_and_is_left_to_rule_1() -> None:
    (absent,) = parse(P.registry(P.record(expires=None)))
    (empty,) = parse(P.registry(P.record(expires="")))
    assert absent.expires is None and empty.expires is None


def test_an_empty_registry_and_an_optional_lock() -> None:
    assert parse("freezes: []\n") == ()
    (record,) = parse(P.registry(P.record(lock=None, props=())))
    assert record.fixture_lock is None and record.required_properties == ()


def test_moving_a_record_is_not_a_change() -> None:
    one = parse(P.registry(P.record()))[0]
    two = parse("# a comment\n\n" + P.registry(P.record()))[0]
    assert one == two and one.line != two.line


# --- strictness: exit 2 with file and line ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (P.registry(P.record()).replace("    owner:", "    owner: x\n    owner:"), 5, "duplicate key 'owner'"),
        (P.registry(P.record()) + "    ticket: BUG-1\n", 10, "freezes[0].ticket: unknown key"),
        (P.registry(P.record()).replace('    owner: "qa-rotation"\n', ""), 2, "freezes[0].owner: missing"),
        (P.registry(P.record(expires='"2026-02-30"')), 6, "freezes[0].expires: expected a date"),
        (P.registry(P.record(expires="2026-02-30")), 6, "bad value"),
        (P.registry(P.record(expires="next week")), 6, "expected a date YYYY-MM-DD, got a string ('next week')"),
        (P.registry(P.record(expires='"20261008"')), 6, "expected a date"),
        (P.registry(P.record(expires="2026-10-08 12:00:00")), 6, "got a timestamp"),
        (P.registry(P.record(expires="20261008")), 6, "got a number"),
        (P.registry(P.record(), P.record()), 10, "freezes[1].id: 'billing-clock-skew' is already used on line 2"),
        (P.registry(P.record(), P.record("other")), 11, "freezes[1].nodeid: 'tests/test_billing.py::test_invoice_timestamp_order' is already used on line 3"),
        (P.registry(P.record()).replace(f"      - {P.PROP}", f"      - {P.PROP}\n      - {P.PROP}"), 9, "listed twice"),
        (P.registry(P.record()).replace(f"    required_properties:\n      - {P.PROP}", f"    required_properties: {P.PROP}"), 7, "expected a list of names"),
        (P.registry(P.record()).replace("    required_properties:\n", "").replace(f"      - {P.PROP}\n", ""), 2, "required_properties: missing"),
        (P.registry(P.record()).replace(f"      - {P.PROP}", "      - 12"), 8, "expected a property name, got a number"),
        (P.registry(P.record(lock="../LOCK.json")), 9, "'..' in '../LOCK.json'"),
        (P.registry(P.record()).replace('owner: "qa-rotation"', "owner: 7"), 4, "expected a non-empty string, got a number"),
        (P.registry(P.record()).replace('reason: "wall', 'reason: "two\\nlines, wall'), 5, "must be one line"),
        (P.registry(P.record("has space")), 2, "use letters, digits"),
        (P.registry(P.record(log="x")).replace("sha256: ", "sha256: zz"), 12, "expected 64 hex digits"),
        (P.registry(P.record(log="x")) + "      url: x\n", 13, "failure_log.url: unknown key"),
        (P.registry(P.record(log="x")).replace(f"sha256: {P.log_hash('x')}", f'sha256: "{P.log_hash("x")}\\n"'), 12, "expected 64 hex digits"),
        (P.registry(P.record('"billing-clock-skew\\n"')), 2, "has leading or trailing white space"),
        (P.registry(P.record()).replace(f"      - {P.PROP}", f'      - "{P.PROP}\\n"'), 8, "expected a property name"),
        ("freezes:\n  - just a string\n", 2, "freezes[0]: expected a mapping"),
        ("freezes: {}\n", 1, "expected a list of records"),
        ("version: 1\nfreezes: []\n", 1, "version: unknown key"),
        ("# nothing\n", 1, "expected a mapping with 'freezes'"),
        ("freezes: [\n", 2, "YAML syntax error"),
    ],
    ids=[
        "duplicate-key", "unknown-key", "missing-field", "bad-date-quoted", "bad-date-unquoted",
        "next-week", "compact-date", "timestamp", "number", "duplicate-id", "duplicate-nodeid",
        "duplicate-property", "properties-not-a-list", "properties-missing", "property-not-a-name",
        "lock-escapes", "owner-not-a-string", "reason-two-lines", "id-with-space", "bad-log-hash",
        "log-unknown-key", "log-hash-with-newline", "id-with-newline", "property-with-newline",
        "record-not-a-mapping", "freezes-not-a-list", "unknown-top-key",
        "empty-document", "yaml-syntax",
    ],
)  # fmt: skip
def test_malformed_registries_are_refused_with_file_and_line(
    text: str, line: int, message: str
) -> None:
    error = refused(text)
    assert isinstance(error, InputError)  # exit 2 at the CLI boundary
    assert error.file == LABEL
    assert error.line == line, str(error)
    assert message in error.message
    assert str(error).startswith(f"{LABEL}:{line}: ")


@pytest.mark.parametrize(
    ("nodeid", "message"),
    [
        ("checks/billing_props.py::prop_refund_never_exceeds_charge", "is not under the map's test paths"),
        ("tests/test_billing.py::prop_refund_never_exceeds_charge", "is a property"),
        ("tests/test_billing.py::TestX::prop_y[1]", "is a property"),
        ("tests/test_billing.py", "not a test node id"),
        ("tests/test_billing.py::", "not a test node id"),
        ("tests/test_billing.py::::test_x", "an empty name"),
        ("tests/", "not a test node id"),
        ("tests/data.txt::test_x", "is not a test file"),
        ("tests/conftest.py::test_x", "is not a test file"),
        ("src/billing/test_x.py::test_x", "is not under the map's test paths"),
        ("../tests/test_billing.py::test_x", "'..' in"),
        ("/tests/test_billing.py::test_x", "absolute path"),
        ("tests/test_billing.py::test_x\\u001b[2J", "control character"),
        ("tests/test_billing.py::test_x ", "trailing white space"),
        ("tests/test_billing.py::test_x\\nFAILED", "must be one line"),
    ],
)  # fmt: skip
def test_a_record_that_names_no_test_is_refused(nodeid: str, message: str) -> None:
    error = refused(P.registry(P.record(nodeid=nodeid)))
    assert error.line == 3 and "freezes[0].nodeid" in error.message
    assert message in error.message


def test_a_test_file_inside_a_property_module_package_is_refused() -> None:
    review_map = parse_review_map(
        P.MAP.replace(f'module: "{P.MODULE}"', 'module: "tests.props.billing"'), "review-map.yml"
    )
    text = P.registry(P.record(nodeid="tests/props/test_x.py::test_x"))
    with pytest.raises(RegistryError, match="is a property module"):
        parse_registry(text, LABEL, review_map)


def test_the_maps_replay_tests_decide_where_tests_live() -> None:
    text = P.registry(P.record(nodeid="qa/test_x.py::test_x"))
    with pytest.raises(RegistryError, match="not under the map's test paths"):
        parse(text)
    qa_map = parse_review_map(P.MAP + '  replay:\n    tests: ["qa/"]\n', "review-map.yml")
    assert parse_registry(text, LABEL, qa_map)[0].nodeid == "qa/test_x.py::test_x"


def test_non_utf8_is_refused_with_its_line(repo: GitRepo) -> None:
    P.make(repo, None)
    repo.write(P.REGISTRY, b"freezes: []\n# caf\xe9\n")
    repo.commit("latin-1")
    with pytest.raises(RegistryError, match="not UTF-8") as info:
        load_base_registry(repo.path, REVIEW_MAP, "main", "main")
    assert info.value.line == 2


# --- which registry decides ------------------------------------------------------------------


def test_the_base_registry_decides_and_errors_name_the_base(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record(expires='"2026-02-30"')))
    with pytest.raises(RegistryError) as info:
        load_base_registry(repo.path, REVIEW_MAP, "main", "HEAD")
    assert info.value.line == 6
    assert "(the registry in base " in str(info.value)


def test_a_symlinked_base_registry_is_refused(repo: GitRepo) -> None:
    P.make(repo, None)
    repo.write("elsewhere.yml", P.registry(P.record()))
    add_symlink(repo, P.REGISTRY, "../elsewhere.yml")
    repo.commit("registry is a link")
    with pytest.raises(RegistryError, match="not a regular file"):
        load_base_registry(repo.path, REVIEW_MAP, "main", "HEAD")


def test_no_freeze_lane_means_no_registry(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    no_lane = parse_review_map("lanes:\n  replay:\n    tests: ['tests/']\n", "m")
    registry = load_base_registry(repo.path, no_lane, "main", "HEAD")
    assert (registry.path, registry.source, registry.records) == (None, "none", ())


def test_the_patchs_own_changes_are_listed_against_the_base(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record(), P.record("gone", nodeid="tests/test_quota.py::test_limit")))
    pushed = P.record(expires='"2026-10-20"')
    added = P.record("new-one", nodeid=f"{P.TEST_FILE}::test_other")
    P.patch(repo, {P.REGISTRY: P.registry(pushed, added)})
    registry = load_base_registry(repo.path, REVIEW_MAP, "main", "HEAD")
    assert registry.source == "base"
    assert [r.expires for r in registry.records] == [date(2026, 10, 8), date(2026, 10, 8)]
    assert registry.added_by_patch == ("new-one",)
    assert registry.changed_by_patch == ("billing-clock-skew",)
    assert registry.removed_by_patch == ("gone",)
    assert registry.head_problem is None


def test_a_record_the_base_changed_after_the_patch_began_is_not_blamed_on_it(
    repo: GitRepo,
) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(
        repo, {P.REGISTRY: P.registry(P.record(), P.record("mine", nodeid=f"{P.TEST_FILE}::t"))}
    )
    repo.checkout("main")
    repo.write(P.REGISTRY, P.registry(P.record(lock=None)))  # the base moves on
    repo.commit("main drops the lock from the freeze")
    registry = load_base_registry(repo.path, REVIEW_MAP, "main", "patch")
    assert registry.added_by_patch == ("mine",)
    assert registry.changed_by_patch == ()
    assert registry.records[0].fixture_lock is None


def test_a_malformed_head_registry_is_reported_not_raised(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, {P.REGISTRY: "freezes: [\n"})
    registry = load_base_registry(repo.path, REVIEW_MAP, "main", "HEAD")
    assert registry.records == (SEED_RECORD,)
    assert registry.head_problem is not None
    assert registry.head_problem.startswith(f"{P.REGISTRY}:2: YAML syntax error")
    assert "(the registry in head " in registry.head_problem
    assert registry.removed_by_patch == ()


def test_an_untouched_registry_is_not_read_at_head(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    P.patch(repo, P.touch_test())
    registry = load_base_registry(repo.path, REVIEW_MAP, "main", "HEAD")
    assert registry.head_records == () and registry.added_by_patch == ()


def test_a_symlinked_or_deleted_registry_in_the_patch(repo: GitRepo) -> None:
    P.make(repo, P.registry(P.record()))
    repo.branch("patch")
    repo.write("elsewhere.yml", P.registry())
    add_symlink(repo, P.REGISTRY, "../elsewhere.yml")
    repo.commit("registry is a link in the patch")
    linked = load_base_registry(repo.path, REVIEW_MAP, "main", "HEAD")
    assert linked.head_problem is not None and "not a regular file" in linked.head_problem
    repo.remove(P.REGISTRY)
    repo.commit("registry deleted")
    deleted = load_base_registry(repo.path, REVIEW_MAP, "main", "HEAD")
    assert deleted.head_problem is None
    assert deleted.removed_by_patch == ("billing-clock-skew",)
    assert deleted.records == (SEED_RECORD,)  # the base's still decides
