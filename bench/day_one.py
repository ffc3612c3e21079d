"""Day one: gate real projects as a new user adopts them with ``patchlane init`` (issue 30).

Issue 30's "Done when", measured in one command: on projects adopted by ``patchlane init``
alone (no property, map line or ignore entry written by hand), code patches get
``accept_for_review`` when the plain full suite is green at the head and ``reject`` when it
is red; no red head is accepted; none is ``undecided`` for want of properties (rule 5, "map
incomplete"); the note says the code was judged by the base's tests alone; a whitespace-only
patch is ``accept_for_review``.

Per project (``honest_history.SPECS``: boltons, sqlparse, rich, attrs), from the bare copy of
its repository in ``--cache``:

- ``commit``: the newest ``--commits`` commits that change the package's code (base = first
  parent), as ``honest_history.py`` picks them;
- ``mutant``: ``--with-mutants N`` bugs of ``trial.py``'s own generator (``ast``), and
  ``--outside-mutants N`` of Cosmic Ray's operators (``bench/outside_mutants.py``, run in a venv
  of its own in the cache with ``cosmic-ray`` from PyPI), planted in the pinned tip;
- ``whitespace``: one blank line added between two top-level statements of the package's
  largest module (the same syntax tree: checked), on the tip; attrs gets this patch alone.

Each base is committed to a trial repository, ``patchlane init`` runs there as a user runs it
(its whole output kept), and everything it wrote is committed on ``main`` as the README says.
The patch (``git diff --binary`` of the project's change) is then gated with the README's
command exactly, ``patchlane gate --replay local --patch FILE`` (the evidence into
``--out-dir``); when that stops at exit 2 the failure is recorded ("README command") and the
gate runs again with the ``--seed`` that ``init``'s ``next:`` line names. The truth is
``python -m pytest`` over the project's tests at the head, from a clean export; a head whose
failing tests all fail at the base too is ``env-red`` (the environment's) and not scored.

Exit 1 when a red head got ``accept_for_review``, 2 when the trial could not be set up, else 0.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import honest_history as hh  # noqa: E402  (bench/, next to this file)
import trial  # noqa: E402

# Commits per project when the command line does not say.
DEFAULTS = {"boltons": 6, "sqlparse": 6, "rich": 4, "attrs": 0}
# Projects gated on the whitespace-only patch alone, whatever --commits and the mutant counts
# say (issue 30 asks only that of attrs; its first gate records a Hypothesis-heavy suite).
WHITESPACE_ONLY = frozenset({"attrs"})
SEED_LINE = re.compile(r"--seed (\d+)")
# The note's words for code judged by the replay alone (issue 30: "none: judged by the base's
# tests alone"); matched loosely so a rewording still counts, a blank field never does.
TESTS_ALONE = re.compile(r"(?i)tests alone")
EMPTY_OVERLAY = trial.Overlay({}, [])
# How the report names rule 5 when the path no lane covers is the project's code.
WANT_OF_PROPERTIES = "rule 5 map incomplete, code unmapped (want of properties)"


@dataclass(frozen=True)
class Planned:
    """One patch to gate: its base tree and its head tree (both as the project ships them)."""

    name: str
    kind: str  # commit, mutant, outside-mutant, whitespace
    detail: str
    base_key: str  # which base it applies to (a commit id of the project)
    base_tree: Path
    head_tree: Path


@dataclass(frozen=True)
class Outcome:
    """One gated patch: the truth, the verdict and what the evidence says."""

    project: str
    name: str
    kind: str
    detail: str
    files: list[str]
    truth: str  # green, red, error
    suite: str
    suite_seconds: float
    suite_failed: list[str]  # the plain suite's failed node ids (a flaky one shows here)
    verdict: str
    expected: str  # accept_for_review / reject (from the truth), "" when the truth errored
    why: str  # why not the expected verdict ("" when it matches)
    reasons: list[str]
    readme_command: str  # "works", or what stopped it
    property_field: str  # the note's property line
    tests_alone: bool
    property_lane: str  # classify.json's property lane status: applicable when a property covers
    slice: str
    seconds: float


def staged_commit(spec: hh.Spec, repo: Path, tree: Path, parent: str | None, msg: str) -> str:
    """Commit ``tree`` as the trial stages it (a src layout's ``pythonpath``; the spec's
    dropped tests) and return the commit id."""
    staged = repo.parent / "stage"
    shutil.rmtree(staged, ignore_errors=True)
    hh.stage(spec, tree, EMPTY_OVERLAY, staged)
    commit = trial.commit_dir(repo, staged, parent, msg)
    shutil.rmtree(staged)
    return commit


def adopt(python: Path, repo: Path, base: str, env: dict[str, str]) -> tuple[str, str]:
    """Check ``base`` out on ``main``, run ``patchlane init`` there as a user would and commit
    what it wrote; return (the scaffold commit, init's output). Raises ``TrialError`` when init
    fails."""
    trial.git(repo, "checkout", "-q", "-f", "-B", "main", base)
    trial.git(repo, "clean", "-q", "-f", "-d", "-x")
    proc = trial.run([python, "-m", "patchlane", "init"], cwd=repo, env=env, timeout=1800)
    said = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise trial.TrialError(f"patchlane init exited {proc.returncode}: {said[-400:]}")
    trial.git(repo, "add", "-A")
    trial.git(repo, "commit", "-q", "--allow-empty", "-m", "patchlane: review map and scaffold")
    scaffold = trial.git(repo, "rev-parse", "HEAD").strip()
    # What the commit holds, as a user's `git add` would take it: init's files and nothing else.
    changed = trial.git(repo, "diff", "--name-status", "--no-renames", base, scaffold).strip()
    return scaffold, f"{said}\n\n$ git diff --name-status (the scaffold commit)\n{changed}"


def whitespace_tree(spec: hh.Spec, tree: Path, dest: Path) -> tuple[Path, str]:
    """Copy ``tree`` to ``dest`` with one blank line added before the middle top-level
    statement of the package's largest module; return (``dest``, what changed). Raises
    ``TrialError`` when no module has two top-level statements."""
    modules = [
        p
        for package in spec.project.packages
        for p in sorted((tree / package).rglob("*.py"))
        if "test" not in p.name
    ]
    for path in sorted(modules, key=lambda p: -p.stat().st_size):
        text = path.read_text(encoding="utf-8")
        body = ast.parse(text).body
        if len(body) < 2:
            continue
        node = body[len(body) // 2]
        decorators = getattr(node, "decorator_list", [])
        line = min([node.lineno, *(d.lineno for d in decorators)])
        lines = text.splitlines(keepends=True)
        new = "".join([*lines[: line - 1], "\n", *lines[line - 1 :]])
        if ast.dump(ast.parse(new)) != ast.dump(ast.parse(text)):
            continue
        trial.copy_tree(tree, dest)
        rel = path.relative_to(tree).as_posix()
        (dest / rel).write_text(new, encoding="utf-8")
        return dest, f"a blank line before line {line} of {rel}"
    raise trial.TrialError(f"{spec.project.name}: no module to add a blank line to")


def outside_python(cache: Path) -> Path:
    """The interpreter of the cache's Cosmic Ray venv (made, and ``cosmic-ray`` installed
    from PyPI, on first use)."""
    venv = cache / "venvs" / "cosmic-ray"
    python = venv / "bin" / "python"
    if not (python.exists() and trial.run([python, "-c", "import cosmic_ray"]).returncode == 0):
        trial.say(f"pip install cosmic-ray into {venv}")
        trial.run([sys.executable, "-m", "venv", venv], check=True, timeout=600)
        trial.run([python, "-m", "pip", "install", "-q", "cosmic-ray"], check=True, timeout=1200)
    return python


def source_files(spec: hh.Spec, tree: Path) -> list[str]:
    """The package's modules that are not tests, relative to ``tree``."""
    return [
        p.relative_to(tree).as_posix()
        for package in spec.project.packages
        for p in sorted((tree / package).rglob("*.py"))
        if not p.name.startswith("test") and p.name != "conftest.py" and "/tests/" not in str(p)
    ]


