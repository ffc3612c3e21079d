"""Slice benchmark: how much of a real project's suite ``patchlane replay select`` picks for a
patch, with and without the base's dependency map, and whether it keeps every failing test.

For each project of ``bench/trial.py`` (its trial repository, venv, review map and patches are
built by ``trial``: history patches between released versions, seeded bugs, optionally the
hostile test edits) and each patch, it runs in the project's venv:

- ``patchlane replay select --dep-map off`` (the static rules alone);
- ``patchlane replay select --dep-map auto --dep-cache WORK/depcache``: the first call for a
  base records that base's map (its whole suite runs once under coverage.py), and is timed
  apart (``map_seconds`` = that call's wall time minus a second, cached call's); the figures
  are the second call's;
- the ground truth: the project's full suite at the head (``trial.ProjectTrial.truth``), whose
  failing node ids (failed, errors, failed subtests) every slice must hold.

Recall is |failing ∩ slice| / |failing| (1.0 when nothing fails). A red head with a failing
test outside the with-map slice is a recall miss: listed loudly, and the exit status is 1.
Exit 2 when a project could not be set up or a selection failed (no figure for it), else 0.
Standard library only, plus ``trial``; needs ``git`` and PyPI. See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import trial  # noqa: E402  (bench/trial.py, next to this file)

TARGET_SLICE = 0.20  # the target: median slice <= 20% of the suite, with the map
TARGET_RECALL = 1.0  # and every failing test in the slice
MIN_COVERAGE = (7, 6)


def say(message: str) -> None:
    """Write one progress line to stderr; returns nothing."""
    print(f"bench_slice: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# One `replay select` call
# --------------------------------------------------------------------------------------------


@dataclass
class Pick:
    """One ``replay select`` call: the slice and its JSON summary, or why there is none."""

    mode: str  # off, auto, all
    ok: bool
    nodeids: list[str]
    suite_size: int | None
    rules: dict[str, int]
    dependency_map: str
    notes: list[str]
    sha256: str
    seconds: float
    error: str = ""


def select(
    python: Path, repo: Path, patch: trial.Patch, out: Path, mode: str, cache: Path, timeout: float
) -> Pick:
    """Run ``patchlane replay select`` for ``patch`` (mode ``off``, ``auto`` with the map cache
    ``cache``, or ``all``: ``--all``); return the ``Pick`` (``ok`` False with the error's last
    lines when it did not exit 0 with a JSON summary)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    argv: list[str | Path] = [
        python, "-m", "patchlane", "replay", "select", "--repo", repo,
        "--base", patch.base, "--head", patch.head, "--out", out, "--json",
    ]  # fmt: skip
    if mode == "all":
        argv.append("--all")
    else:
        argv += ["--dep-map", mode] + (["--dep-cache", os.fspath(cache)] if mode == "auto" else [])
    env = trial.clean_env()
    env.pop("PATCHLANE_DEP_MAP", None)
    env.pop("PATCHLANE_CACHE_DIR", None)
    proc = trial.run(argv, cwd=repo, env=env, timeout=timeout)
    failed = Pick(mode, False, [], None, {}, "", [], "", proc.seconds)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
        failed.error = f"exit {proc.returncode}: " + "\n".join(tail)
        return failed
    try:
        data = json.loads(proc.stdout)
        nodeids = [line for line in out.read_text(encoding="utf-8").splitlines() if line]
    except (ValueError, OSError) as e:
        failed.error = f"unreadable output: {e}"
        return failed
    return Pick(
        mode=mode,
        ok=True,
        nodeids=nodeids,
        suite_size=data.get("suite_size"),
        rules=dict(data.get("rules", {})),
        dependency_map=str(data.get("dependency_map", "")),
        notes=[str(n) for n in data.get("notes", [])],
        sha256=str(data.get("sha256", "")),
        seconds=proc.seconds,
    )


