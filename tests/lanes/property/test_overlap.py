"""Issue 9: a base property module is refused for sharing a package with the code under test
only where it really lives at base, not wherever its name could live (``src/checks/`` for a
``checks.props`` at the repository root under ``paths: ["src/"]``); the base tree holds only
those real places, and the oracle audit excludes only the head's real property packages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchlane.main import main
from tests.gitrepo import GitRepo, add_symlink
from tests.lanes.property import project as P

OVERLAP = "also holds code under test"
# A refund bound that the patch does not touch: a comment and a new helper.
HARMLESS_SHOP = P.SHOP + "\n\n# Rounds nothing yet.\ndef cents(x):\n    return int(x)\n"


def src_map(modules: tuple[str, ...] = (P.MODULE,), paths: str = '["src/"]') -> str:
    """Return a map whose property paths cover the whole of ``src/``."""
    listed = ", ".join(json.dumps(m) for m in modules)
    return P.dedent(
        f"""\
        lanes:
          property:
            paths: {paths}
            modules: [{listed}]
            seed: {P.SEED}
            cases: {P.CASES}
            timeout_s: 30
        """
    )


def make(repo: GitRepo, files: dict[str, str], modules: tuple[str, ...] = (P.MODULE,)) -> None:
    """Commit the shop project with a ``src/`` map and ``files`` on ``main``; branch ``patch``."""
    repo.write("review-map.yml", src_map(modules))
    repo.write("src/shop/__init__.py", P.SHOP)
    for rel, text in files.items():
        repo.write(rel, P.dedent(text))
    repo.commit("base")
    repo.branch("patch")


ROOT_CHECKS = {"checks/__init__.py": "", "checks/props.py": P.SEED_PROP}


@pytest.mark.slow
def test_a_root_property_package_is_not_refused_under_src_paths(repo: GitRepo) -> None:
    make(repo, ROOT_CHECKS)
    P.patch(repo, {"src/shop/__init__.py": HARMLESS_SHOP})
    report = P.lane(repo)
    assert report.status == "pass", report.to_json()
    assert report.failures == ()
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "pass",
        ("prop_refund_bounded", "head"): "pass",
    }


@pytest.mark.slow
def test_a_root_property_package_still_catches_a_broken_patch(repo: GitRepo) -> None:
    # Not refused any more, so the base oracle runs: against the head's (broken) code.
    make(repo, ROOT_CHECKS)
    P.patch(
        repo,
        {
            "src/shop/__init__.py": "def refund(charge, amount):\n    return charge - amount\n",
            "checks/props.py": "def prop_refund_bounded(seed, n=200):\n    pass\n",
        },
    )
    report = P.lane(repo)
    assert report.status == "fail"
    assert [(f.property, f.source, f.kind) for f in report.failures] == [
        ("prop_refund_bounded", "base", "assertion")
    ]


@pytest.mark.slow
def test_the_gate_does_not_reject_a_harmless_patch_for_a_root_property_package(
    repo: GitRepo, tmp_path: Path
) -> None:
    make(repo, ROOT_CHECKS)
    P.patch(repo, {"src/shop/__init__.py": HARMLESS_SHOP})
    out = tmp_path / "ev"
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", str(P.SEED)]
    code = main([*argv, "--cases", str(P.CASES), "--replay", "none", "--out-dir", str(out)])
    prop = json.loads((out / "property-report.json").read_text(encoding="utf-8"))
    verdict = json.loads((out / "verdict.json").read_text(encoding="utf-8"))
    assert prop["status"] == "pass", prop
    assert verdict["verdict"] != "reject", verdict
    assert code != 1
    assert not [r for r in verdict["reasons"] if r.get("lane") == "property"], verdict
    assert OVERLAP not in json.dumps(verdict)


@pytest.mark.slow
def test_a_property_module_inside_the_code_under_test_is_still_refused(repo: GitRepo) -> None:
    make(repo, {"src/shop/props.py": P.SEED_PROP.replace("from shop", "from . ")}, ("shop.props",))
    P.patch(repo, {"src/shop/__init__.py": HARMLESS_SHOP})
    report = P.lane(repo)
    assert report.status == "error"
    [failure] = [f for f in report.failures if f.source == "base"]
    assert failure.kind == "module"
    assert failure.message.startswith(f"its package (src/shop/) {OVERLAP}, so its base version")
    assert "keep properties in a package of their own" in failure.message
    assert P.outcomes(report) == {("prop_refund_bounded", "head"): "pass"}


@pytest.mark.slow
def test_a_namespace_package_with_a_portion_under_src_is_refused(repo: GitRepo) -> None:
    # checks/ at the root is a namespace package; so is src/checks/, code under test: both
    # are portions of the one package checks, and a submodule may come from either.
    make(
        repo,
        {
            "checks/props.py": P.SEED_PROP,
            "src/checks/rules.py": "LIMIT = 10\n",
        },
    )
    P.patch(repo, {"src/shop/__init__.py": HARMLESS_SHOP})
    report = P.lane(repo)
    assert report.status == "error"
    [failure] = [f for f in report.failures if f.source == "base"]
    assert failure.message.startswith(f"its package (src/checks/) {OVERLAP}")


def test_a_module_the_base_lacks_has_nothing_to_overlap(repo: GitRepo) -> None:
    # At base, checks resolves to src/checks/ (code under test) but holds no props: there
    # is no base version to refuse. The patch adds the property package at the root.
    make(repo, {"src/checks/__init__.py": "LIMIT = 10\n"})
    P.patch(repo, ROOT_CHECKS)
    report = P.lane(repo)
    assert report.status == "pass", report.to_json()
    assert P.outcomes(report) == {("prop_refund_bounded", "head"): "pass"}


def test_a_root_package_that_links_into_src_is_refused(repo: GitRepo) -> None:
    # checks -> src/checks: the name is at the root, the bytes are code under test.
    make(repo, {"src/checks/__init__.py": "", "src/checks/props.py": P.SEED_PROP})
    add_symlink(repo, "checks", "src/checks")
    repo.commit("link checks")
    repo.git("branch", "-f", "main", "HEAD")
    P.patch(repo, {"src/shop/__init__.py": HARMLESS_SHOP})
    report = P.lane(repo)
    assert report.status == "error"
    [failure] = [f for f in report.failures if f.source == "base"]
    assert failure.message.startswith(f"its package (src/checks/) {OVERLAP}")


def test_a_shadowed_name_under_src_is_not_put_on_the_base_path(repo: GitRepo) -> None:
    # The base's src/checks/ is code under test (imported as src.checks) that the root's
    # regular package checks/ shadows: not the property package, so not refused, and not
    # materialised either: the base oracle must import the head's src.checks. The patch
    # breaks it and guts the head's property; only the base's oracle can tell.
    prop = """\
    from src.checks.rules import limit


    def prop_limit(seed, n=20):
        assert limit() <= 10
    """
    make(
        repo,
        {
            "checks/__init__.py": "",
            "checks/props.py": prop,
            "src/checks/__init__.py": "",
            "src/checks/rules.py": "def limit():\n    return 10\n",
        },
    )
    P.patch(
        repo,
        {
            "src/checks/rules.py": "def limit():\n    return 11\n",
            "checks/props.py": "def prop_limit(seed, n=20):\n    pass\n",
        },
    )
    report = P.lane(repo)
    assert report.status == "fail", report.to_json()
    assert [(f.property, f.source, f.kind) for f in report.failures] == [
        ("prop_limit", "base", "assertion")
    ]


def test_the_audit_excludes_only_the_real_property_package(repo: GitRepo) -> None:
    # The code under test src/checksum.py starts like the name-built candidate src/checks:
    # as a bare prefix it would hide checksum from the audit (no function to mutate).
    hollow = """\
    from checksum import digest


    def prop_hollow(seed, n=50):
        for i in range(n):
            digest(seed + i)
    """
    make(
        repo,
        {
            "src/checksum.py": "def digest(x):\n    return (x * 31 + 7) % 101\n",
            "checks/__init__.py": "",
            "checks/props.py": hollow,
        },
    )
    P.patch(repo, {"src/shop/__init__.py": HARMLESS_SHOP})
    report = P.lane(repo, mutants=10)
    assert report.status == "pass", report.to_json()
    [mutation] = report.mutation
    assert mutation.property == "prop_hollow"
    assert mutation.mutants > 0 and mutation.killed == 0, mutation
    assert ("prop_hollow", "survives_mutants") in {
        (f.property, f.kind) for f in report.oracle_findings
    }