def plan(spec: hh.Spec, args: argparse.Namespace, git_dir: Path, scratch: Path) -> list[Planned]:
    """The patches of one project: its commits, the mutants and the whitespace patch."""
    out: list[Planned] = []
    if spec.project.name in WHITESPACE_ONLY:
        tip = trial.git(git_dir, "rev-parse", "--verify", f"{spec.tip}^{{commit}}").strip()
        tip_tree = hh.export(spec, git_dir, tip, args.cache)
        dest, what = whitespace_tree(spec, tip_tree, scratch / "ws")
        return [Planned("ws", "whitespace", what, tip, tip_tree, dest)]
    count = args.commits if args.commits is not None else DEFAULTS.get(spec.project.name, 4)
    for i, (base, head) in enumerate(hh.pick_commits(spec, git_dir, count) if count else [], 1):
        subject = trial.git(git_dir, "log", "-1", "--format=%s", head).strip()
        out.append(
            Planned(
                f"c{i:02d}",
                "commit",
                f"{head[:9]} {subject[:60]}",
                base,
                hh.export(spec, git_dir, base, args.cache),
                hh.export(spec, git_dir, head, args.cache),
            )
        )
    tip = trial.git(git_dir, "rev-parse", "--verify", f"{spec.tip}^{{commit}}").strip()
    tip_tree = hh.export(spec, git_dir, tip, args.cache)
    for i, m in enumerate(trial.pick_mutants(spec.project, tip_tree, args.with_mutants, args.seed)):
        dest = scratch / f"m{i + 1:02d}"
        trial.copy_tree(tip_tree, dest)
        (dest / m.path).write_text(m.text, encoding="utf-8")
        out.append(Planned(f"m{i + 1:02d}", "mutant", m.label, tip, tip_tree, dest))
    if args.outside_mutants:
        argv: list[str | Path] = [
            outside_python(args.cache), HERE / "outside_mutants.py", "--root", tip_tree,
            "--count", str(args.outside_mutants), "--seed", str(args.seed),
            *source_files(spec, tip_tree),
        ]  # fmt: skip
        proc = trial.run(argv, cwd=scratch, timeout=600)
        if proc.returncode != 0:
            raise trial.TrialError(f"outside_mutants.py: {proc.stderr.strip()[-300:]}")
        for i, m in enumerate(json.loads(proc.stdout), 1):
            dest = scratch / f"x{i:02d}"
            trial.copy_tree(tip_tree, dest)
            (dest / m["path"]).write_text(m["text"], encoding="utf-8")
            label = f"{m['operator'].split('/')[-1]} ({m['path']}:{m['line']}: {m['change']})"
            out.append(Planned(f"x{i:02d}", "outside-mutant", label, tip, tip_tree, dest))
    if args.whitespace:
        dest, what = whitespace_tree(spec, tip_tree, scratch / "ws")
        out.append(Planned("ws", "whitespace", what, tip, tip_tree, dest))
    return out