def map_state(note: str) -> str:
    """Return how the with-map call got its map, from its ``dependency_map`` note:
    ``recorded``, ``cached``, ``off`` or ``NOT USED``."""
    if note == "off":
        return "off"
    if note.startswith("none") or not note:
        return "NOT USED"
    return "recorded" if "recorded now" in note else "cached"


# --------------------------------------------------------------------------------------------
# One patch
# --------------------------------------------------------------------------------------------


@dataclass
class SliceResult:
    """What the benchmark measured for one patch."""

    project: str
    name: str
    kind: str
    detail: str
    base: str
    head: str
    files_changed: int
    truth: str  # green, red, red* (hostile), error (the suite did not run to the end)
    truth_detail: str
    failing: list[str]  # the full suite's failing node ids at the head
    suite_size: int | None  # collected at the head by replay select
    slice_off: int | None
    slice_map: int | None
    recall_off: float | None
    recall_map: float | None
    missed_off: list[str]
    missed_map: list[str]
    select_seconds_off: float | None
    select_seconds_map: float | None
    map_seconds: float | None  # recording the base's map: on the first patch of each base
    map_call_seconds: float | None  # the whole first with-map call (recording + selection)
    map_state: str  # recorded (by this patch's first call), cached, NOT USED, "" (call failed)
    dependency_map: str  # select's note on the map it used, or why none
    rules_off: dict[str, int]
    rules_map: dict[str, int]
    suite_seconds: float
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def red(self) -> bool:
        """Whether the full suite failed some test at the head."""
        return bool(self.failing)

    def fraction(self, mode: str) -> float | None:
        """Return the slice's share of the suite in ``mode`` (``off``/``map``), or ``None``."""
        size = self.slice_off if mode == "off" else self.slice_map
        if size is None or not self.suite_size:
            return None
        return size / self.suite_size


def recall(
    failing: Sequence[str], chosen: set[str], aliases: dict[str, set[str]]
) -> tuple[float, list[str]]:
    """Return (recall, the failing ids the slice misses). A failing id is kept when it is in
    ``chosen`` or all of its ``aliases`` (the collected ids it stands for) are."""
    missed = [
        f for f in failing if f not in chosen and not (aliases.get(f) and aliases[f] <= chosen)
    ]
    return (1.0 if not failing else (len(failing) - len(missed)) / len(failing)), missed


def aliases_of(failing: Sequence[str], collected: Sequence[str]) -> dict[str, set[str]]:
    """Return, for each failing id the head's collection lacks, the collected ids it may
    stand for (pytest's summary cuts a node id at its first space: ``id[a b]`` -> ``id[a``)."""
    known = set(collected)
    return {f: {c for c in collected if c.startswith(f)} for f in failing if f not in known}


