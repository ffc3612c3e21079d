"""Issue 29's hostile pass: each scenario's truth at the head, its gate, and one table.

Usage: python3 bench/redteam/issue29.py [--md FILE] bench/redteam/scenarios/h*.py
(``bench/redteam/run_issue29.sh`` runs it on every ``h*.py``; the patchlane it gates with is
whatever ``python3 -m patchlane`` imports, so set ``PYTHONPATH`` to the checkout's ``src``.)

Each scenario is built by ``harness.build`` (work directory ``$REDTEAM_DIR/runs/NAME``). The
truth is the patch's own plain ``python -m pytest`` at the head (``harness.full_suite``); the
verdict is one ``patchlane gate --replay local --dep-map auto`` (``harness.gate``). A scenario
declares ``KIND``: ``red`` (its plain suite must fail at the head) or ``gamed`` (its suite
passes while the code is wrong for inputs the tests do not use), and ``CLASS``. A patch is
*accepted while red* when the gate says ``accept_for_review`` and the scenario is red as
declared (a ``red`` scenario whose plain suite passes is reported as broken, not counted).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import runpy
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERDICTS = {0: "accept_for_review", 1: "reject", 2: "exit 2 (bad input)", 3: "undecided"}


def _harness() -> object:
    spec = importlib.util.spec_from_file_location("redteam_harness", HERE / "harness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


harness = _harness()


@dataclass(frozen=True)
class Row:
    """One scenario's outcome: its class and kind, the truth at the head (``truth_red``:
    whether the plain suite failed), the gate's verdict and its first reason."""

    name: str
    cls: str
    kind: str
    truth_exit: int
    truth_red: bool
    truth_tail: str
    verdict: str
    reason: str
    seconds: float

    @property
    def broken(self) -> bool:
        """A ``red`` scenario whose plain suite passed: it tests nothing."""
        return self.kind == "red" and not self.truth_red

    @property
    def accepted_while_red(self) -> bool:
        """Whether the gate accepted a patch that is red (as declared and observed)."""
        return self.verdict == VERDICTS[0] and not self.broken

    def truth(self) -> str:
        """The truth column: the plain suite's exit and last line."""
        word = "red" if self.truth_red else ("green, gamed" if self.kind == "gamed" else "green")
        return f"{word} (exit {self.truth_exit}: {self.truth_tail or 'no summary'})"


def _red(code: int, tail: str) -> bool:
    """Whether the plain suite failed: any exit but 0, or an exit 0 without a summary that
    says tests passed and none failed (the process ended early)."""
    last = tail.splitlines()[0] if tail else ""
    passed = re.search(r"\b\d+ passed\b", last) is not None
    return code != 0 or not passed or re.search(r"\b(failed|error)", last) is not None


def _reason(verdict: dict[str, object], rep: dict[str, object], stderr: str) -> str:
    for key in ("reasons", "reason"):
        value = verdict.get(key)
        if isinstance(value, list) and value:
            said = [
                f"{r.get('lane')}: {r.get('message')}" if isinstance(r, dict) else str(r)
                for r in value
            ]
            return "; ".join(said)[:220]
        if value:
            return (value if isinstance(value, str) else json.dumps(value))[:220]
    if rep.get("reason"):
        return str(rep["reason"])[:220]
    return stderr.strip().splitlines()[-1][:220] if stderr.strip() else ""


def run_one(file: str) -> Row:
    """Build, run the truth and gate one scenario; return its row."""
    started = time.monotonic()
    scn = runpy.run_path(file)
    repo = harness.build(scn)  # type: ignore[attr-defined]
    code, tail = harness.full_suite(repo, "head")  # type: ignore[attr-defined]
    g = harness.gate(repo, "auto", repo.parent / "cache")  # type: ignore[attr-defined]
    first = tail.splitlines()[0].strip() if tail else ""
    return Row(
        name=scn["NAME"],
        cls=str(scn.get("CLASS", "?")),
        kind=str(scn.get("KIND", "red")),
        truth_exit=code,
        truth_red=_red(code, tail),
        truth_tail=first,
        verdict=VERDICTS.get(g["rc"], f"exit {g['rc']} (internal)"),
        reason=_reason(g["verdict"], g["report"], g["stderr"]).replace("|", "/"),
        seconds=time.monotonic() - started,
    )


def _patchlane() -> str:
    """Which patchlane the gates ran: its file, and the checkout's commit when it has one."""
    where = subprocess.run(
        [sys.executable, "-c", "import patchlane; print(patchlane.__file__)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", str(Path(where).parent), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{where} ({commit[:100]})" if commit else where


def table(rows: list[Row]) -> str:
    """The Markdown table and the per-class counts."""
    lines = [
        "| scenario | class | truth at head (plain `python -m pytest`) | verdict (--dep-map auto) "
        "| accepted while red | first reason |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        accepted = "BROKEN (not red)" if r.broken else ("**yes**" if r.accepted_while_red else "no")
        lines.append(
            f"| {r.name} | {r.cls} | {r.truth()} | {r.verdict} | {accepted} | {r.reason[:160]} |"
        )
    by_class: Counter[str] = Counter(r.cls for r in rows)
    taken: Counter[str] = Counter(r.cls for r in rows if r.accepted_while_red)
    lines.append("")
    lines.append("Accepted while red, by class:")
    for cls in sorted(by_class):
        lines.append(f"- {cls}: {taken[cls]} of {by_class[cls]}")
    # Classes named "0 ..." are controls (must be rejected), not attacks.
    attacks = [r for r in rows if not r.cls.startswith("0")]
    total = sum(1 for r in attacks if r.accepted_while_red)
    lines.append(f"- all attacks: {total} of {len(attacks)}")
    broken = [r.name for r in rows if r.broken]
    if broken:
        lines.append(f"- broken scenarios (plain suite green although declared red): {broken}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--md", type=Path, help="also write the table here")
    parser.add_argument("scenarios", nargs="+")
    args = parser.parse_args()
    gated_with = _patchlane()
    print(f"patchlane: {gated_with}", flush=True)
    rows: list[Row] = []
    for file in args.scenarios:
        row = run_one(file)
        rows.append(row)
        flag = " ACCEPTED WHILE RED" if row.accepted_while_red else ""
        print(
            f"{row.name}: truth {row.truth()}; {row.verdict}{flag} ({row.seconds:.0f} s)"
            + (f"\n    {row.reason}" if row.reason else ""),
            flush=True,
        )
    text = table(rows)
    print()
    print(text)
    if args.md is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        header = f"# Issue 29 red-team pass ({stamp})\n\npatchlane: {gated_with}\n\n"
        args.md.write_text(header + text + "\n")


if __name__ == "__main__":
    main()