def gate(
    python: Path, repo: Path, diff: Path, out: Path, env: dict[str, str], seed: str, timeout: float
) -> tuple[dict[str, Any], str, float]:
    """Gate ``diff`` on ``main`` with the README's command; when that exits 2, record why and
    gate again with ``--seed``. Returns (verdict.json or {}, the README command's fate, the
    wall of the gate that decided)."""
    fate = "works"
    for extra in ([], ["--seed", seed]):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        argv: list[str | Path] = [python, "-m", "patchlane", "gate", "--replay", "local"]
        argv += ["--patch", diff, "--out-dir", out, *extra]
        proc = trial.run(argv, cwd=repo, env=env, timeout=timeout)
        (out / "gate.stdout").write_text(proc.stdout, encoding="utf-8")
        (out / "gate.stderr").write_text(proc.stderr, encoding="utf-8")
        if proc.returncode is None:
            return {"verdict": "timeout", "reasons": []}, fate, proc.seconds
        if proc.returncode != 2 or extra:
            break
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        fate = f"exit 2: {lines[-1][:100] if lines else 'no output'}"
    data = hh._read(out / "verdict.json")
    if not data:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        data = {"verdict": f"exit {proc.returncode}", "reasons": [{"message": lines[-1:]}]}
    return data, fate, proc.seconds