class Bench:
    """Measures the slices of one project's patches (its ``trial.ProjectTrial`` built)."""

    def __init__(self, t: trial.ProjectTrial, depcache: Path, timeout: float) -> None:
        """Measure ``t``'s patches with maps kept in ``depcache``, each call within ``timeout``."""
        self.t = t
        self.depcache = depcache
        self.timeout = timeout
        self.maps: dict[str, Pick] = {}  # base commit -> the with-map call that recorded it

    def _select(self, patch: trial.Patch, mode: str) -> Pick:
        """Return the ``Pick`` of ``mode`` for ``patch`` (its slice kept under the work dir)."""
        out = self.t.root / "slices" / patch.name / f"{mode}.txt"
        return select(self.t.python, self.t.repo, patch, out, mode, self.depcache, self.timeout)

    def truth(self, patch: trial.Patch) -> tuple[str, trial.SuiteRun]:
        """Return (green/red/red*/error, the full suite's run at the head)."""
        suite = self.t.truth(patch.head)
        truth = "green" if suite.green else "red"
        if suite.returncode not in (0, 1):
            truth = "error"
        if patch.kind == "hostile" and truth == "green":
            again = self.t.truth(patch.head, base_tests_from=patch.base)
            truth = "red*" if not again.green else truth
        return truth, suite

    def with_map(self, patch: trial.Patch) -> tuple[Pick, Pick | None]:
        """Return (the with-map call to measure, the call that recorded the base's map, or
        ``None`` when an earlier patch of the same base did). The first call for a base
        records its map; a second, cached one is the one measured."""
        base = self.t.commits[patch.base]
        first = None
        if base not in self.maps:
            first = self._select(patch, "auto")
            self.maps[base] = first
            self.t.log(f"{patch.name}: map of {patch.base} {map_state(first.dependency_map)}")
        return self._select(patch, "auto"), first

    def measure(self, patch: trial.Patch, n: int, total: int) -> SliceResult:
        """Return the measured ``SliceResult`` of ``patch`` (truth, both slices, recall)."""
        truth, suite = self.truth(patch)
        failing = list(dict.fromkeys(suite.failed + suite.subfailed))
        self.t.log(f"{n}/{total} {patch.name}: head {truth} ({suite.brief()}); selecting")
        off = self._select(patch, "off")
        on, first = self.with_map(patch)
        r = self._result(patch, truth, suite, failing, off, on)
        if first is not None:
            r.map_call_seconds = round(first.seconds, 2)
            if map_state(first.dependency_map) == "recorded":
                r.map_seconds = round(max(first.seconds - on.seconds, 0.0), 2)
                r.map_state = "recorded" if r.map_state == "cached" else r.map_state
            elif first.ok:
                r.notes.append(f"the base's first with-map call: {first.dependency_map}")
            if first.ok and on.ok and first.sha256 != on.sha256:
                r.notes.append("the recording call's slice differs from the cached call's")
            if not first.ok:
                r.errors.append(f"map-recording select: {first.error}")
        self._score(patch, r, failing, off, on)
        self.t.log(
            f"{n}/{total} {patch.name}: slice {r.slice_off} off / {r.slice_map} map of "
            f"{r.suite_size}; recall {r.recall_off} / {r.recall_map}"
        )
        return r

    def _result(
        self,
        patch: trial.Patch,
        truth: str,
        suite: trial.SuiteRun,
        failing: list[str],
        off: Pick,
        on: Pick,
    ) -> SliceResult:
        """Return the ``SliceResult`` of the two calls, recall not yet scored."""
        files = trial.changed_paths(
            self.t.repo, self.t.commits[patch.base], self.t.commits[patch.head]
        )
        errors = [f"select --dep-map {p.mode}: {p.error}" for p in (off, on) if not p.ok]
        return SliceResult(
            project=self.t.p.name,
            name=patch.name,
            kind=patch.kind,
            detail=patch.detail,
            base=patch.base,
            head=patch.head,
            files_changed=len(files),
            truth=truth,
            truth_detail=suite.brief(),
            failing=failing,
            suite_size=off.suite_size if off.ok else on.suite_size,
            slice_off=len(off.nodeids) if off.ok else None,
            slice_map=len(on.nodeids) if on.ok else None,
            recall_off=None,
            recall_map=None,
            missed_off=[],
            missed_map=[],
            select_seconds_off=round(off.seconds, 2) if off.ok else None,
            select_seconds_map=round(on.seconds, 2) if on.ok else None,
            map_seconds=None,
            map_call_seconds=None,
            map_state=map_state(on.dependency_map) if on.ok else "",
            dependency_map=on.dependency_map,
            rules_off=off.rules,
            rules_map=on.rules,
            suite_seconds=round(suite.seconds, 2),
            errors=errors,
            notes=[n for n in on.notes if n.startswith("dependency map")],
        )

    def _score(
        self, patch: trial.Patch, r: SliceResult, failing: list[str], off: Pick, on: Pick
    ) -> None:
        """Fill in ``r``'s recall and missed tests; returns nothing. When a failing id is in
        neither slice, ``replay select --all`` says whether the head collects it at all. A
        head whose suite did not finish (a timeout) and failed nothing has no recall."""
        if r.truth == "error" and not failing:
            r.notes.append(f"no ground truth: the full suite at the head {r.truth_detail}")
            return
        picked = set(off.nodeids) | set(on.nodeids)
        aliases: dict[str, set[str]] = {}
        if any(f not in picked for f in failing):
            every = self._select(patch, "all")
            if every.ok:
                aliases = aliases_of(failing, every.nodeids)
                for f, found in aliases.items():
                    r.notes.append(
                        f"failing id {f} is not collected by select --all"
                        + (f"; taken as {sorted(found)[:3]}" if found else "")
                    )
            else:
                r.errors.append(f"select --all: {every.error}")
        if off.ok:
            r.recall_off, r.missed_off = recall(failing, set(off.nodeids), aliases)
        if on.ok:
            r.recall_map, r.missed_map = recall(failing, set(on.nodeids), aliases)


