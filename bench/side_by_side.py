"""Side by side (issue 31): patchlane, pytest-testmon and the plain suite on the same patches.

One command, per project (``honest_history.SPECS``: boltons, sqlparse, rich, tomli, attrs and
packaging, whose suite runs over 60 s here), on the same patches:

- ``commit``: the project's own newest ``--commits`` code commits (base = first parent), as
  ``honest_history.py`` picks them from its pinned tip;
- ``mutant``: ``--mutants`` red heads: bugs of ``trial.py``'s ``ast`` generator planted in
  the base of the newest commit (so they share its map and testmon's baseline); three
  candidates are planted per mutant wanted and the first ones the plain suite catches are
  gated (the others are noted and skipped), so "red heads accepted" counts something.

Per base (each commit's parent, and the mutants' shared one):

1. ``patchlane replay map --base B`` timed: the recording (its wall over the plain suite);
2. ``pytest --testmon`` at the base, from a clean export: testmon's recording (its baseline).

Per patch:

3. the truth: the full plain ``python -m pytest`` at the head, from a clean export (its wall
   is the suite's);
4. ``patchlane gate --replay local --dep-map auto`` with the map of (1) (warm): verdict, wall,
   slice (the replay report's ``slice_count`` less its ``canary``'s count);
5. ``pytest --testmon`` at the head: the baseline's tree and ``.testmondata`` copied, the
   patch's files copied over, as a user's working tree would be after the change; the tests it
   ran and its wall.

The report: a row per patch, then the issue's table per project and the "Done when" checks
(median gate / suite <= 0.7 on 3-15 s suites and <= 0.3 over 60 s, no gate over 1.2x, median
slice <= 3x testmon's tests run, recording <= 1.5x the suite, no red head accepted).
``--jobs N`` runs the projects in N lanes, each a child process of this script.

Exit 1 when a red head got ``accept_for_review``, 2 when the trial could not be set up, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import honest_history as hh  # noqa: E402  (bench/, next to this file)
import trial  # noqa: E402

PROJECTS = ("boltons", "sqlparse", "rich", "tomli", "attrs", "packaging")
# Commits and mutants per project when the command line does not say: what fits about 30
# minutes for all six with --jobs 2 on a 2-CPU machine (bench/README.md). attrs' and
# packaging's bases cost a recording each of a 20-70 s suite, hence one commit there.
COMMITS = {"boltons": 3, "sqlparse": 3, "rich": 2, "tomli": 3, "attrs": 1, "packaging": 1}
MUTANTS = {"boltons": 2, "sqlparse": 2, "rich": 2, "tomli": 2, "attrs": 1, "packaging": 2}
# A lane's rough cost per project (the seconds of one plain suite here), for --jobs.
COST = {"boltons": 4, "sqlparse": 4, "rich": 10, "tomli": 1, "attrs": 25, "packaging": 70}
TESTMON_DEP = "pytest-testmon"
# Mutants planted per mutant wanted: the first ones the plain suite catches are gated.
CANDIDATES = 3
# pytest's summary words that count a test as run (deselected ones are not).
RUN_KEYS = ("passed", "failed", "skipped", "error", "errors", "xfailed", "xpassed")


@dataclass
class Testmon:
    """One ``pytest --testmon`` process: the tests it ran, its wall and failures."""

    tests: int | None  # None: it did not run (exit other than 0, 1, 5)
    seconds: float
    exit: int | None
    failed: list[str]
    error: str = ""


@dataclass
class Base:
    """What one base cost to record: patchlane's map and testmon's baseline."""

    project: str
    base: str  # the trial branch (b/NN)
    record_seconds: float
    record_ok: bool
    record_error: str
    testmon_seconds: float
    testmon_ok: bool
    testmon_error: str


@dataclass
class Row:
    """One patch: the plain suite at the head, the warm gate and testmon."""

    project: str
    name: str
    kind: str  # commit, mutant
    detail: str
    base: str
    suite: hh.Suite
    gate: hh.Gate
    slice_tests: int | None  # the slice without the canary
    canary: int | None
    testmon: Testmon

    @property
    def gate_ratio(self) -> float | None:
        """The warm gate's wall over the plain suite's."""
        return self.gate.seconds / self.suite.seconds if self.suite.seconds else None


def testmon_run(
    python: Path, tree: Path, targets: Sequence[str], env: dict[str, str], timeout: float
) -> Testmon:
    """Run ``pytest --testmon`` over ``targets`` in ``tree``; return what it ran."""
    # Not trial.pytest_argv: testmon needs pytest's cacheprovider.
    argv = [os.fspath(python), "-m", "pytest", "-q", "-rfE", "--tb=no", "--testmon", *targets]
    proc = trial.run(argv, cwd=tree, env={**env, "PYTHONHASHSEED": "0"}, timeout=timeout)
    counts, failed, subfailed = trial.parse_pytest_output(proc.stdout + proc.stderr)
    if proc.returncode not in (0, 1, 5):
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        return Testmon(None, round(proc.seconds, 2), proc.returncode, [], f"exit: {tail[:300]}")
    tests = sum(counts.get(k, 0) for k in RUN_KEYS)
    return Testmon(tests, round(proc.seconds, 2), proc.returncode, failed + subfailed)


class SideBySide(hh.HonestTrial):
    """One project: honest_history's trial repository plus mutants, both tools, the truth."""

    def __init__(self, spec: hh.Spec, args: argparse.Namespace, pl_src: Path, work: Path):
        deps = (*spec.project.deps, TESTMON_DEP)
        spec = dataclasses.replace(spec, project=dataclasses.replace(spec.project, deps=deps))
        super().__init__(spec, args, pl_src, work)
        self.overlay: trial.Overlay | None = None
        self.patches: list[tuple[trial.Patch, str]] = []  # (patch, kind)
        self.bases: dict[str, Base] = {}
        self.baselines: dict[str, Path] = {}
        self.targets: list[str] = []
        self.wanted = 0

    def _commit(self, tree: Path, overlay: trial.Overlay, parent: str | None, msg: str) -> str:
        self.overlay = overlay  # build()'s, kept for the mutants' commits
        return super()._commit(tree, overlay, parent, msg)

    def build(self) -> None:
        """The trial repository of honest_history (b/NN, h/NN) and the mutants (m/NN on the
        newest commit's base). Raises ``TrialError`` when there is nothing to gate."""
        super().build()
        if not self.pairs:
            raise trial.TrialError("no commit to gate")
        for i in range(1, len(self.pairs) + 1):
            name = f"c{i:02d}"
            subject = trial.git(self.git_dir, "log", "-1", "--format=%s", self.pairs[i - 1][1])
            patch = trial.Patch(
                self.spec.project.name,
                name,
                "history",
                f"b/{i:02d}",
                f"h/{i:02d}",
                f"{self.pairs[i - 1][1][:9]} {subject.strip()[:60]}",
            )
            self.patches.append((patch, "commit"))
        last = len(self.pairs)
        base_tree = hh.export(self.spec, self.git_dir, self.pairs[-1][0], self.cache)
        self.wanted = self.args.mutants_of(self.spec.project.name)
        # Candidates: run_rows gates the first ``wanted`` the plain suite catches.
        candidates = CANDIDATES * self.wanted
        mutants = trial.pick_mutants(self.spec.project, base_tree, candidates, self.args.seed)
        scratch = self.root / "scratch"
        for i, m in enumerate(mutants, 1):
            dest = scratch / f"m{i:02d}"
            shutil.rmtree(dest, ignore_errors=True)
            trial.copy_tree(base_tree, dest)
            (dest / m.path).write_text(m.text, encoding="utf-8")
            assert self.overlay is not None
            head = self._commit(dest, self.overlay, self.commits[f"b/{last:02d}"], f"m{i:02d}")
            shutil.rmtree(dest)
            trial.set_branch(self.repo, f"m/{i:02d}", head)
            self.commits[f"m/{i:02d}"] = head
            patch = trial.Patch(
                self.spec.project.name,
                f"m{i:02d}",
                "mutant",
                f"b/{last:02d}",
                f"m/{i:02d}",
                m.label,
            )
            self.patches.append((patch, "mutant"))
        self.targets = [t for t in self.spec.project.tests]

    def record(self, base: str) -> Base:
        """Record ``base``'s patchlane map and testmon baseline once; return their cost."""
        if base in self.bases:
            return self.bases[base]
        argv: list[str | Path] = [
            self.python, "-m", "patchlane", "replay", "map", "--repo", self.repo, "--base", base,
            "--dep-cache", self.env["PATCHLANE_CACHE_DIR"], "--force",
            "--timeout", str(int(self.args.gate_timeout)),
        ]  # fmt: skip
        proc = trial.run(argv, cwd=self.repo, env=self.env, timeout=self.args.gate_timeout + 60)
        rec_error = ""
        if proc.returncode != 0:
            rec_error = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])[:300]
        tree = self.root / "testmon" / base.replace("/", "-")
        shutil.rmtree(tree, ignore_errors=True)
        trial.export_commit(self.repo / ".git", self.commits[base], tree)
        tm = testmon_run(self.python, tree, self.targets, self.env, self.args.suite_timeout)
        tm_ok = tm.tests is not None and (tree / ".testmondata").is_file()
        self.baselines[base] = tree
        done = Base(
            self.spec.project.name,
            base,
            round(proc.seconds, 2),
            proc.returncode == 0,
            rec_error,
            tm.seconds,
            tm_ok,
            tm.error,
        )
        self.log(
            f"{base}: map {done.record_seconds:.1f} s{' FAILED ' + rec_error if rec_error else ''}, "
            f"testmon baseline {tm.seconds:.1f} s{' FAILED ' + tm.error if tm.error else ''}"
        )
        self.bases[base] = done
        return done

    def testmon_head(self, patch: trial.Patch) -> Testmon:
        """``pytest --testmon`` at ``patch``'s head: the baseline tree with the patch's files."""
        base = self.bases[patch.base]
        if not base.testmon_ok:
            return Testmon(None, 0.0, None, [], f"no baseline: {base.testmon_error}")
        tree = self.root / "testmon" / patch.name
        head = self.root / "testmon" / "head"
        for d in (tree, head):
            shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(self.baselines[patch.base], tree, symlinks=True)
        trial.export_commit(self.repo / ".git", self.commits[patch.head], head)
        for rel in trial.changed_paths(
            self.repo, self.commits[patch.base], self.commits[patch.head]
        ):
            if (head / rel).is_file():
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(head / rel, tree / rel)
            elif (tree / rel).exists():
                (tree / rel).unlink()
        shutil.rmtree(head)
        got = testmon_run(self.python, tree, self.targets, self.env, self.args.suite_timeout)
        shutil.rmtree(tree, ignore_errors=True)
        return got

    def run_rows(self) -> list[Row]:
        """Every patch of the project; each row is also appended to ``WORK/rows.jsonl``."""
        rows = []
        red_mutants = 0
        seen: list[float] = []  # the commits' plain suite walls
        for n, (patch, kind) in enumerate(self.patches, 1):
            if kind == "mutant" and red_mutants >= self.wanted:
                break
            checkout = self.root / "checkout"
            shutil.rmtree(checkout, ignore_errors=True)
            trial.export_commit(self.repo / ".git", self.commits[patch.head], checkout)
            timeout = self.args.suite_timeout
            if kind == "mutant" and seen:
                # A mutant can loop forever: a head the suite cannot finish in ten times the
                # commits' suite is no clean red head, and must not cost the whole timeout.
                timeout = min(timeout, max(60.0, 10 * max(seen)))
            suite = hh.plain_suite(self.spec, self.python, checkout, self.env, timeout)
            if kind == "commit":
                seen.append(suite.seconds)
            shutil.rmtree(checkout)
            if kind == "mutant":
                if suite.truth != "red":
                    # A mutant the suite does not catch says nothing of red heads accepted.
                    self.notes.append(f"{patch.name} skipped: suite {suite.brief} ({patch.detail})")
                    self.log(f"{patch.name}: suite {suite.brief}: not a red head, skipped")
                    continue
                red_mutants += 1
            self.record(patch.base)
            out = self.root / "evidence" / patch.name
            gate = hh.run_gate(self.python, self.repo, patch, out, self.env, self.args.gate_timeout)
            report = hh._read(out / "replay-report.json")
            found = report.get("canary")
            canary: dict[str, Any] = found if isinstance(found, dict) else {}
            count = canary.get("count") if isinstance(canary.get("count"), int) else None
            tests = None
            if gate.slice_size is not None:
                tests = gate.slice_size - (count or 0)
            tm = self.testmon_head(patch)
            row = Row(
                self.spec.project.name,
                patch.name,
                kind,
                patch.detail,
                patch.base,
                suite,
                gate,
                tests,
                count,
                tm,
            )
            self.log(
                f"{n}/{len(self.patches)} {patch.name}: suite {suite.brief} {suite.seconds:.1f} s; "
                f"gate {gate.verdict} {gate.seconds:.1f} s slice {tests}/{gate.suite_size} "
                f"({gate.dependency_map[:40] or 'no map'}); testmon {tm.tests} in {tm.seconds:.1f} s"
            )
            rows.append(row)
            with (self.root.parent / "rows.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(row)) + "\n")
        return rows


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def _median(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def _f(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def _ratio(r: dict[str, Any]) -> float | None:
    s = r["suite"]["seconds"]
    return r["gate"]["seconds"] / s if s else None


def _over(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else part / whole


def _share(part: int | None, whole: int | None) -> float | None:
    return None if part is None or not whole else part / whole


def project_summary(
    name: str, rows: Sequence[dict[str, Any]], bases: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The issue's table row of one project (and what its checks need)."""
    suite_s = _median([r["suite"]["seconds"] for r in rows])
    tests = _median([r["suite"]["tests"] for r in rows])
    ratios = [_ratio(r) for r in rows]
    slices = [
        _share(r["slice_tests"], r["gate"]["suite_size"] or r["suite"]["tests"]) for r in rows
    ]
    tm_share = [_share(r["testmon"]["tests"], r["suite"]["tests"]) for r in rows]
    tm_time = [
        r["testmon"]["seconds"] / r["suite"]["seconds"]
        if r["testmon"]["tests"] is not None and r["suite"]["seconds"]
        else None
        for r in rows
    ]
    rec = [b["record_seconds"] for b in bases if b["record_ok"]]
    tm_rec = [b["testmon_seconds"] for b in bases if b["testmon_ok"]]
    red = [r for r in rows if r["suite"]["truth"] != "green"]
    return {
        "project": name,
        "tests": None if tests is None else int(tests),
        "suite_s": suite_s,
        "patches": len(rows),
        "commits": sum(r["kind"] == "commit" for r in rows),
        "mutants": sum(r["kind"] == "mutant" for r in rows),
        "red_heads": len(red),
        "median_slice": _median(slices),
        "median_gate_ratio": _median(ratios),
        "max_gate_ratio": max((x for x in ratios if x is not None), default=None),
        "testmon_share": _median(tm_share),
        "testmon_time_ratio": _median(tm_time),
        "testmon_recall": _recall(rows),
        "record_ratio": _over(_median(rec), suite_s),
        "testmon_record_ratio": _over(_median(tm_rec), suite_s),
        "record_failed": sum(not b["record_ok"] for b in bases),
        "red_accepted": sum(
            r["gate"]["verdict"] == "accept_for_review" for r in red if r["suite"]["truth"] == "red"
        ),
        "undecided": sum(r["gate"]["verdict"] == "undecided" for r in rows),
        "gate_errors": sum(
            r["gate"]["verdict"] not in ("accept_for_review", "reject", "undecided") for r in rows
        ),
    }


def _recall(rows: Sequence[dict[str, Any]]) -> str:
    """testmon's recall: red heads' failing tests it ran and failed, of the suite's."""
    want = got = 0
    for r in rows:
        if r["suite"]["truth"] == "red" and r["testmon"]["tests"] is not None:
            fails = set(r["suite"]["failed"])
            want += len(fails)
            got += len(fails & set(r["testmon"]["failed"]))
    return f"{got}/{want}" if want else "-"


def checks(summ: Sequence[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
    """The issue's "Done when", each (what, met or None when nothing measured it, figures)."""
    out: list[tuple[str, bool | None, str]] = []
    mid = [s for s in summ if s["suite_s"] is not None and 3 <= s["suite_s"] <= 15]
    big = [s for s in summ if s["suite_s"] is not None and s["suite_s"] > 60]
    for what, group, bound in (("3-15 s suites", mid, 0.7), ("suites over 60 s", big, 0.3)):
        vals = [
            (s["project"], s["median_gate_ratio"])
            for s in group
            if s["median_gate_ratio"] is not None
        ]
        out.append(
            (
                f"median gate/suite <= {bound} on {what}",
                all(v <= bound for _, v in vals) if vals else None,
                ", ".join(f"{p} {v:.2f}" for p, v in vals) or "no such project measured",
            )
        )
    worst = [(s["project"], s["max_gate_ratio"]) for s in summ if s["max_gate_ratio"] is not None]
    out.append(
        (
            "no gate over 1.2x the suite",
            all(v <= 1.2 for _, v in worst) if worst else None,
            ", ".join(f"{p} {v:.2f}" for p, v in worst),
        )
    )
    sl = [
        (s["project"], s["median_slice"], s["testmon_share"])
        for s in summ
        if s["median_slice"] is not None and s["testmon_share"] is not None
    ]
    out.append(
        (
            "median slice <= 3x testmon's",
            all(a <= 3 * b for _, a, b in sl) if sl else None,
            ", ".join(f"{p} {a:.1%} vs {b:.1%}" for p, a, b in sl),
        )
    )
    rec = [(s["project"], s["record_ratio"]) for s in summ]
    known = [(p, v) for p, v in rec if v is not None]
    failed = [s["project"] for s in summ if s["record_failed"]]
    out.append(
        (
            "map recording <= 1.5x the suite",
            (all(v <= 1.5 for _, v in known) and not failed) if known else None,
            ", ".join(f"{p} {v:.2f}" for p, v in known)
            + (f"; recording FAILED: {', '.join(failed)}" if failed else ""),
        )
    )
    red = sum(s["red_accepted"] for s in summ)
    heads = sum(s["red_heads"] for s in summ)
    out.append(
        (
            "0 red heads accepted",
            red == 0 if heads else None,
            f"{red} of {heads} red heads accepted",
        )
    )
    return out


def table(rows: Sequence[Sequence[str]]) -> str:
    return hh.table(rows)


def render(payload: dict[str, Any]) -> str:
    rows, bases = payload["results"], payload["bases"]
    per = [
        [
            "project",
            "patch",
            "kind",
            "detail",
            "suite",
            "suite s",
            "verdict",
            "gate s",
            "gate/suite",
            "slice (canary)",
            "testmon ran",
            "testmon s",
        ]
    ]
    for r in rows:
        g, tm = r["gate"], r["testmon"]
        per.append(
            [
                r["project"],
                r["name"],
                r["kind"],
                trial._cut(r["detail"], 40),
                f"{r['suite']['truth']} ({r['suite']['tests']})",
                f"{r['suite']['seconds']:.1f}",
                hh._v(g["verdict"]),
                f"{g['seconds']:.1f}",
                _f(_ratio(r)),
                f"{_f(r['slice_tests'], '{}')}/{g['suite_size'] or '-'} ({_f(r['canary'], '{}')})",
                _f(tm["tests"], "{}") if tm["tests"] is not None else f"- {tm['error'][:40]}",
                f"{tm['seconds']:.1f}",
            ]
        )
    out = [table(per), ""]
    names = list(dict.fromkeys(r["project"] for r in rows))
    summ = [
        project_summary(
            n, [r for r in rows if r["project"] == n], [b for b in bases if b["project"] == n]
        )
        for n in names
    ]
    head = [
        "project (tests, plain suite s)",
        "patches",
        "median slice % (canary excluded)",
        "median gate / suite",
        "max gate / suite",
        "testmon tests run % / time ratio",
        "map recording / suite (testmon's)",
        "red heads accepted",
        "undecided",
    ]
    lines = [head]
    for s in summ:
        lines.append(
            [
                f"{s['project']} ({_f(s['tests'], '{}')}, {_f(s['suite_s'], '{:.1f}')} s)",
                f"{s['patches']} ({s['commits']} commits, {s['mutants']} mutants; {s['red_heads']} red)",
                _f(s["median_slice"], "{:.1%}"),
                _f(s["median_gate_ratio"], "{:.2f}x"),
                _f(s["max_gate_ratio"], "{:.2f}x"),
                f"{_f(s['testmon_share'], '{:.1%}')} / {_f(s['testmon_time_ratio'], '{:.2f}x')}",
                f"{_f(s['record_ratio'], '{:.2f}x')} ({_f(s['testmon_record_ratio'], '{:.2f}x')})"
                + (f" {s['record_failed']} FAILED" if s["record_failed"] else ""),
                f"{s['red_accepted']} of {s['red_heads']}",
                str(s["undecided"])
                + (f" (+{s['gate_errors']} errors)" if s["gate_errors"] else ""),
            ]
        )
    out += [
        table(lines),
        "",
        "testmon's recall (red heads' failing tests it failed): "
        + ", ".join(f"{s['project']} {s['testmon_recall']}" for s in summ),
        "",
        "Done when:",
    ]
    for what, met, figures in checks(summ):
        mark = {True: "met", False: "NOT MET", None: "not measured"}[met]
        out.append(f"- [{mark}] {what}: {figures}")
    held = [r for r in rows if r["gate"]["verdict"] != "accept_for_review"]
    out += ["", f"patches not accepted: {len(held)}"]
    for r in held:
        out.append(
            f"- {r['project']} {r['name']} (suite {r['suite']['truth']}): "
            f"{r['gate']['verdict']}: {trial._cut('; '.join(r['gate']['reasons']), 300)}"
        )
    bad = [b for b in bases if not (b["record_ok"] and b["testmon_ok"])]
    for b in bad:
        out.append(
            f"- {b['project']} {b['base']}: map {b['record_error'] or 'ok'}; "
            f"testmon {b['testmon_error'] or 'ok'}"
        )
    payload["summary"] = summ
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python bench/side_by_side.py",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="defaults (commits + mutants): "
        + ", ".join(f"{n} {COMMITS[n]}+{MUTANTS[n]}" for n in PROJECTS),
    )
    parser.add_argument(
        "--project",
        action="append",
        choices=PROJECTS,
        metavar="NAME",
        help=f"run this project (repeatable; default all: {', '.join(PROJECTS)})",
    )
    parser.add_argument(
        "--commits",
        type=int,
        metavar="N",
        help="commits per project (default: per project, see below)",
    )
    parser.add_argument(
        "--mutants",
        type=int,
        metavar="N",
        help="mutants per project (default: per project, see below)",
    )
    parser.add_argument("--seed", type=int, default=1, help="the mutants' seed (default 1)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="run the projects in N lanes at once, each a child process",
    )
    hh.add_run_arguments(
        parser,
        work_help="trial repositories, evidence, caches (default: a temporary "
        "directory, removed at the end)",
    )
    args = parser.parse_args(argv)
    if (args.commits is not None and args.commits < 1) or (args.mutants or 0) < 0:
        parser.error("--commits must be >= 1 and --mutants >= 0")
    args.cache = args.cache.resolve()
    # What honest_history.HonestTrial reads.
    args.git_dirs, args.from_run, args.map_style = {}, None, "smoke"
    return args


def counts(args: argparse.Namespace, name: str) -> tuple[int, int]:
    return (
        args.commits if args.commits is not None else COMMITS[name],
        args.mutants if args.mutants is not None else MUTANTS[name],
    )


def run_projects(args: argparse.Namespace, names: Sequence[str], work: Path) -> dict[str, Any]:
    pl_src, label = trial.patchlane_source(args.patchlane_rev, args.patchlane_src, args.cache)
    trial.say(f"patchlane under trial: {label}")
    rows: list[dict[str, Any]] = []
    bases: list[dict[str, Any]] = []
    notes: dict[str, list[str]] = {}
    for name in names:
        commits, mutants = counts(args, name)
        ns = argparse.Namespace(**vars(args))
        ns.commits = commits
        ns.mutants_of = lambda _n, m=mutants: m
        t = SideBySide(hh.SPECS[name], ns, pl_src, work)
        started = time.monotonic()
        try:
            t.build()
            rows += [asdict(r) for r in t.run_rows()]
        except trial.TrialError as e:
            t.log(f"ERROR: {e}")
            t.notes.append(f"trial error: {e}")
        bases += [asdict(b) for b in t.bases.values()]
        t.notes.insert(0, f"{time.monotonic() - started:.0f} s for the project")
        notes[name] = t.notes
    return {"patchlane": label, "results": rows, "bases": bases, "notes": notes}


def run_lanes(
    args: argparse.Namespace, names: Sequence[str], work: Path, argv: Sequence[str]
) -> dict[str, Any]:
    """``--jobs`` lanes, each this script as a child process on its share of the projects
    (costliest first into the lightest lane); return their results merged."""
    jobs = max(1, min(args.jobs, len(names)))
    lanes: list[list[str]] = [[] for _ in range(jobs)]
    load = [0.0] * jobs
    for name in sorted(names, key=lambda n: -COST[n] * sum(counts(args, n))):
        k = load.index(min(load))
        lanes[k].append(name)
        load[k] += COST[name] * sum(counts(args, name))
    passed = _strip(argv)
    # --patchlane-rev: exported once here, not by two lanes at the same time.
    trial.patchlane_source(args.patchlane_rev, args.patchlane_src, args.cache)
    procs = []
    for k, lane in enumerate(lanes, 1):
        child = [
            sys.executable,
            os.fspath(Path(__file__).resolve()),
            *passed,
            *[x for n in lane for x in ("--project", n)],
            "--work",
            os.fspath(work / f"lane{k}"),
            "--json",
            os.fspath(work / f"lane{k}.json"),
        ]
        trial.say(f"lane {k}: {' '.join(lane)}")
        procs.append(subprocess.Popen(child, stdout=subprocess.DEVNULL))
    merged: dict[str, Any] = {"patchlane": "", "results": [], "bases": [], "notes": {}}
    for k, proc in enumerate(procs, 1):
        code = proc.wait()
        path = work / f"lane{k}.json"
        if code not in (0, 1) or not path.is_file():
            raise trial.TrialError(f"lane {k} exited {code} without its results ({path})")
        got = json.loads(path.read_text(encoding="utf-8"))
        merged["patchlane"] = got["meta"]["patchlane"]
        for key in ("results", "bases"):
            merged[key] += got[key]
        merged["notes"].update(got["notes"])
    order = {n: i for i, n in enumerate(names)}
    merged["results"].sort(key=lambda r: order[r["project"]])
    return merged


def _strip(argv: Sequence[str]) -> list[str]:
    """``argv`` without the options each lane gets its own of."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--project", "--work", "--json", "--md", "--jobs"):
            skip = True
            continue
        if a.split("=")[0] in ("--project", "--work", "--json", "--md", "--jobs"):
            continue
        out.append(a)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(raw)
    started = time.monotonic()
    names = args.project or list(PROJECTS)
    args.cache.mkdir(parents=True, exist_ok=True)
    work = (args.work or Path(tempfile.mkdtemp(prefix="patchlane-side-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.jobs > 1 and len(names) > 1:
            got = run_lanes(args, names, work, raw)
        else:
            got = run_projects(args, names, work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    meta = {
        "patchlane": got["patchlane"],
        "command": " ".join(["python", "bench/side_by_side.py", *raw]),
        "seconds": round(time.monotonic() - started, 1),
        "load_at_end": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    payload = {"meta": meta, **{k: got[k] for k in ("results", "bases", "notes")}}
    report = render(payload)
    report += "\n\n" + "\n".join(
        f"note [{n}]: {line}" for n, ls in got["notes"].items() for line in ls
    )
    report += (
        f"\n\npatchlane under trial: {meta['patchlane']}; {meta['seconds']:.0f} s in all; "
        f"command: {meta['command']}\n"
    )
    print(report)
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    if args.md:
        args.md.write_text(f"# Side by side: `{meta['command']}`\n\n{report}", encoding="utf-8")
    return 1 if any(s["red_accepted"] for s in payload["summary"]) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except trial.TrialError as err:
        trial.say(f"error: {err}")
        sys.exit(2)