def why(verdict: dict[str, Any], expected: str, unmapped: Sequence[str], code: list[str]) -> str:
    """Why the verdict is not ``expected``: the first reason of the verdict's own effect, as
    ``rule N: message``. Rule 5 ("map incomplete") is the want of properties when a path no
    lane covers is code (under ``code``); otherwise it names the unmapped paths."""
    if verdict.get("verdict") == expected:
        return ""
    effect = verdict.get("verdict")
    for r in verdict.get("reasons", []):
        if r.get("effect") == effect and r.get("rule") is not None:
            message = str(r.get("message", ""))
            if r.get("rule") == 5:
                if any(trial.under(u, code) for u in unmapped) or not unmapped:
                    return f"{WANT_OF_PROPERTIES}: {', '.join(unmapped)[:70]}"
                return f"rule 5 unmapped, not code: {', '.join(unmapped)[:70]}"
            return f"rule {r['rule']}: {message[:90]}"
    reasons = verdict.get("reasons") or [{}]
    return str(reasons[0].get("message", effect))[:100]


def property_field(review: str) -> str:
    """The note's property field: the first line naming the property lane."""
    for line in review.splitlines():
        if re.search(r"(?i)\bpropert(y|ies)\b", line) and line.lstrip().startswith(("-", "*", "|")):
            return line.strip()[:160]
    return ""