# --------------------------------------------------------------------------------------------
# One project
# --------------------------------------------------------------------------------------------


def ensure_coverage(python: Path, pl_src: Path) -> str:
    """Make sure the venv has coverage.py >= 7.6 (patchlane's dependency since the map): when
    it does not, reinstall patchlane from ``pl_src``, which brings it. Returns its version;
    raises ``trial.TrialError`` when it is still missing."""
    probe = [python, "-c", "import coverage; print(coverage.__version__)"]

    def version() -> str | None:
        """Return the venv's coverage.py version when it is recent enough, else ``None``."""
        proc = trial.run(probe)
        text = proc.stdout.strip()
        if proc.returncode != 0 or not text:
            return None
        parts = tuple(int(p) for p in text.split(".")[:2] if p.isdigit())
        return text if parts >= MIN_COVERAGE else None

    found = version()
    if found is None:
        say(f"pip install -e {pl_src} into {python.parent.parent} (for coverage.py)")
        trial.run([python, "-m", "pip", "install", "-q", "-e", pl_src], check=True, timeout=1200)
        found = version()
    if found is None:
        raise trial.TrialError(f"{python}: no coverage.py >= 7.6 after installing patchlane")
    return found


def bench_project(
    name: str, opts: trial.Options, depcache: Path, timeout: float
) -> tuple[list[SliceResult], list[str]]:
    """Build ``name``'s trial repository and patches and measure each; return the results and
    the project's notes. Raises ``trial.TrialError`` when the project cannot be set up."""
    t = trial.ProjectTrial(trial.PROJECTS[name], opts)
    python = trial.ensure_venv(t.p, opts.cache, opts.pl_src)
    cov = ensure_coverage(python, opts.pl_src)
    t.build()
    t.notes.append(f"coverage.py {cov} in {python}")
    base = t.truth("main")
    t.notes.append(f"suite at {t.p.mutant_base}: {base.brief()}")
    if not base.green:
        t.log(f"WARNING: the suite is not green at {t.p.mutant_base}: {base.brief()}")
    mutants = t.add_mutants()
    for patch in t.patches:
        if patch.kind == "mutant":
            run_ = t.truth(patch.head)
            t.log(f"{patch.name}: suite at head {run_.brief()} [{patch.detail}]")
    t.add_hostile(mutants)
    bench = Bench(t, depcache, timeout)
    results = [bench.measure(p, n, len(t.patches)) for n, p in enumerate(t.patches, 1)]
    return results, t.notes


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def _median(values: Sequence[float | None]) -> float | None:
    """Return the median of the values that are not ``None``, or ``None`` when none is."""
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def _min(values: Sequence[float | None]) -> float | None:
    """Return the least of the values that are not ``None``, or ``None`` when none is."""
    kept = [v for v in values if v is not None]
    return min(kept) if kept else None


