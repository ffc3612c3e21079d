"""Honest history: gate real projects' own recent commits and check that none is held back.

Issue 29's "Done when" on real projects: on >= 30 honest commits (tomli, attrs, boltons,
sqlparse; rich on request) the gate's checks turn no honest commit ``undecided`` or
``reject``, no red head is accepted, and a warm gate costs what it cost before (<= 20% more).

For each project, from a bare copy of its git repository kept in ``--cache`` (cloned once from
the ``fetch``ed mirror, or ``--git NAME=GITDIR``), the newest ``--commits`` non-merge commits
reachable from a pinned tip that change a ``.py`` file of the project's code are taken (base =
first parent). ``trial.py``'s machinery builds a trial repository (the same review map and
freeze registry on every commit; ``--map-style smoke`` by default, because with ``init``'s map
a source change is never more than ``undecided``), then per commit:

1. the truth: the full plain suite (``python -m pytest``) at the head, from a clean export;
2. a cold gate (``patchlane gate --replay local``; it records the base's dependency map);
3. a warm gate (the same patch again: the map is reused), whose wall time is the figure.

It prints per commit the verdicts, the plain suite's result, the walls and the reasons of any
verdict other than ``accept_for_review``, then a summary. ``--json FILE`` and ``--md FILE``
write the results; ``--compare OLD.json`` adds, per commit, the old verdict and warm wall
next to the new ones and flags every commit held back now that was not before.

Exit 1 when a red head got ``accept_for_review`` (or, with ``--compare``, a commit accepted
before is held back now), 2 when the trial could not be set up, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import trial  # noqa: E402  (bench/trial.py, next to this file)

MIRRORS = Path("/work/.mirror")
# The replay report's entries for issue 29's checks, kept in the results when present.
CHECK_KEYS = (
    "copied_values",
    "vacuity_counts",
    "vacuity_events",
    "cannot_fail",
    "order_dependent",
)
# A reason or note that reports values the patch copied from the tests (issue 29's scan).
COPIED_PATTERN = r"(?i)(cop(y|ied)\w*\W+(\w+\W+){0,3}values?|values?\W+(\w+\W+){0,3}cop(y|ied))"


@dataclass(frozen=True)
class Spec:
    """One project of the honest trial: how to build and test it, and where its history is."""

    project: trial.Project
    upstream: str  # owner/name on GitHub (the mirror is MIRRORS/owner+name/repo)
    tip: str  # the newest commit considered: the selection is the same on every rerun
    commits: int  # default number of commits
    default: bool = True
    weight: float = 1.0  # a commit's rough cost, for sharing projects between --jobs lanes


def _project(name: str, packages: tuple[str, ...], **kw: Any) -> trial.Project:
    return trial.Project(
        name=name,
        dist=name,
        versions=(),
        mutant_base="",
        packages=packages,
        tests=("tests/",),
        **kw,
    )


SPECS: dict[str, Spec] = {
    "tomli": Spec(
        _project(
            "tomli",
            ("src/tomli/",),
            imports=("tomli",),
            deps=("pytest",),
            pythonpath=("src",),
            note="src layout, unittest style; suite ~1 s",
        ),
        "hukkin/tomli",
        "920e20b",
        10,
    ),
    "attrs": Spec(
        _project(
            "attrs",
            ("src/attr/", "src/attrs/"),
            imports=("attr", "attrs"),
            deps=("pytest", "hypothesis", "pympler", "cloudpickle"),
            pythonpath=("src",),
            drop_tests=trial.PROJECTS["attrs"].drop_tests,
            note="src layout, [tool.pytest] (pytest 9), importlib mode, Hypothesis",
        ),
        "python-attrs/attrs",
        "c1dc5dcb",
        8,
        weight=12.0,
    ),
    "boltons": Spec(
        _project(
            "boltons",
            ("boltons/",),
            imports=("boltons",),
            deps=("pytest",),
            note="flat layout, tests/conftest.py; suite ~5 s",
        ),
        "mahmoud/boltons",
        "967864f",
        10,
        weight=2.0,
    ),
    "sqlparse": Spec(
        _project(
            "sqlparse",
            ("sqlparse/",),
            imports=("sqlparse",),
            deps=("pytest",),
            note="flat layout; suite ~5 s",
        ),
        "andialbrecht/sqlparse",
        "60cdc64",
        10,
        weight=2.5,
    ),
    "rich": Spec(
        _project(
            "rich",
            ("rich/",),
            imports=("rich",),
            # rich's tip (2026-02) renders syntax as Pygments 2.19 does: with 2.20 and later
            # 7 tests (test_syntax, test_card) fail at every commit, base and head alike.
            deps=("pytest", "pygments<2.20", "markdown-it-py", "attrs", "typing-extensions"),
            note="flat layout, ~900 tests; suite ~10 s",
        ),
        "Textualize/rich",
        "42899d8a",
        6,
        weight=4.0,
        default=False,
    ),
    "packaging": Spec(
        _project(
            "packaging",
            ("src/packaging/",),
            imports=("packaging", "packaging.version", "packaging.specifiers"),
            deps=("pytest", "pretend", "tomli_w", "hypothesis", "pip"),
            pythonpath=("src",),
            # pytest checks minversion with the *installed* packaging before pythonpath
            # applies (trial.py's packaging): its tests would import the venv's copy.
            drop_ini=("minversion",),
            note="src layout, ~64,000 parametrized tests; suite over 60 s",
        ),
        "pypa/packaging",
        "053c8846",
        4,
        weight=12.0,
        default=False,
    ),
}


# --------------------------------------------------------------------------------------------
# Setup: the repository copy, the commits, the venv, the trial repository
# --------------------------------------------------------------------------------------------


def repo_copy(spec: Spec, cache: Path, source: Path | None) -> Path:
    """Return a bare copy of the project's repository in ``cache`` (cloned once)."""
    dest = cache / "repos" / f"{spec.project.name}.git"
    if not (dest / "HEAD").is_file():
        src = source or MIRRORS / spec.upstream.replace("/", "+") / "repo"
        if not src.is_dir():
            raise trial.TrialError(
                f"{spec.project.name}: no repository at {src} (fetch github:{spec.upstream}, "
                f"or pass --git {spec.project.name}=GITDIR)"
            )
        trial.say(f"[{spec.project.name}] cloning {src} into {dest}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        trial.run(["git", "clone", "-q", "--bare", src, dest], check=True, timeout=900)
    return dest


def pick_commits(spec: Spec, git_dir: Path, count: int) -> list[tuple[str, str]]:
    """Return ``[(first parent, commit)]``, oldest first: the newest ``count`` non-merge
    commits reachable from the spec's tip that change a ``.py`` file under its packages."""
    tip = trial.git(git_dir, "rev-parse", "--verify", f"{spec.tip}^{{commit}}").strip()
    specs = [f":(glob){p.rstrip('/')}/**/*.py" for p in spec.project.packages]
    out = trial.git(git_dir, "rev-list", "--no-merges", f"--max-count={count}", tip, "--", *specs)
    pairs = []
    for commit in out.split():
        parents = trial.git(git_dir, "rev-list", "--parents", "-n", "1", commit).split()[1:]
        if parents:
            pairs.append((parents[0], commit))
    pairs.reverse()
    return pairs


def export(spec: Spec, git_dir: Path, rev: str, cache: Path) -> Path:
    """Return the clean tree of ``rev`` (exported once into the cache)."""
    dest = cache / "git" / spec.project.name / rev[:12]
    if not dest.is_dir():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        # As trial.export_commit (a temporary index; export-ignore attributes ignored), for a
        # bare repository: checkout-index needs a work tree.
        with tempfile.TemporaryDirectory(prefix="honest-index-") as idx:
            env = {"GIT_INDEX_FILE": os.fspath(Path(idx) / "index")}
            tree = ["--work-tree", os.fspath(tmp)]
            trial.git(git_dir, *tree, "read-tree", rev, env=env)
            trial.git(git_dir, *tree, "checkout-index", "-a", "-f", env=env)
        tmp.rename(dest)
    return dest


def ensure_venv(spec: Spec, cache: Path, pl_src: Path) -> Path:
    """Return the python of the project's venv in ``cache``: its test dependencies from PyPI
    (installed again when the list changed) and patchlane (editable, from ``pl_src``)."""
    venv = cache / "venvs" / spec.project.name
    python = venv / "bin" / "python"
    marker = venv / "honest-deps.txt"
    wanted = "".join(f"{d}\n" for d in spec.project.deps)
    if not python.exists() or not marker.is_file() or marker.read_text() != wanted:
        if not python.exists():
            trial.run([sys.executable, "-m", "venv", venv], check=True, timeout=600)
        trial.say(f"[{spec.project.name}] pip install {' '.join(spec.project.deps)}")
        argv: list[str | Path] = [python, "-m", "pip", "install", "-q", *spec.project.deps]
        trial.run(argv, check=True, timeout=1200)
        marker.write_text(wanted)
    return trial.ensure_venv(spec.project, cache, pl_src)


def add_pythonpath(pyproject: Path, paths: Sequence[str]) -> None:
    """Put pytest's ``pythonpath`` into ``pyproject``: under ``[tool.pytest.ini_options]`` or
    pytest 9's ``[tool.pytest]``, else in a new ``[tool.pytest.ini_options]`` (a src layout's
    tests then import the tree's package, never an installed copy). Raises ``TrialError``
    when the file already sets one."""
    text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    line = f"pythonpath = {json.dumps(list(paths))}\n"
    if re.search(r"(?m)^pythonpath\s*=", text):
        raise trial.TrialError(f"{pyproject}: already sets pythonpath")
    for header in ("[tool.pytest.ini_options]\n", "[tool.pytest]\n"):
        if header in text:
            pyproject.write_text(text.replace(header, header + line, 1), encoding="utf-8")
            return
    pyproject.write_text(text.rstrip("\n") + "\n\n[tool.pytest.ini_options]\n" + line)


def stage(spec: Spec, tree: Path, overlay: trial.Overlay, dest: Path) -> None:
    """``tree`` plus the overlay, with the spec's ``pythonpath`` and its tests dropped."""
    trial.stage(tree, overlay, dest, dataclasses.replace(spec.project, pythonpath=()))
    if not spec.project.pythonpath:
        return
    if has_pytest_config(dest):
        add_pythonpath(dest / "pyproject.toml", spec.project.pythonpath)
    else:
        # No pytest configuration at all (tomli): a pytest.ini of our own, the same on every
        # commit, so that a commit editing pyproject.toml (a version bump) does not become a
        # change to the test harness only because the trial put pytest's settings there.
        paths = " ".join(spec.project.pythonpath)
        (dest / "pytest.ini").write_text(f"[pytest]\npythonpath = {paths}\n", encoding="utf-8")


def has_pytest_config(tree: Path) -> bool:
    """Whether ``tree`` configures pytest anywhere pytest looks (pyproject, tox.ini,
    setup.cfg, pytest.ini)."""
    checks = {
        "pyproject.toml": r"(?m)^\[tool\.pytest(\.ini_options)?\]",
        "tox.ini": r"(?m)^\[pytest\]",
        "setup.cfg": r"(?m)^\[tool:pytest\]",
        "pytest.ini": r"",
        ".pytest.ini": r"",
    }
    for name, pattern in checks.items():
        path = tree / name
        if path.is_file() and re.search(
            pattern, path.read_text(encoding="utf-8", errors="replace")
        ):
            return True
    return False


# --------------------------------------------------------------------------------------------
# Running: the plain suite, the gates
# --------------------------------------------------------------------------------------------


def bench_env(work: Path) -> dict[str, str]:
    """The environment of every measured process (gates and plain suites alike): patchlane's
    cache in ``WORK/plcache``, bytecode under ``WORK/pycache`` (as bench_overhead.py)."""
    env = trial.clean_env({"PATCHLANE_CACHE_DIR": os.fspath(work / "plcache")})
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PATCHLANE_DEP_MAP", None)
    env["PYTHONPYCACHEPREFIX"] = os.fspath(work / "pycache")
    return env


def load1() -> float:
    return os.getloadavg()[0]


@dataclass
class Gate:
    """One gate process: its verdict, reasons, wall, steps and slice."""

    verdict: str
    exit: int | None
    reasons: list[str]
    seconds: float
    slice_size: int | None
    suite_size: int | None
    dependency_map: str
    timings: dict[str, float]
    load1: float
    notes: list[str]  # every reason and note of the evidence, for the copied-values count
    # What the replay report says of the new checks (issue 29), where it has the keys.
    checks: dict[str, Any] = field(default_factory=dict)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def run_gate(
    python: Path, repo: Path, patch: trial.Patch, out: Path, env: dict[str, str], timeout: float
) -> Gate:
    """Gate ``patch`` with ``--replay local`` and read its evidence."""
    loaded = load1()
    extra = ["--dep-map", "auto", "--dep-cache", env["PATCHLANE_CACHE_DIR"]]
    g = trial.gate(python, repo, patch, out, timeout, extra=extra, env=env)
    verdict = _read(out / "verdict.json")
    replay = _read(out / "replay-report.json")
    review = (
        (out / "review.md").read_text(encoding="utf-8") if (out / "review.md").is_file() else ""
    )
    notes = [*g["reasons"], *_strings(replay.get("notes")), *_strings(verdict.get("notes"))]
    notes += [line for line in review.splitlines() if re.search(COPIED_PATTERN, line)]
    timings = {
        k: float(v)
        for k, v in (verdict.get("timings") or {}).items()
        if isinstance(v, (int, float))
    }
    return Gate(
        verdict=str(g["verdict"]),
        exit=g["exit"],
        reasons=g["reasons"],
        seconds=round(g["seconds"], 2),
        slice_size=replay.get("slice_count", g["slice_size"]),
        suite_size=replay.get("suite_size"),
        dependency_map=str(replay.get("dependency_map") or ""),
        timings=timings,
        load1=round(loaded, 2),
        notes=notes,
        checks={k: replay[k] for k in CHECK_KEYS if replay.get(k) not in (None, [], {}, "")},
    )


@dataclass
class Suite:
    """The full plain suite at a head: ``python -m pytest`` over the project's tests."""

    truth: str  # green, red, error (timeout or pytest could not run the suite)
    exit: int | None
    brief: str
    tests: int
    failed: list[str]
    seconds: float


def plain_suite(spec: Spec, python: Path, tree: Path, env: dict[str, str], timeout: float) -> Suite:
    """Run the project's full suite at ``tree`` as a user would, with ``python -m pytest``."""
    targets = [t for t in spec.project.tests if (tree / t).exists()] or list(spec.project.tests)
    argv = trial.pytest_argv(python, targets, "--tb=short")
    proc = trial.run(argv, cwd=tree, env={**env, "PYTHONHASHSEED": "0"}, timeout=timeout)
    counts, failed, subfailed = trial.parse_pytest_output(proc.stdout + proc.stderr)
    run = trial.SuiteRun(proc.returncode, proc.seconds, counts, failed, subfailed, "")
    # 1: tests failed; 2: collection errors (the head is red too). None: timed out.
    truth = {0: "green", 1: "red", 2: "red"}.get(proc.returncode, "error")  # type: ignore[arg-type]
    return Suite(
        truth, proc.returncode, run.brief(), run.tests, failed + subfailed, round(proc.seconds, 2)
    )


@dataclass
class Result:
    """One honest commit: the truth, the cold and the warm gate."""

    project: str
    index: int
    base: str  # full commit ids in the project's repository
    commit: str
    subject: str
    files: list[str]
    suite: Suite
    cold: Gate
    warm: Gate
    copied_notes: list[str] = field(default_factory=list)
    # --against REV: the same commit gated by that patchlane, in the same run (alternating
    # which goes first), so that the walls compare under the same load.
    against_cold: Gate | None = None
    against_warm: Gate | None = None

    @property
    def ratio(self) -> float | None:
        return round(self.warm.seconds / self.suite.seconds, 2) if self.suite.seconds else None


class HonestTrial:
    """One project: its repository, its commits, its trial repository, its gates."""

    def __init__(
        self,
        spec: Spec,
        args: argparse.Namespace,
        pl_src: Path,
        work: Path,
        against: Path | None = None,
    ) -> None:
        self.spec = spec
        self.args = args
        self.cache: Path = args.cache
        self.pl_src = pl_src
        self.against = against  # --against: that patchlane's source tree
        self.root = work / spec.project.name
        self.repo = self.root / "repo"
        self.env = bench_env(work)
        self.env_against = bench_env(work / "against")
        self.python = Path()
        self.python_against = Path()
        self.pairs: list[tuple[str, str]] = []
        self.commits: dict[str, str] = {}
        self.notes: list[str] = []

    def log(self, message: str) -> None:
        trial.say(f"[{self.spec.project.name}] {message}")

    def build(self) -> None:
        name = self.spec.project.name
        git_dir = repo_copy(self.spec, self.cache, self.args.git_dirs.get(name))
        self.git_dir = git_dir
        if self.args.from_run is not None:
            # Exactly the commits of an earlier run (the baseline), so the two compare.
            rows = load_run(self.args.from_run)["results"]
            mine = sorted((r for r in rows if r["project"] == name), key=lambda r: r["index"])
            self.pairs = [(r["base"], r["commit"]) for r in mine]
        else:
            count = self.args.commits or self.spec.commits
            self.pairs = pick_commits(self.spec, git_dir, count)
        self.log(f"{len(self.pairs)} commits: {' '.join(c[:9] for _, c in self.pairs)}")
        self.python = ensure_venv(self.spec, self.cache, self.pl_src)
        if self.against is not None:
            # A venv of its own (NAME@against): patchlane is installed editable, one per venv.
            spec = dataclasses.replace(
                self.spec, project=dataclasses.replace(self.spec.project, name=f"{name}@against")
            )
            self.python_against = ensure_venv(spec, self.cache, self.against)
        trees = {
            rev: export(self.spec, git_dir, rev, self.cache) for pair in self.pairs for rev in pair
        }
        overlay = trial.make_overlay(
            self.spec.project, self.python, list(trees.values()), self.args.map_style
        )
        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True)
        trial.git(self.root, "init", "-q", "-b", "main", "repo")
        trial.git(self.repo, "config", "core.fsmonitor", "false")
        chain: str | None = None
        for i, (base, head) in enumerate(self.pairs, 1):
            b = self._commit(trees[base], overlay, chain, f"{base[:12]} (base of {i})")
            h = self._commit(trees[head], overlay, b, f"{head[:12]}")
            trial.set_branch(self.repo, f"b/{i:02d}", b)
            trial.set_branch(self.repo, f"h/{i:02d}", h)
            self.commits[f"b/{i:02d}"], self.commits[f"h/{i:02d}"] = b, h
            chain = h
        trial.set_branch(self.repo, "main", chain or "")
        trial.git(self.repo, "checkout", "-q", "-f", "main")
        self.notes += [f"patchlane init: {n}" for n in overlay.init_notes]

    def _commit(self, tree: Path, overlay: trial.Overlay, parent: str | None, msg: str) -> str:
        staged = self.root / "stage"
        shutil.rmtree(staged, ignore_errors=True)
        stage(self.spec, tree, overlay, staged)
        commit = trial.commit_dir(self.repo, staged, parent, msg)
        shutil.rmtree(staged)
        return commit

    def run_all(self) -> list[Result]:
        """Run every commit; each row is also appended to ``WORK/rows.jsonl`` as it is done,
        so that a run stopped half-way can still be reported (``--merge WORK/rows.jsonl``)."""
        results = []
        for i, (base, head) in enumerate(self.pairs, 1):
            result = self.run_one(i, base, head)
            results.append(result)
            row = asdict(result) | {"ratio": result.ratio}
            with (self.root.parent / "rows.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
        return results

    def run_one(self, i: int, base: str, head: str) -> Result:
        patch = trial.Patch(
            self.spec.project.name, f"c{i:02d}", "history", f"b/{i:02d}", f"h/{i:02d}"
        )
        subject = trial.git(self.git_dir, "log", "-1", "--format=%s", head).strip()
        files = trial.changed_paths(self.repo, self.commits[patch.base], self.commits[patch.head])
        checkout = self.root / "checkout"
        shutil.rmtree(checkout, ignore_errors=True)
        trial.export_commit(self.repo / ".git", self.commits[patch.head], checkout)
        suite = plain_suite(self.spec, self.python, checkout, self.env, self.args.suite_timeout)
        shutil.rmtree(checkout)
        self.log(
            f"{i}/{len(self.pairs)} {head[:9]} {subject[:50]!r}: suite {suite.brief} "
            f"in {suite.seconds:.1f} s"
        )
        evidence = self.root / "evidence" / patch.name
        gates: dict[str, tuple[Gate, Gate]] = {}
        order = ["under trial", "against"] if self.against is not None else ["under trial"]
        for who in order if i % 2 else order[::-1]:
            python, env = (
                (self.python, self.env)
                if who == "under trial"
                else (self.python_against, self.env_against)
            )
            where = evidence / ("against" if who == "against" else "")
            timeout = self.args.gate_timeout
            cold = run_gate(python, self.repo, patch, where / "cold", env, timeout)
            warm = run_gate(python, self.repo, patch, where / "warm", env, timeout)
            gates[who] = (cold, warm)
            self.log(
                f"{i}/{len(self.pairs)} {who}: cold {cold.verdict} {cold.seconds:.1f} s, warm "
                f"{warm.verdict} {warm.seconds:.1f} s ({warm.dependency_map or 'no map'})"
            )
        cold, warm = gates["under trial"]
        copied = sorted({n for g in (cold, warm) for n in g.notes if re.search(COPIED_PATTERN, n)})
        copied += [f"copied_values: {v}" for v in warm.checks.get("copied_values", [])]
        result = Result(
            self.spec.project.name, i, base, head, subject, files, suite, cold, warm, copied
        )
        if "against" in gates:
            result.against_cold, result.against_warm = gates["against"]
        return result


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------

SHORT_VERDICT = {"accept_for_review": "accept", "undecided": "UNDECIDED", "reject": "REJECT"}


def _v(verdict: str) -> str:
    return SHORT_VERDICT.get(verdict, verdict.upper())


def _median(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return round(statistics.median(got), 2) if got else None


def held(r: dict[str, Any]) -> bool:
    """An honest commit held back: either gate said something other than accept."""
    return any(r[g]["verdict"] != "accept_for_review" for g in ("cold", "warm"))


def summary(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for name in [*names, "TOTAL"]:
        sub = [r for r in rows if name == "TOTAL" or r["project"] == name]
        if not sub:
            continue
        warm = [r["warm"]["verdict"] for r in sub]
        out.append(
            {
                "project": name,
                "commits": len(sub),
                "green_heads": sum(r["suite"]["truth"] == "green" for r in sub),
                "accept": warm.count("accept_for_review"),
                "reject": warm.count("reject"),
                "undecided": warm.count("undecided"),
                "other": sum(v not in SHORT_VERDICT for v in warm),
                "cold_warm_differ": sum(r["cold"]["verdict"] != r["warm"]["verdict"] for r in sub),
                "red_accepted": sum(
                    r["suite"]["truth"] == "red"
                    and "accept_for_review" in (r["cold"]["verdict"], r["warm"]["verdict"])
                    for r in sub
                ),
                "copied_notes": sum(bool(r["copied_notes"]) for r in sub),
                "copied_values": sum(
                    len(r["warm"].get("checks", {}).get("copied_values", [])) for r in sub
                ),
                "median_warm_s": _median([r["warm"]["seconds"] for r in sub]),
                "median_suite_s": _median([r["suite"]["seconds"] for r in sub]),
                "median_warm_over_suite": _median([r["ratio"] for r in sub]),
                "median_cold_s": _median([r["cold"]["seconds"] for r in sub]),
            }
        )
    return out


def table(rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table (first row: the header)."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def render(payload: dict[str, Any], old: dict[str, Any] | None) -> str:
    rows = payload["results"]
    before = {(r["project"], r["commit"]): r for r in (old or {}).get("results", [])}
    head = [
        "project",
        "#",
        "commit",
        "subject",
        "suite",
        "suite s",
        "cold",
        "cold s",
        "warm",
        "warm s",
        "warm/suite",
        "slice",
    ]
    if old is not None:
        head += ["before", "warm s before", "after/before"]
    out = [head]
    for r in rows:
        w = r["warm"]
        cells = [
            r["project"],
            str(r["index"]),
            r["commit"][:9],
            trial._cut(r["subject"], 44),
            f"{r['suite']['truth']} ({r['suite']['tests']})",
            f"{r['suite']['seconds']:.1f}",
            _v(r["cold"]["verdict"]),
            f"{r['cold']['seconds']:.1f}",
            _v(w["verdict"]),
            f"{w['seconds']:.1f}",
            f"{r['ratio']}",
            f"{w['slice_size'] if w['slice_size'] is not None else '-'}/{w['suite_size'] or '-'}",
        ]
        if old is not None:
            b = before.get((r["project"], r["commit"]))
            if b is None:
                cells += ["-", "-", "-"]
            else:
                bw = b["warm"]["seconds"]
                cells += [
                    _v(b["warm"]["verdict"]),
                    f"{bw:.1f}",
                    f"{w['seconds'] / bw:.2f}" if bw else "-",
                ]
        out.append(cells)
    text = [table(out), ""]
    cols = [
        "project",
        "commits",
        "green_heads",
        "accept",
        "reject",
        "undecided",
        "other",
        "cold_warm_differ",
        "red_accepted",
        "copied_notes",
        "copied_values",
        "median_suite_s",
        "median_warm_s",
        "median_warm_over_suite",
        "median_cold_s",
    ]
    summ = payload["summary"]
    text.append(table([cols, *[[str(s[c]) for c in cols] for s in summ]]))
    text.append("")
    heldback = [r for r in rows if held(r)]
    text.append(f"honest commits held back (cold or warm not accept_for_review): {len(heldback)}")
    for r in heldback:
        text.append(
            f"- {r['project']} {r['commit'][:9]} ({trial._cut(r['subject'], 60)}): "
            f"suite {r['suite']['truth']}, cold {r['cold']['verdict']}, "
            f"warm {r['warm']['verdict']}"
        )
        for reason in dict.fromkeys(r["warm"]["reasons"] + r["cold"]["reasons"]):
            text.append(f"    - {trial._cut(reason, 400)}")
    red = [r for r in rows if r["suite"]["truth"] != "green"]
    text.append("")
    text.append(f"heads whose plain suite is not green: {len(red)}")
    for r in red:
        text.append(
            f"- {r['project']} {r['commit'][:9]}: {r['suite']['brief']}; "
            f"failed {', '.join(r['suite']['failed'][:4])}; "
            f"cold {r['cold']['verdict']}, warm {r['warm']['verdict']}"
        )
    copied = [(r, n) for r in rows for n in r["copied_notes"]]
    text.append("")
    text.append(f"copied-values notes: {len(copied)}")
    for r, n in copied:
        text.append(f"- {r['project']} {r['commit'][:9]}: {trial._cut(n, 300)}")
    # Whether the new checks ran at all: a check that never ran proves nothing.
    counted = [r["warm"].get("checks", {}).get("vacuity_counts") or {} for r in rows]
    totals: dict[str, float] = {}
    for counts in counted:
        for key, value in counts.items():
            if isinstance(value, (int, float)):
                totals[key] = totals.get(key, 0) + value
    text.append("")
    text.append(
        f"warm gates whose replay report has vacuity_counts: {sum(bool(c) for c in counted)} "
        f"of {len(rows)}; summed: {json.dumps(totals) if totals else '-'}"
    )
    for key in ("cannot_fail", "order_dependent", "vacuity_events"):
        hits = [r for r in rows if r["warm"].get("checks", {}).get(key)]
        text.append(f"warm gates with {key}: {len(hits)}")
        for r in hits:
            shown = trial._cut(json.dumps(r["warm"]["checks"][key]), 300)
            text.append(f"- {r['project']} {r['commit'][:9]}: {shown}")
    if old is not None:
        text += ["", *compare(payload, old)]
    return "\n".join(text)


def compare(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    """The lines that say what changed from ``old`` to ``new`` on the same commits."""
    before = {(r["project"], r["commit"]): r for r in old.get("results", [])}
    same = [(before[k], r) for r in new["results"] if (k := (r["project"], r["commit"])) in before]
    out = [f"compared with {old.get('meta', {}).get('patchlane')}: {len(same)} commits in both"]
    newly = [(b, r) for b, r in same if held(r) and not held(b)]
    out.append(f"held back now, accepted before: {len(newly)}")
    for b, r in newly:
        out.append(
            f"- {r['project']} {r['commit'][:9]}: {b['warm']['verdict']} -> "
            f"{r['warm']['verdict']}: {'; '.join(r['warm']['reasons'] or r['cold']['reasons'])}"
        )
    again = [(b, r) for b, r in same if held(b) and held(r)]
    out.append(f"held back before and now: {len(again)}; the reasons that are new:")
    for b, r in again:
        old_reasons = set(b["warm"]["reasons"] + b["cold"]["reasons"])
        fresh = [x for x in dict.fromkeys(r["warm"]["reasons"] + r["cold"]["reasons"])]
        fresh = [x for x in fresh if x not in old_reasons]
        verdicts = f"{b['warm']['verdict']} -> {r['warm']['verdict']}"
        out.append(f"- {r['project']} {r['commit'][:9]}: {verdicts}: {'; '.join(fresh) or '-'}")
    freed = [(b, r) for b, r in same if held(b) and not held(r)]
    out.append(f"accepted now, held back before: {len(freed)}")
    for b, r in freed:
        out.append(f"- {r['project']} {r['commit'][:9]}: {b['warm']['verdict']} -> accept")
    ratios = [r["warm"]["seconds"] / b["warm"]["seconds"] for b, r in same if b["warm"]["seconds"]]
    norm = [
        (r["warm"]["seconds"] / r["suite"]["seconds"])
        / (b["warm"]["seconds"] / b["suite"]["seconds"])
        for b, r in same
        if b["warm"]["seconds"] and r["suite"]["seconds"] and b["suite"]["seconds"]
    ]
    med = _median(ratios)
    out.append(
        f"warm gate wall, now / before, median over commits: {med} "
        f"(per project: "
        + ", ".join(
            f"{p} {_median([r['warm']['seconds'] / b['warm']['seconds'] for b, r in same if r['project'] == p and b['warm']['seconds']])}"
            for p in dict.fromkeys(r["project"] for _, r in same)
        )
        + ")"
    )
    out.append(
        f"the same, each divided by its own run's plain suite wall (load-normalised): "
        f"{_median(norm)}"
    )
    steps = list(dict.fromkeys(k for _, r in same for k in r["warm"]["timings"]))
    steps += [k for b, _ in same for k in b["warm"]["timings"] if k not in steps]
    out.append("warm gate steps (verdict.json timings), median seconds before -> now:")
    for step in dict.fromkeys(steps):
        was = _median([b["warm"]["timings"].get(step, 0.0) for b, _ in same])
        now = _median([r["warm"]["timings"].get(step, 0.0) for _, r in same])
        out.append(f"- {step}: {was} -> {now}")
    out.append(
        f"sum of warm gate walls now / before: "
        f"{round(sum(r['warm']['seconds'] for _, r in same) / max(sum(b['warm']['seconds'] for b, _ in same), 1e-9), 2)}"
    )
    return out


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def add_run_arguments(parser: argparse.ArgumentParser, *, work_help: str) -> None:
    """Add the options every trial of real projects shares (``--cache``, ``--work``, the
    patchlane under trial, the timeouts, ``--json`` and ``--md``) to ``parser``; returns
    nothing. ``side_by_side`` uses it too."""
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "patchlane-trial-cache",
        help="repository copies, exported trees, venvs (default: %(default)s)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        metavar="DIR",
        help=work_help,
    )
    parser.add_argument(
        "--patchlane-src",
        type=Path,
        metavar="DIR",
        help="the patchlane checkout to install (default: this one)",
    )
    parser.add_argument(
        "--patchlane-rev",
        metavar="REV",
        help="install this commit of the checkout (exported with git archive)",
    )
    parser.add_argument("--suite-timeout", type=float, default=900, metavar="S")
    parser.add_argument("--gate-timeout", type=float, default=1200, metavar="S")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the results here")
    parser.add_argument("--md", type=Path, metavar="FILE", help="write the report here")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    known = "\n".join(
        f"  {n:<9} {s.upstream} @ {s.tip[:9]}, {s.commits} commits"
        f"{'' if s.default else ' (not a default)'}: {s.project.note}"
        for n, s in SPECS.items()
    )
    parser = argparse.ArgumentParser(
        prog="python bench/honest_history.py",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog=f"projects:\n{known}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--project",
        action="append",
        choices=sorted(SPECS),
        metavar="NAME",
        help="run this project (repeatable; default: every default project)",
    )
    parser.add_argument(
        "--commits",
        type=int,
        metavar="N",
        help="commits per project (default: the project's own, 8-10)",
    )
    parser.add_argument(
        "--git",
        action="append",
        default=[],
        metavar="NAME=GITDIR",
        help="clone NAME's repository from GITDIR (default: the fetch mirror "
        f"under {MIRRORS}); used once, then the copy in --cache",
    )
    parser.add_argument(
        "--map-style",
        choices=("smoke", "init"),
        default="smoke",
        help="the review map (trial.py's; default smoke: with init's map a "
        "source change is never more than undecided)",
    )
    add_run_arguments(
        parser,
        work_help="trial repositories, evidence and patchlane's caches "
        "(default: a fresh temporary directory, removed at the end)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="OLD.json",
        help="a previous --json: show old verdicts and walls beside the new",
    )
    parser.add_argument(
        "--against",
        metavar="REV",
        help="also gate every commit with this commit of the checkout (its own venvs, "
        "NAME@against), alternating which goes first, and compare the two in the report",
    )
    parser.add_argument(
        "--from-run",
        type=Path,
        metavar="RUN.json",
        help="gate exactly the commits of that run's --json (or rows.jsonl) instead of the "
        "newest ones: a rerun compares on the same commits",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="run the projects in N lanes at the same time, each a child process (default 1)",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        metavar="RUN.json",
        help="run nothing: report on these runs' --json files together",
    )
    args = parser.parse_args(argv)
    args.git_dirs = {}
    for item in args.git:
        name, sep, path = item.partition("=")
        if not sep or name not in SPECS or not Path(path).is_dir():
            parser.error(f"--git {item}: expected NAME=GITDIR with a known project")
        args.git_dirs[name] = Path(path).resolve()
    if args.compare is not None and not args.compare.is_file():
        parser.error(f"--compare {args.compare}: no such file")
    args.cache = args.cache.resolve()
    return args


def run_projects(
    args: argparse.Namespace, names: Sequence[str], work: Path
) -> tuple[list[dict[str, Any]], dict[str, list[str]], str]:
    """Run ``names`` one after another in this process; return the rows, notes and label."""
    pl_src, pl_label = trial.patchlane_source(args.patchlane_rev, args.patchlane_src, args.cache)
    trial.say(f"patchlane under trial: {pl_label}")
    against = None
    if args.against is not None:
        against, against_label = trial.patchlane_source(
            args.against, args.patchlane_src, args.cache
        )
        trial.say(f"patchlane against: {against_label}")
    results: list[Result] = []
    notes: dict[str, list[str]] = {}
    for name in names:
        t = HonestTrial(SPECS[name], args, pl_src, work, against)
        t0 = time.monotonic()
        try:
            t.build()
            results += t.run_all()
        except trial.TrialError as e:
            t.log(f"ERROR: {e}")
            t.notes.append(f"trial error: {e}")
        t.notes.insert(0, f"{time.monotonic() - t0:.0f} s for the project")
        notes[name] = t.notes
    return [asdict(r) | {"ratio": r.ratio} for r in results], notes, pl_label


def lanes(names: Sequence[str], jobs: int) -> list[list[str]]:
    """``names`` shared between at most ``jobs`` lanes, the costliest project first into the
    lane with the least work so far (a project's cost: its commits x its ``weight``)."""
    jobs = max(1, min(jobs, len(names)))
    out: list[list[str]] = [[] for _ in range(jobs)]
    load = [0.0] * jobs
    cost = {n: SPECS[n].commits * SPECS[n].weight for n in names}
    for name in sorted(names, key=lambda n: -cost[n]):
        k = load.index(min(load))
        out[k].append(name)
        load[k] += cost[name]
    return [lane for lane in out if lane]


def run_lanes(
    args: argparse.Namespace, names: Sequence[str], work: Path
) -> tuple[list[dict[str, Any]], dict[str, list[str]], str]:
    """Run the lanes of ``--jobs`` as child processes of this script at the same time, each
    with its own work directory and JSON; return their rows and notes merged."""
    _, pl_label = trial.patchlane_source(args.patchlane_rev, args.patchlane_src, args.cache)
    passed: list[str] = ["--cache", os.fspath(args.cache), "--map-style", args.map_style]
    passed += ["--suite-timeout", str(args.suite_timeout), "--gate-timeout", str(args.gate_timeout)]
    if args.commits:
        passed += ["--commits", str(args.commits)]
    if args.from_run is not None:
        passed += ["--from-run", os.fspath(args.from_run.resolve())]
    for name, path in args.git_dirs.items():
        passed += ["--git", f"{name}={path}"]
    if args.patchlane_src is not None:
        passed += ["--patchlane-src", os.fspath(args.patchlane_src)]
    if args.patchlane_rev is not None:
        passed += ["--patchlane-rev", args.patchlane_rev]
    if args.against is not None:
        passed += ["--against", args.against]
        trial.patchlane_source(args.against, args.patchlane_src, args.cache)  # exported once
    procs = []
    for k, lane in enumerate(lanes(names, args.jobs), 1):
        argv = [sys.executable, os.fspath(Path(__file__).resolve()), *passed]
        argv += [x for name in lane for x in ("--project", name)]
        argv += [
            "--work",
            os.fspath(work / f"lane{k}"),
            "--json",
            os.fspath(work / f"lane{k}.json"),
        ]
        trial.say(f"lane {k}: {' '.join(lane)}")
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL))
    payloads = []
    for k, proc in enumerate(procs, 1):
        code = proc.wait()
        path = work / f"lane{k}.json"
        if code not in (0, 1) or not path.is_file():
            raise trial.TrialError(f"lane {k} exited {code} without its results ({path})")
        payloads.append(json.loads(path.read_text(encoding="utf-8")))
    rows, notes = merged(payloads)
    return rows, notes, pl_label


def load_run(path: Path) -> dict[str, Any]:
    """A run's ``--json`` file, or the ``rows.jsonl`` of its work directory (a partial run)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".jsonl":
        return dict(json.loads(text))
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    meta = {"patchlane": f"partial run {path}", "command": f"(rows of {path})", "seconds": 0}
    return {"meta": meta, "results": rows, "notes": {}}


def against_run(rows: Sequence[dict[str, Any]], label: str) -> dict[str, Any]:
    """The ``--against`` gates of ``rows`` as a run of their own, to compare with."""
    results = [
        r | {"cold": r["against_cold"], "warm": r["against_warm"]}
        for r in rows
        if r.get("against_warm") and r.get("against_cold")
    ]
    return {"meta": {"patchlane": f"{label} (same run)"}, "results": results}


def merged(payloads: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The rows and notes of several runs' JSON, one after another."""
    rows = [r for p in payloads for r in p["results"]]
    notes = {n: ls for p in payloads for n, ls in p.get("notes", {}).items()}
    return rows, notes


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    names = args.project or [n for n, s in SPECS.items() if s.default]
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.merge:
        payloads = [load_run(p) for p in args.merge]
        rows, notes = merged(payloads)
        names = list(dict.fromkeys(r["project"] for r in rows))
        labels = dict.fromkeys(p["meta"]["patchlane"] for p in payloads)
        pl_label = "; ".join(labels)
        seconds = max(p["meta"]["seconds"] for p in payloads)
        command = " && ".join(p["meta"]["command"] for p in payloads)
    else:
        work = (args.work or Path(tempfile.mkdtemp(prefix="patchlane-honest-"))).resolve()
        work.mkdir(parents=True, exist_ok=True)
        try:
            if args.jobs > 1 and len(names) > 1:
                rows, notes, pl_label = run_lanes(args, names, work)
            else:
                rows, notes, pl_label = run_projects(args, names, work)
        finally:
            if args.work is None:
                shutil.rmtree(work, ignore_errors=True)
        seconds = round(time.monotonic() - started, 1)
        command = " ".join(
            ["python", "bench/honest_history.py", *(argv if argv is not None else sys.argv[1:])]
        )
    meta = {
        "patchlane": pl_label,
        "command": command,
        "map_style": args.map_style,
        "cache": os.fspath(args.cache),
        "seconds": seconds,
        "load_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    totals = summary(rows, names)
    payload = {"meta": meta, "summary": totals, "notes": notes, "results": rows}
    old = json.loads(args.compare.read_text(encoding="utf-8")) if args.compare else None
    same_run = None
    if any(r.get("against_warm") for r in rows):
        same_run = against_run(rows, args.against or "--against")
    report = render(payload, old or same_run)
    if old is not None and same_run is not None:
        report += "\n\n" + "\n".join(compare(payload, same_run))
    report += "\n\n" + "\n".join(f"note [{n}]: {line}" for n, ls in notes.items() for line in ls)
    report += f"\n\npatchlane under trial: {pl_label}; {meta['seconds']:.0f} s in all\n"
    print(report)
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    if args.md:
        args.md.write_text(f"# Honest history: `{meta['command']}`\n\n{report}", encoding="utf-8")
    red_accepted = totals[-1]["red_accepted"] if totals else 0
    newly = any(
        held(r) and not held(b)
        for o in (old, same_run)
        if o is not None
        for r in rows
        for b in o.get("results", [])
        if (b["project"], b["commit"]) == (r["project"], r["commit"])
    )
    return 1 if red_accepted or newly else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except trial.TrialError as err:
        trial.say(f"error: {err}")
        sys.exit(2)
