"""What a version of patchlane writes and says for many lane reports and malformed variants.

Run it under two versions and compare the outputs line for line: the writer's JSON of each
report (``WRITE``), then, for each variant of that JSON, what the reader says (``OK`` and the
report written back, or ``ERR`` and the message). A variant deletes one key, sets one key to
one of 16 wrong values, or adds an unknown key to one object::

    git worktree add /tmp/old REV
    PYTHONPATH=/tmp/old/src python3 bench/format_equivalence.py p > old.txt
    PYTHONPATH=src python3 bench/format_equivalence.py p > new.txt
    diff old.txt new.txt

``p`` is the property report, ``f`` the fixture report, ``r`` the replay report and ``v``
``verdict.json``.
"""

import copy
import json
import sys

from patchlane.errors import ReportError
from patchlane.formats import fixture_report as F
from patchlane.formats import property_report as P
from patchlane.formats import replay_report as R
from patchlane.formats.canary import Canary, CanarySetting
from patchlane.formats.envelope import parse_report_bytes
from patchlane.formats.status import Status

try:  # the verdict's file left gate/verdict for formats/verdict_file
    from patchlane.formats import verdict_file as V
except ImportError:
    from patchlane.gate import verdict as V


def prop_reports():
    fin = P.OracleFinding(module="m", property="p", kind="survives_mutants", detail="d")
    full = P.PropertyReport(
        status=Status.FAIL,
        reason="r",
        seed=7,
        cases=20,
        modules=("m",),
        failures=(
            P.Failure("p", "m", "head", 7, 3, {"x": [1, 2]}, "boom", "assertion"),
            P.Failure("(module)", "m", "base", 7, None, None, "x", ""),
        ),
        oracle_findings=(fin,),
        base="a" * 40,
        head=None,
        properties=(P.PropertyRun("m", "p", "head", "seed", "fail"),),
        mutation=(
            P.Mutation("m", "p", 4, 2, "t"),
            P.Mutation("m", "q", 0, 0),
            P.Mutation("m", "r", 3, 1),
        ),
        oracle_audit="ran",
        isolation=P.IsolationInfo("audit", 60.0),
        seconds=1.23456789,
        children=(
            P.ChildTiming("m", "head", "run", 0.5, cached=True),
            P.ChildTiming("m", "base", "import", 0.1234567),
        ),
        cache=P.CacheUse(1, 1, 1, 0),
        review_events=("look",),
        skipped_tests=(("t::a", "why"),),
    )
    yield full
    yield P.PropertyReport.not_applicable("nothing", 3, 10, ("a", "b"))
    yield P.PropertyReport(Status.PASS, "ok", 1, 2, (), isolation=P.IsolationInfo("bwrap+audit", 5))
    yield P.PropertyReport(
        Status.ERROR, "e", None, None, review_events=("x",), oracle_findings=(fin,)
    )


def fix_reports():
    yield F.FixtureReport(
        Status.FAIL,
        "r",
        source="commit",
        commit="c" * 40,
        roots=(F.RootResult(("fx/",), "fx/LOCK.json", True, 2, "b" * 64, True, "new", False),),
        missing=("a",),
        extra=("b",),
        changed=("c",),
        unsafe=(F.Unsafe("l", "link"),),
        case_collisions=(("A", "a"),),
        lock_errors=(F.LockProblem("L", "p"),),
        lock_updates=(F.LockUpdate("L", None),),
        timings=F.Timings(0.5, 2, 1),
        checkout_attributes=(F.CheckoutAttribute("p", "eol", "crlf", review=False),),
        review_events=("e",),
    )
    yield F.FixtureReport.not_applicable("none")
    yield F.FixtureReport(Status.PASS, "ok", source="worktree")


def replay_reports():
    canary = Canary(("t::c",), 4, CanarySetting(0.05, 1, "default"))
    yield R.ReplayReport(
        status=Status.FAIL,
        reason="r",
        outcome=R.ReplayOutcome.FAIL,
        slice_sha256="d" * 64,
        receipt_sha256="e" * 64,
        seed=7,
        head="c" * 40,
        hash_seed=12,
        failed=("t::a",),
        skipped_by_freeze=("t::f",),
        skipped_by_suite=("t::s",),
        passed=("t::b",),
        signature="absent",
        refusals=(),
        mode="local",
        slice_count=3,
        suite_size=9,
        private=(R.PrivateFile("p", "w"),),
        slice_rules={"z": 1, "a": 2},
        dependency_map="off",
        canary=canary,
        plugin_files=("conftest.py",),
        run_problems=(),
        failed_why={"t::a": "assert 1 == 2"},
        skipped_but_pass_at_base=(),
        fail_at_base_too=("t::x",),
        base_from_map=(),
        deleted_tests=("t::d",),
        edited_expectations=(R.EditedTest("t::e", "w"),),
        review_events=("look",),
        unreached=("src/x.py",),
    )
    # No receipt: the slice's digest after the mode, a slice without its size.
    yield R.ReplayReport(
        Status.ERROR, "no receipt", R.ReplayOutcome.EMPTY, "d" * 64, mode="m", slice_count=0
    )
    yield R.ReplayReport(Status.ERROR, "not run", R.ReplayOutcome.NOT_RUN, review_events=())


def verdicts():
    reasons = (
        V.Reason(4, "replay", V.REJECT, "failed"),
        V.Reason(6, "fixture", V.UNDECIDED, "look"),
    )
    canary = Canary((), 0, CanarySetting(0, 0, "PATCHLANE_CANARY=off"))
    isolation = V.IsolationFacts("netns", "a network namespace", required=True)
    yield V.Verdict(V.REJECT, reasons, isolation, canary, {"total": 1.5, "replay": 0})
    yield V.Verdict(V.ACCEPT, (V.Reason(7, "verdict", V.ACCEPT, "green"),))
    yield V.Verdict(V.UNDECIDED, ())


def variants(data):
    paths = []

    def walk(x, p):
        paths.append(p)
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, (*p, k))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, (*p, i))

    walk(data, ())
    odd = [
        None,
        1,
        -1,
        2.5,
        True,
        "s",
        "",
        [],
        {},
        ["s"],
        [1],
        {"k": 1},
        "pass",
        "head",
        "ran",
        "audit",
    ]
    for p in paths:
        if not p:
            continue
        for op in ("del", "set", "add"):
            for val in odd if op == "set" else [0]:
                d = copy.deepcopy(data)
                parent = d
                for k in p[:-1]:
                    parent = parent[k]
                if op == "del":
                    if isinstance(parent, dict):
                        del parent[p[-1]]
                    else:
                        parent.pop(p[-1])
                elif op == "set":
                    parent[p[-1]] = val
                else:
                    tgt = parent[p[-1]]
                    if not isinstance(tgt, dict):
                        continue
                    tgt["zz"] = 0
                yield (op, p, val), d


def main() -> int:
    which = sys.argv[1]
    gen, parse = {
        "p": (prop_reports, P._parse),
        "f": (fix_reports, F._parse),
        "r": (replay_reports, R._parse),
        "v": (verdicts, V._parse_verdict),
    }[which]
    for rep in gen():
        data = rep.to_json()
        print("WRITE", json.dumps(data))
        for what, d in variants(data):
            text = json.dumps(d, indent=2)
            try:
                got = parse_report_bytes(text.encode(), "r.json", parse)
                out = "OK " + json.dumps(got.to_json())
            except ReportError as e:
                out = "ERR " + str(e)
            print(repr(what), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