def summarise(results: Sequence[SliceResult]) -> dict[str, Any]:
    """Return the figures of ``results``: counts, median slice fractions, min recalls, red
    heads missed, median selection seconds and map recording seconds, per mode."""
    maps = [r.map_seconds for r in results if r.map_seconds is not None]

    def rnd(v: float | None, k: int = 3) -> float | None:
        """Return ``v`` rounded to ``k`` places, ``None`` kept."""
        return None if v is None else round(v, k)

    return {
        "patches": len(results),
        "red_heads": sum(r.red for r in results),
        "truth_errors": sum(r.truth == "error" for r in results),
        "median_slice_fraction_map": rnd(_median([r.fraction("map") for r in results])),
        "median_slice_fraction_off": rnd(_median([r.fraction("off") for r in results])),
        "min_recall_map": rnd(_min([r.recall_map for r in results])),
        "min_recall_off": rnd(_min([r.recall_off for r in results])),
        "red_missed_map": sum(r.red and bool(r.missed_map) for r in results),
        "red_missed_off": sum(r.red and bool(r.missed_off) for r in results),
        "median_select_seconds_map": rnd(_median([r.select_seconds_map for r in results]), 2),
        "median_select_seconds_off": rnd(_median([r.select_seconds_off for r in results]), 2),
        "maps_recorded": len(maps),
        "median_map_seconds": rnd(_median(maps), 1),
        "total_map_seconds": round(sum(maps), 1),
        "maps_not_used": sum(r.map_state == "NOT USED" for r in results),
        "empty_map_slices": sum(r.slice_map == 0 for r in results),
        "select_errors": sum(bool(r.errors) for r in results),
    }


def _pct(v: float | None) -> str:
    """Return ``v`` as a whole percentage, or ``-`` for ``None``."""
    return "-" if v is None else f"{v:.0%}"


def _num(v: float | None, fmt: str = "{:.1f}") -> str:
    """Return ``v`` formatted with ``fmt``, or ``-`` for ``None``."""
    return "-" if v is None else fmt.format(v)


