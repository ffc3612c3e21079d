from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from patchlane.formats.envelope import report_schema
from patchlane.formats.fixture_report import FixtureReport
from patchlane.formats.schemas import GENERATED, schema_text
from patchlane.inputs.yamlio import load_yaml
from patchlane.schemas import NAMES, load_schema

SEED = Path(__file__).resolve().parents[2] / "shared" / "seed-examples"
REAL_HASH = "0" * 63 + "a"


def seed_file(name: str) -> str:
    path = SEED / name
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is laid beside the checkout in CI)")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_every_shipped_schema_is_a_valid_schema(name: str) -> None:
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith(f"/{name}.schema.json")


def test_unknown_schema_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        load_schema("nope")


def test_the_seeds_review_map_and_registry_are_valid_as_printed() -> None:
    jsonschema.validate(load_yaml(seed_file("review-map.yml"), "m"), load_schema("review-map"))
    jsonschema.validate(
        load_yaml(seed_file("flaky-freeze.yml"), "f"), load_schema("freeze-registry")
    )


@pytest.mark.parametrize(
    ("name", "schema", "placeholder"),
    [
        ("LOCK.json", "lock", "replace-with-64-hex-chars"),
        ("receipt.json", "receipt", "hash-of-replay-slice.txt"),
    ],
)
def test_the_seeds_placeholders_are_refused_and_a_real_hash_is_accepted(
    name: str, schema: str, placeholder: str
) -> None:
    text = seed_file(name)
    with pytest.raises(jsonschema.ValidationError, match=placeholder):
        jsonschema.validate(json.loads(text), load_schema(schema))
    jsonschema.validate(json.loads(text.replace(placeholder, REAL_HASH)), load_schema(schema))


def test_the_design_example_map_is_valid() -> None:
    text = """
version: 1
lanes:
  property:
    paths: ["src/billing/", "src/quota/"]
    module: "checks.billing_props"
    seed: 20260924
    cases: 200
    timeout_s: 60
    pythonpath: ["lib"]
  fixture:
    paths: ["tests/fixtures/billing/"]
    lock: "tests/fixtures/billing/LOCK.json"
    canonical_json: true
  freeze:
    registry: "tests/flaky-freeze.yml"
    max_age_days: 14
    max_extensions: 1
  replay:
    tests: ["tests/"]
    private: ["tests/fixtures/customer/"]
    require_signature: false
    build: "python setup.py build_ext --inplace"
    build_timeout_s: 600
    canary: {share: 0.1, min: 5}
ignore:
  - path: "docs/"
    reason: "prose only"
"""
    jsonschema.validate(load_yaml(text, "m"), load_schema("review-map"))


@pytest.mark.parametrize(
    "bad",
    [
        {"lanes": {}, "extra": 1},
        {"lanes": {"fixture": {"paths": ["../x/"], "lock": "x.json"}}},
        {"lanes": {"property": {"paths": [], "module": "a", "modules": ["b"]}}},
        {"lanes": {"replay": {"build": " "}}},
        {"lanes": {"replay": {"build_timeout_s": 0}}},
        {"lanes": {"replay": {"canary": {"share": 2}}}},
        {"lanes": {"replay": {"canary": 3}}},
    ],
)
def test_the_map_schema_refuses_what_the_loader_refuses(bad: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, load_schema("review-map"))


def test_the_schemas_name_exactly_the_states_the_enums_declare() -> None:
    # The states are declared once, as enums; the schemas must list the same words.
    from patchlane.formats.replay_report import ReplayOutcome
    from patchlane.formats.status import Status
    from patchlane.formats.verdict_file import Ruling

    replay = load_schema("replay-report")["properties"]
    assert replay["outcome"]["enum"] == [o.value for o in ReplayOutcome]
    verdict = load_schema("verdict")
    assert set(verdict["properties"]["verdict"]["enum"]) == {r.value for r in Ruling}
    effect = verdict["properties"]["reasons"]["items"]["properties"]["effect"]
    assert set(effect["enum"]) == {r.value for r in Ruling}
    for name in ("fixture-report", "freeze-report", "property-report", "replay-report"):
        assert set(load_schema(name)["properties"]["status"]["enum"]) <= {s.value for s in Status}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_a_generated_schema_is_committed_as_its_model_makes_it(name: str) -> None:
    """The committed schema of a format declared as a model is exactly the model's: run
    ``python -m patchlane.formats.schemas`` after changing one."""
    committed = resources.files("patchlane.schemas").joinpath(f"{name}.schema.json")
    assert committed.read_text("utf-8") == schema_text(name)


def test_a_field_added_to_a_model_breaks_the_comparison() -> None:
    """The comparison above can fail: a key the model gains and the committed file lacks."""

    @dataclass(frozen=True)
    class Grown(FixtureReport):
        added: int = 0

    grown = report_schema("fixture", Grown, "fixture-report.json", "patchlane fixture report")
    committed = load_schema("fixture-report")
    assert grown != committed
    assert set(grown["properties"]) - set(committed["properties"]) == {"added"}  # type: ignore[arg-type]