class DayOne:
    """One project: its trial repository, its adopted bases, its gated patches."""

    def __init__(self, spec: hh.Spec, args: argparse.Namespace, pl_src: Path, work: Path):
        self.spec, self.args, self.pl_src = spec, args, pl_src
        self.root = work / spec.project.name
        self.repo = self.root / "repo"
        self.env = hh.bench_env(work)
        self.bases: dict[str, tuple[str, str]] = {}  # project commit -> (trial base, scaffold)
        self.base_failed: dict[str, set[str]] = {}  # project commit -> the base's failed tests
        self.init_output: dict[str, str] = {}
        self.last: str | None = None

    def log(self, message: str) -> None:
        trial.say(f"[{self.spec.project.name}] {message}")

    def run(self) -> list[Outcome]:
        name = self.spec.project.name
        git_dir = hh.repo_copy(self.spec, self.args.cache, self.args.git_dirs.get(name))
        self.python = hh.ensure_venv(self.spec, self.args.cache, self.pl_src)
        shutil.rmtree(self.root, ignore_errors=True)
        (self.root / "scratch").mkdir(parents=True)
        trial.git(self.root, "init", "-q", "-b", "main", "repo")
        trial.git(self.repo, "config", "core.fsmonitor", "false")
        patches = plan(self.spec, self.args, git_dir, self.root / "scratch")
        self.log(f"{len(patches)} patches: {' '.join(p.name for p in patches)}")
        outcomes = []
        for n, p in enumerate(patches, 1):
            outcome = self.one(p)
            self.log(
                f"{n}/{len(patches)} {p.name} {p.kind}: suite {outcome.suite}, "
                f"{outcome.verdict} in {outcome.seconds:.0f} s {outcome.why}"
            )
            outcomes.append(outcome)
            with (self.root.parent / "rows.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(outcome)) + "\n")
        return outcomes

    def base(self, p: Planned) -> tuple[str, str]:
        """The trial's commit of ``p``'s base and its scaffold commit (adopted once)."""
        if p.base_key not in self.bases:
            b = staged_commit(self.spec, self.repo, p.base_tree, self.last, p.base_key[:12])
            self.base_failed[p.base_key] = set(self.suite(b).failed)
            scaffold, said = adopt(self.python, self.repo, b, self.env)
            self.bases[p.base_key] = (b, scaffold)
            self.init_output[p.base_key] = said
            self.last = scaffold
        return self.bases[p.base_key]

    def suite(self, commit: str) -> hh.Suite:
        """The plain full suite at ``commit`` of the trial repository, from a clean export."""
        checkout = self.root / "checkout"
        shutil.rmtree(checkout, ignore_errors=True)
        trial.export_commit(self.repo / ".git", commit, checkout)
        suite = hh.plain_suite(self.spec, self.python, checkout, self.env, self.args.suite_timeout)
        shutil.rmtree(checkout)
        return suite

    def one(self, p: Planned) -> Outcome:
        b, scaffold = self.base(p)
        head = staged_commit(self.spec, self.repo, p.head_tree, b, p.name)
        evidence = self.root / "evidence" / p.name
        evidence.mkdir(parents=True, exist_ok=True)
        diff = evidence / "agent.diff"
        diff.write_text(trial.git(self.repo, "diff", "--binary", b, head), encoding="utf-8")
        files = trial.changed_paths(self.repo, b, head)
        suite = self.suite(head)
        trial.git(self.repo, "checkout", "-q", "-f", "-B", "main", scaffold)
        seed = SEED_LINE.search(self.init_output[p.base_key])
        verdict, fate, seconds = gate(
            self.python,
            self.repo,
            diff,
            evidence / "gate",
            self.env,
            seed.group(1) if seed else str(trial.GATE_SEED),
            self.args.gate_timeout,
        )
        review_md = evidence / "gate" / "review.md"
        review = review_md.read_text(encoding="utf-8") if review_md.is_file() else ""
        replay = hh._read(evidence / "gate" / "replay-report.json")
        classify = hh._read(evidence / "gate" / "classify.json")
        unmapped = [str(u) for u in classify.get("unmapped", [])]
        lanes = classify.get("lanes") if isinstance(classify.get("lanes"), dict) else {}
        prop = lanes.get("property") if isinstance(lanes.get("property"), dict) else {}
        truth, brief = suite.truth, suite.brief
        if (
            suite.truth == "red"
            and suite.failed
            and set(suite.failed) <= self.base_failed[p.base_key]
        ):
            # Tests that fail at the base as well: this environment's, not the patch's.
            truth, brief = "env-red", f"{brief} (every one fails at the base too)"
        if suite.exit is None:
            # A suite that never finishes is a red head to its user (a test that hangs).
            truth, brief = "red", f"timed out after {self.args.suite_timeout:.0f} s (a hang)"
        expected = {"green": "accept_for_review", "red": "reject"}.get(truth, "")
        return Outcome(
            project=self.spec.project.name,
            name=p.name,
            kind=p.kind,
            detail=p.detail,
            files=files,
            truth=truth,
            suite=brief,
            suite_seconds=suite.seconds,
            suite_failed=suite.failed,
            verdict=str(verdict.get("verdict")),
            expected=expected,
            why=why(verdict, expected, unmapped, list(self.spec.project.packages))
            if expected
            else "truth: " + brief,
            reasons=trial.reason_lines(verdict),
            readme_command=fate,
            property_field=property_field(review),
            tests_alone=bool(TESTS_ALONE.search(review)),
            property_lane=str(prop.get("status", "")),
            slice=f"{replay.get('slice_count', '-')}/{replay.get('suite_size', '-')}",
            seconds=round(seconds, 1),
        )


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def is_code(row: dict[str, Any], spec: hh.Spec) -> bool:
    """Whether the patch touches the project's code (a path under its packages)."""
    return any(trial.under(f, list(spec.project.packages)) for f in row["files"])


def summary(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """Per project and in total: the counts the issue's "Done when" is judged by."""
    out = []
    for name in [*names, "TOTAL"]:
        sub = [r for r in rows if name in ("TOTAL", r["project"])]
        code = [r for r in sub if is_code(r, hh.SPECS[r["project"]])]
        if not sub:
            continue
        judged = [r for r in code if r["expected"]]
        out.append(
            {
                "project": name,
                "patches": len(sub),
                "code_patches": len(code),
                "green_heads": sum(r["truth"] == "green" for r in code),
                "red_heads": sum(r["truth"] == "red" for r in code),
                "unscored": sum(not r["expected"] for r in code),
                "match": sum(r["verdict"] == r["expected"] for r in judged),
                "red_accepted": sum(
                    r["truth"] == "red" and r["verdict"] == "accept_for_review" for r in sub
                ),
                "green_rejected": sum(
                    r["truth"] == "green" and r["verdict"] == "reject" for r in sub
                ),
                "undecided_no_props": sum(
                    r["verdict"] == "undecided" and r["why"].startswith(WANT_OF_PROPERTIES)
                    for r in code
                ),
                "undecided_other": sum(
                    r["verdict"] == "undecided" and not r["why"].startswith(WANT_OF_PROPERTIES)
                    for r in code
                ),
                # Of the code patches no property covers, those whose note says so.
                "no_property": sum(r.get("property_lane") != "applicable" for r in code),
                "note_tests_alone": sum(
                    r["tests_alone"] for r in code if r.get("property_lane") != "applicable"
                ),
                "readme_command_works": sum(r["readme_command"] == "works" for r in sub),
                "whitespace_accepted": sum(
                    r["kind"] == "whitespace" and r["verdict"] == "accept_for_review" for r in sub
                ),
                "whitespace": sum(r["kind"] == "whitespace" for r in sub),
                "median_gate_s": round(statistics.median(r["seconds"] for r in sub), 1),
            }
        )
    return out


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else f"{part}/0"


def render(payload: dict[str, Any]) -> str:
    short = {"accept_for_review": "accept", "undecided": "UNDECIDED", "reject": "reject"}
    rows = payload["results"]
    lines = [
        "| project | patch | kind | truth (plain suite) | verdict | expected | why not expected "
        "| note: tests alone | README cmd | slice | gate s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['project']} | {r['name']} | {r['kind']} | {r['truth']}: {r['suite']} "
            f"| {short.get(r['verdict'], r['verdict'])} | {short.get(r['expected'], '-')} "
            f"| {r['why'].replace('|', '/') or '-'} | {'yes' if r['tests_alone'] else 'no'} "
            f"| {'works' if r['readme_command'] == 'works' else 'exit 2'} | {r['slice']} "
            f"| {r['seconds']:.0f} |"
        )
    lines += ["", "Patches:", ""]
    lines += [f"- {r['project']} {r['name']}: {r['detail']}" for r in rows]
    keys = list(payload["summary"][0]) if payload["summary"] else []
    lines += ["", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(s[k]) for k in keys) + " |" for s in payload["summary"]]
    if payload["summary"]:
        t = payload["summary"][-1]
        judged = t["code_patches"] - t["unscored"]
        lines += [
            "",
            f"Done when (issue 30), this run: code patches whose verdict matches the plain "
            f"suite {_pct(t['match'], judged)}; red accepted {t['red_accepted']} (must be 0); "
            f"undecided for want of properties (rule 5) {_pct(t['undecided_no_props'], judged)} "
            f"(must be 0); undecided for another reason {t['undecided_other']}; green rejected "
            f"{t['green_rejected']}; of the code patches no property covers, the note says "
            f"'tests alone' on {_pct(t['note_tests_alone'], t['no_property'])}; the README's "
            f"gate command "
            f"works as written on {_pct(t['readme_command_works'], t['patches'])}; whitespace "
            f"patches accepted {t['whitespace_accepted']}/{t['whitespace']}.",
        ]
    held = Counter(r["why"].split(":")[0] for r in rows if r["verdict"] == "undecided")
    lines += [f"undecided, why: {w}: {n}" for w, n in held.most_common()]
    fates = sorted({r["readme_command"] for r in rows if r["readme_command"] != "works"})
    lines += [f"README command stopped: {f}" for f in fates]
    for project, said in payload["init_output"].items():
        lines += ["", f"`patchlane init` on {project} (first base):", "", "```", said, "```"]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python bench/day_one.py",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument(
        "--project",
        action="append",
        choices=sorted(DEFAULTS),
        metavar="NAME",
        help=f"run this project (repeatable; default: {', '.join(DEFAULTS)})",
    )
    parser.add_argument(
        "--commits",
        type=int,
        metavar="N",
        help="the project's own newest commits per project (default: "
        + ", ".join(f"{k} {v}" for k, v in DEFAULTS.items())
        + f"); {', '.join(sorted(WHITESPACE_ONLY))}: the whitespace-only patch alone",
    )
    parser.add_argument(
        "--with-mutants",
        type=int,
        default=3,
        metavar="N",
        help="bugs of trial.py's own generator planted in each project's tip (default 3)",
    )
    parser.add_argument(
        "--outside-mutants",
        type=int,
        default=3,
        metavar="N",
        help="bugs of Cosmic Ray's operators planted in each project's tip (default 3; "
        "the first use installs cosmic-ray into a venv in --cache)",
    )
    parser.add_argument(
        "--no-whitespace",
        dest="whitespace",
        action="store_false",
        help="leave out the whitespace-only patch",
    )
    parser.add_argument("--seed", type=int, default=1, help="which mutants (default 1)")
    parser.add_argument(
        "--git", action="append", default=[], metavar="NAME=GITDIR", help="as honest_history.py"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "patchlane-trial-cache",
        help="repository copies, exported trees, venvs (default: %(default)s)",
    )
    parser.add_argument("--work", type=Path, metavar="DIR", help="default: a temporary directory")
    parser.add_argument("--patchlane-src", type=Path, metavar="DIR")
    parser.add_argument("--patchlane-rev", metavar="REV")
    parser.add_argument(
        "--suite-timeout",
        type=float,
        default=300,
        metavar="S",
        help="the plain suite's limit; a suite past it is a red head, a hang (default 300)",
    )
    parser.add_argument("--gate-timeout", type=float, default=900, metavar="S")
    parser.add_argument("--json", type=Path, metavar="FILE")
    parser.add_argument("--md", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    args.git_dirs = {}
    for item in args.git:
        name, sep, path = item.partition("=")
        if not sep or name not in hh.SPECS or not Path(path).is_dir():
            parser.error(f"--git {item}: expected NAME=GITDIR with a known project")
        args.git_dirs[name] = Path(path).resolve()
    args.cache = args.cache.resolve()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    names = args.project or list(DEFAULTS)
    args.cache.mkdir(parents=True, exist_ok=True)
    work = (args.work or Path(tempfile.mkdtemp(prefix="patchlane-dayone-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    pl_src, label = trial.patchlane_source(args.patchlane_rev, args.patchlane_src, args.cache)
    trial.say(f"patchlane under trial: {label}")
    rows: list[dict[str, Any]] = []
    init_output: dict[str, str] = {}
    errors: list[str] = []
    try:
        for name in names:
            t = DayOne(hh.SPECS[name], args, pl_src, work)
            try:
                rows += [asdict(o) for o in t.run()]
            except trial.TrialError as e:
                t.log(f"ERROR: {e}")
                errors.append(f"{name}: {e}")
            if t.init_output:
                init_output[name] = next(iter(t.init_output.values()))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    command = " ".join(["python bench/day_one.py", *(argv if argv is not None else sys.argv[1:])])
    meta = {"patchlane": label, "command": command, "seconds": round(time.monotonic() - started)}
    payload = {
        "meta": meta,
        "summary": summary(rows, names),
        "results": rows,
        "init_output": init_output,
        "errors": errors,
    }
    report = render(payload)
    report += "".join(f"\ntrial error: {e}" for e in errors)
    report += f"\n\npatchlane under trial: {label}; {meta['seconds']} s in all\n"
    print(report)
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    if args.md:
        args.md.write_text(f"# Day one: `{command}`\n\n{report}", encoding="utf-8")
    red_accepted = payload["summary"][-1]["red_accepted"] if payload["summary"] else 0
    return 1 if red_accepted else 2 if errors and not rows else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except trial.TrialError as err:
        trial.say(f"error: {err}")
        sys.exit(2)