def _grid(rows: list[list[str]], left: int) -> str:
    """Return ``rows`` (the first the header) as aligned text: the first ``left`` columns
    left-aligned, the rest right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for j, row in enumerate(rows):
        cells = [c.ljust(widths[i]) if i < left else c.rjust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_table(results: Sequence[SliceResult]) -> str:
    """Return the per-patch table."""
    rows = [
        ["patch", "kind", "head", "map", "fail", "suite", "off", "off%", "map", "map%",
         "recall off", "recall map", "sel s off", "sel s map", "map rec s"],
    ]  # fmt: skip
    for r in results:
        rows.append(
            [
                f"{r.project}:{r.name}", r.kind, r.truth, r.map_state or "ERROR",
                str(len(r.failing)), _num(r.suite_size, "{}"),
                _num(r.slice_off, "{}"), _pct(r.fraction("off")),
                _num(r.slice_map, "{}"), _pct(r.fraction("map")),
                _pct(r.recall_off), _pct(r.recall_map),
                _num(r.select_seconds_off), _num(r.select_seconds_map), _num(r.map_seconds),
            ]
        )  # fmt: skip
    return _grid(rows, 4)


def groups(results: Sequence[SliceResult], projects: Sequence[str]) -> dict[str, list[SliceResult]]:
    """Return the results by project, then by kind of patch (``all history`` ...), then
    ``TOTAL``: the rows of the summary."""
    out = {p: [r for r in results if r.project == p] for p in projects}
    for kind in trial.KINDS:
        if any(r.kind == kind for r in results):
            out[f"all {kind}"] = [r for r in results if r.kind == kind]
    out["TOTAL"] = list(results)
    return out


def render_summary(results: Sequence[SliceResult], projects: Sequence[str]) -> str:
    """Return the per-project and overall summary, the targets next to the figures."""
    cols = (
        ("patches", "patches", "{}"),
        ("red", "red_heads", "{}"),
        (f"slice% map (≤{TARGET_SLICE:.0%})", "median_slice_fraction_map", "%"),
        ("slice% off", "median_slice_fraction_off", "%"),
        (f"min recall map ({TARGET_RECALL:.0%})", "min_recall_map", "%"),
        ("min recall off", "min_recall_off", "%"),
        ("red missed map", "red_missed_map", "{}"),
        ("red missed off", "red_missed_off", "{}"),
        ("sel s map", "median_select_seconds_map", "{:.1f}"),
        ("sel s off", "median_select_seconds_off", "{:.1f}"),
        ("maps", "maps_recorded", "{}"),
        ("map rec s (median)", "median_map_seconds", "{:.1f}"),
        ("maps unused", "maps_not_used", "{}"),
        ("empty map slices", "empty_map_slices", "{}"),
        ("errors", "select_errors", "{}"),
    )
    rows = [["project", *(c for c, _, _ in cols)]]
    for name, subset in groups(results, projects).items():
        s = summarise(subset)
        rows.append([name, *(_pct(s[k]) if f == "%" else _num(s[k], f) for _, k, f in cols)])
    return _grid(rows, 1)


def render_findings(results: Sequence[SliceResult]) -> str:
    """Return the loud part: recall misses (with map, then without), maps not used,
    selection errors, truth errors and other notes."""
    out: list[str] = []
    missed = [r for r in results if r.red and r.missed_map]
    if missed:
        out.append(
            f"!!! {len(missed)} RED HEAD(S) WITH A FAILING TEST OUTSIDE THE WITH-MAP SLICE !!!"
        )
        for r in missed:
            out.append(f"!!!   {r.project}:{r.name} [{r.kind}] {r.detail or r.head}")
            out.append(
                f"!!!     missed {len(r.missed_map)} of {len(r.failing)}: {', '.join(r.missed_map[:8])}"
            )
            out.append(f"!!!     dependency map: {r.dependency_map}")
    else:
        out.append("red heads with a failing test outside the with-map slice: 0")
    for r in (r for r in results if r.red and r.missed_off):
        out.append(f"  without the map, {r.project}:{r.name} misses {', '.join(r.missed_off[:5])}")
    sections: list[tuple[str, Callable[[SliceResult], list[str]]]] = [
        ("map not used", lambda r: [r.dependency_map] if r.map_state == "NOT USED" else []),
        ("errors", lambda r: r.errors),
        ("truth errors", lambda r: [r.truth_detail] if r.truth == "error" else []),
        ("notes", lambda r: r.notes),
    ]
    for title, get in sections:
        lines = [f"  {r.project}:{r.name}: {line}" for r in results for line in get(r)]
        if lines:
            out += ["", f"{title}: {len(lines)}", *lines]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Return the parsed command line."""
    parser = argparse.ArgumentParser(
        prog="python bench/bench_slice.py",
        description=(
            "Measure 'patchlane replay select' on real projects' patches (bench/trial.py's): "
            "slice size with and without the dependency map, recall of the full suite's "
            "failing tests, selection and map-recording time. Exits 1 on a recall miss with "
            "the map, 2 when a project or a selection could not run."
        ),
    )
    parser.add_argument(
        "--project", action="append", choices=sorted(trial.PROJECTS), metavar="NAME",
        help=f"run this project (repeatable; default: {', '.join(trial.DEFAULT_PROJECTS)})",
    )  # fmt: skip
    parser.add_argument(
        "--mutants", type=int, default=6, metavar="N", help="seeded bugs per project (default 6)"
    )
    parser.add_argument(
        "--history",
        type=int,
        default=3,
        metavar="N",
        help="history patches per project (default 3)",
    )
    parser.add_argument(
        "--hostile",
        type=int,
        default=0,
        choices=range(4),
        metavar="N",
        help="hostile patches per project (default 0)",
    )
    parser.add_argument(
        "--seed", type=int, default=1, metavar="S", help="picks the mutants (default 1)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument(
        "--work",
        type=Path,
        metavar="DIR",
        help="keep the repositories, slices, maps and results.json here (default: a temp dir, removed)",
    )
    parser.add_argument(
        "--cache", type=Path, metavar="DIR",
        default=Path(tempfile.gettempdir()) / "patchlane-trial-cache",
        help="sdists and venvs, shared with trial.py (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--reuse-maps",
        action="store_true",
        help="keep WORK/depcache's maps from an earlier run (default: record afresh)",
    )
    parser.add_argument(
        "--patchlane-rev",
        metavar="REV",
        help="install this commit of patchlane instead of its work tree",
    )
    parser.add_argument(
        "--suite-timeout",
        type=float,
        default=300,
        metavar="S",
        help="per full-suite run (default 300: a seeded bug may loop forever)",
    )
    parser.add_argument(
        "--select-timeout",
        type=float,
        default=1800,
        metavar="S",
        help="per select call, map recording included (default 1800)",
    )
    args = parser.parse_args(argv)
    if args.mutants < 0 or args.history < 0:
        parser.error("--mutants and --history take a number >= 0")
    return args


