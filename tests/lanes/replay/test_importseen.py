"""``importseen.judge``: a changed module's import-time finding keeps selecting every test
unless exactly one trusted look at its import at the head saw no change, and each widening
says which rule applied. ``ImportSeen.of`` reads a child's record; a malformed one is never
trusted."""

from __future__ import annotations

from patchlane.lanes.replay.collect import ImportSeen
from patchlane.lanes.replay.importseen import NEW_MODULE, Finding, judge

FINDING = Finding(
    "src/pkg/calc.py", "line 3: an expression (a call) that runs at import", ("pkg.calc",)
)


def seen(status: str = "ok", *changes: str, name: str = "pkg.calc") -> ImportSeen:
    return ImportSeen(name, status, changes)


def test_one_clean_look_lifts_the_widening() -> None:
    judged = judge(FINDING, {"pkg.calc": (seen(),)})
    assert not judged.widen
    assert "changed nothing outside it" in judged.why


def test_every_other_case_widens_and_says_why() -> None:
    cases = {
        "no look at its import": {},
        "imported 2 times": {"pkg.calc": (seen(), seen())},
        "not watched: imported before the watch started": {
            "pkg.calc": (seen("imported before the watch started"),)
        },
        "changed pkg.other.LIMIT": {"pkg.calc": (seen("ok", "pkg.other.LIMIT"),)},
        "no look at its import at the head": {"pkg.other": (seen(name="pkg.other"),)},
    }
    for expected, imports in cases.items():
        judged = judge(FINDING, imports)
        assert judged.widen, expected
        assert expected in judged.why, judged.why
        assert judged.why.startswith("import-time code that may reach outside it, line 3")


def test_a_look_under_a_second_name_counts_as_a_second_import() -> None:
    finding = Finding(FINDING.path, FINDING.where, ("pkg.calc", "calc"))
    judged = judge(finding, {"pkg.calc": (seen(),), "calc": (seen(name="calc"),)})
    assert judged.widen and "imported 2 times" in judged.why


def test_a_fixed_finding_widens_whatever_the_look() -> None:
    finding = Finding(FINDING.path, FINDING.where, FINDING.names, NEW_MODULE)
    judged = judge(finding, {"pkg.calc": (seen(),)})
    assert judged.widen and NEW_MODULE in judged.why


def test_a_record_is_read_only_for_a_watched_name_and_never_trusted_malformed() -> None:
    good = {"import_state": "pkg.calc", "status": "ok", "changes": ["x"]}
    assert ImportSeen.of(good, ["pkg.calc"]) == seen("ok", "x")
    assert ImportSeen.of(good, ["pkg.other"]) is None
    assert ImportSeen.of({"candidates": []}, ["pkg.calc"]) is None
    bad = ImportSeen.of({"import_state": "pkg.calc", "status": 3}, ["pkg.calc"])
    assert bad is not None and bad.status != "ok"
