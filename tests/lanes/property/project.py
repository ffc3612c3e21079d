"""Small property-lane projects in real git repositories, and a way to run the lane on them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from patchlane.formats.property_report import PropertyReport
from patchlane.infra.sandbox import Isolation
from patchlane.infra.ui import Output
from patchlane.inputs.jsonio import dumps_report
from patchlane.lanes.property.lane import PropertyRequest, run_property_lane
from patchlane.project.classify import load_map_file
from tests.gitrepo import GitRepo

SEED = 7
CASES = 50
MODULE = "checks.props"


def review_map(timeout_s: float = 30, modules: tuple[str, ...] = (MODULE,)) -> str:
    """Return a map with a property lane over ``src/shop/`` running ``modules``."""
    listed = ", ".join(json.dumps(m) for m in modules)
    return textwrap.dedent(
        f"""\
        lanes:
          property:
            paths: ["src/shop/"]
            modules: [{listed}]
            seed: {SEED}
            cases: {CASES}
            timeout_s: {timeout_s}
        """
    )


# The code under test: a refund that never exceeds the charge.
SHOP = """\
def refund(charge, amount):
    if amount > charge:
        return charge
    return charge - amount


def ratio(a, b):
    return a / b
"""

# A seed-style property in the seed's own shape.
SEED_PROP = """\
import random
from shop import refund


def prop_refund_bounded(seed, n=200):
    rng = random.Random(seed)
    for i in range(n):
        charge = rng.randint(0, 100)
        amount = rng.randint(0, 120)
        net = refund(charge, amount)
        assert 0 <= net <= charge, (seed, i, charge, amount)
"""


def dedent(text: str) -> str:
    """``textwrap.dedent`` for the sources tests write inline."""
    return textwrap.dedent(text)


def make(
    repo: GitRepo,
    props: str = SEED_PROP,
    shop: str = SHOP,
    *,
    timeout_s: float = 30,
    files: dict[str, str] | None = None,
    modules: tuple[str, ...] = (MODULE,),
) -> str:
    """Write and commit a project on ``main`` (then branch ``patch``); return the commit."""
    repo.write("review-map.yml", review_map(timeout_s, modules))
    repo.write("src/shop/__init__.py", dedent(shop))
    repo.write("checks/__init__.py", "")
    repo.write("checks/props.py", dedent(props))
    for rel, text in (files or {}).items():
        repo.write(rel, dedent(text))
    commit = repo.commit("base")
    repo.branch("patch")
    return commit


def patch(repo: GitRepo, files: dict[str, str | None]) -> str:
    """Commit a patch on the current branch: write each file (``None`` deletes it)."""
    for rel, text in files.items():
        if text is None:
            repo.remove(rel)
        else:
            repo.write(rel, dedent(text))
    return repo.commit("patch")


def lane(
    repo: GitRepo,
    *,
    base: str | None = "main",
    head: str | None = "HEAD",
    seed: int = SEED,
    cases: int = CASES,
    mutants: int = 0,
    only: str | None = None,
    case: int | None = None,
    isolation: Isolation | None = None,
    out: Output | None = None,
) -> PropertyReport:
    """Run the property lane with the work tree's map (the base's, in these tests)."""
    return run_property_lane(
        repo.path,
        load_map_file(repo.path / "review-map.yml"),
        PropertyRequest(seed=seed, cases=cases, mutants=mutants, only=only, case=case),
        base=base,
        head=head if base is not None or head is not None else None,
        isolation=isolation,
        out=out,
    )


def without_timings(report: PropertyReport) -> str:
    """Return the report's JSON text without its one run-dependent field."""
    data: dict[str, Any] = report.to_json()
    del data["timings"]
    return dumps_report(data)


def one_failure(report: PropertyReport, name: str, source: str = "head") -> dict[str, Any]:
    """Return the JSON of the only failure of ``name`` from ``source``."""
    found = [f.to_json() for f in report.failures if (f.property, f.source) == (name, source)]
    assert len(found) == 1, report.to_json()
    return found[0]


def outcomes(report: PropertyReport) -> dict[tuple[str, str], str]:
    """Return ``{(property, source): outcome}``."""
    return {(p.property, p.source): p.outcome for p in report.properties}


def write_dir(path: Path, files: dict[str, str]) -> None:
    """Write ``files`` (relative paths) below ``path``."""
    for rel, text in files.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dedent(text))