def run_all(
    args: argparse.Namespace, work: Path, pl_src: Path
) -> tuple[list[SliceResult], dict[str, list[str]], list[str]]:
    """Run every project; return (results, notes per project, projects that failed setup)."""
    depcache = work / "depcache"
    if not args.reuse_maps:
        shutil.rmtree(depcache, ignore_errors=True)
    opts = trial.Options(
        mutants=args.mutants, seed=args.seed, history=args.history, hostile=args.hostile,
        git_dirs={}, suite_timeout=args.suite_timeout, gate_timeout=args.select_timeout,
        map_style="smoke", cache=args.cache.resolve(), work=work, pl_src=pl_src,
    )  # fmt: skip
    results: list[SliceResult] = []
    notes: dict[str, list[str]] = {}
    failed: list[str] = []
    for name in args.project or trial.DEFAULT_PROJECTS:
        t0 = time.monotonic()
        try:
            found, notes[name] = bench_project(name, opts, depcache, args.select_timeout)
            results += found
        except trial.TrialError as e:
            say(f"[{name}] SETUP ERROR: {e}")
            notes[name] = [f"setup error: {e}"]
            failed.append(name)
        notes[name].insert(0, f"{time.monotonic() - t0:.0f} s for the project")
    return results, notes, failed


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; return the exit status (1 recall miss with the map, 2 a project or
    a selection that could not run, else 0)."""
    args = parse_args(argv)
    started = time.monotonic()
    args.cache.mkdir(parents=True, exist_ok=True)
    work = (args.work or Path(tempfile.mkdtemp(prefix="patchlane-bench-slice-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        pl_src, pl_label = trial.patchlane_source(args.patchlane_rev, None, args.cache.resolve())
        say(f"patchlane under test: {pl_label}")
        results, notes, failed = run_all(args, work, pl_src)
    except trial.TrialError as e:
        say(f"setup error: {e}")
        return 2
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    projects = list(args.project or trial.DEFAULT_PROJECTS)
    meta = {
        "command": " ".join(
            ["python", "bench/bench_slice.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "patchlane": pl_label,
        "targets": {"median_slice_fraction_map": TARGET_SLICE, "min_recall_map": TARGET_RECALL},
        "seconds": round(time.monotonic() - started, 1),
    }
    payload = {
        "meta": meta,
        "summary": {name: summarise(rows) for name, rows in groups(results, projects).items()},
        "setup_failed": failed,
        "notes": notes,
        "results": [asdict(r) | {"red": r.red} for r in results],
    }
    if args.work is not None:
        (work / "results.json").write_text(json.dumps(payload, indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        print(render_table(results), render_summary(results, projects), sep="\n\n")
        print("\n" + render_findings(results) + "\n")
        for name, lines in notes.items():
            print("\n".join(f"note [{name}]: {line}" for line in lines))
        print(f"patchlane under test: {pl_label}; {meta['seconds']:.0f} s in all")
    if any(r.red and r.missed_map for r in results):
        return 1
    return 2 if failed or any(r.errors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
