"""The witness: the changed code must give the same answers outside its tests.

The vacuity check's pytest processes record the calls the tests make to the changed
functions (``watched``: every function whose definition the patch changes or adds, by
qualified name; ``child.calls``). ``witnessed`` then makes the same calls, with the same
arguments, in an interpreter that is not a test run (``child.witness``): a fresh checkout of
the same commit with every file of the test suite gone (test modules, conftests, the test
roots' data files) and no ``.git`` (whose objects hold them too), the same sandbox and
presentation of the tree, the run's ``sys.path`` and hash seed, no pytest imported, no
``PYTEST_CURRENT_TEST``, no test frame on the stack and call sites of its own. Each call is
made twice, the second pass in reverse order.

``compare`` judges bytes only (nothing is unpickled in this process): a call whose two
witness answers differ is nondeterministic and skipped, one that cannot be made there (its
arguments are objects of the tests' own classes, its value does not pickle) is skipped too;
one whose answer differs from what the tests saw (another value, an exception, ``None``,
a module or function that is not there) is code that knows it is being tested, unless the
base's run shows the same difference for the same function and arguments (state its tests
set through a fixture: ``excused``).
"""

from __future__ import annotations

import ast
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.infra import process
from patchlane.lanes.replay.results import TestRun
from patchlane.lanes.replay.run import plain_env, presented, run_confinement
from patchlane.lanes.replay.vacuity.check import checkout
from patchlane.project.build import Build, built
from patchlane.project.testmodules import ModulePatterns, is_suite_path

WITNESS_MODULE = "patchlane.child.witness"
# Past this many calls the witness makes only the first ones (5 a function are recorded).
MAX_CALLS = 200
_MISSING = "!"  # no answer at all (the child never sent one)
# Answers that are no call to judge: the arguments do not unpickle there (an object of the
# tests' own classes), or the value does not pickle.
_NO_CALL = ("!args", "!unpicklable")


def watched(code: Mapping[str, tuple[bytes | None, bytes]]) -> dict[str, list[str]]:
    """Return path -> qualified names of the functions of each changed file (base's bytes or
    ``None`` for a new file; head's bytes) whose definition differs from the base's or is
    new: module-level functions and methods of module-level classes (nested ones are not
    reachable by name). A file that does not parse at the head watches nothing."""
    found: dict[str, list[str]] = {}
    for path, (base, head) in sorted(code.items()):
        after = _definitions(head)
        before = _definitions(base) if base is not None else {}
        names = sorted(q for q, dump in after.items() if before.get(q) != dump)
        if names:
            found[path] = names
    return found


def _definitions(source: bytes) -> dict[str, str]:
    """qualified name -> the function's AST (without positions) for the functions
    ``watched`` considers; ``{}`` for a source that does not parse."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    return {q: ast.dump(node) for q, node in _functions(module.body, "")}


def _functions(
    body: Sequence[ast.stmt], prefix: str
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body, f"{prefix}{node.name}.")


@dataclass(frozen=True)
class Call:
    """One call the tests made: module, qualified name, pickled arguments and the pickled
    value the tests saw (base64 text, compared as is)."""

    module: str
    qualname: str
    args: str
    result: str

    def shown(self) -> str:
        """``module.qualname(...)`` for the note (the arguments are never unpickled)."""
        return f"{self.module}.{self.qualname}(…)"


@dataclass(frozen=True)
class Witnessed:
    """The witness's two answers to each call (``answers[i]`` for ``calls[i]``; an answer
    starting with ``!`` is no value: raised, missing, not picklable, ``None``), and why it
    gave none at all (``problem``: the child could not run)."""

    calls: tuple[Call, ...]
    answers: tuple[tuple[str, str], ...]
    problem: str = ""


def recorded(calls: Sequence[tuple[str, str, str, str]]) -> tuple[Call, ...]:
    """The run's recorded calls (``TestRun.calls``), duplicates left out, at most
    ``MAX_CALLS``."""
    return tuple(dict.fromkeys(Call(*c) for c in calls))[:MAX_CALLS]


@dataclass(frozen=True)
class Where:
    """Which tree the witness runs: ``commit`` of ``repo``, built with ``build``; the
    suite's files are told by the map's test ``roots`` and the base's ``patterns``."""

    repo: Path
    commit: str
    build: Build | None
    roots: tuple[str, ...]
    patterns: ModulePatterns


def witnessed(
    where: Where,
    calls: Sequence[Call],
    ran: TestRun,
    *,
    hash_seed: int,
    timeout_s: float,
) -> Witnessed:
    """Make ``calls`` twice in a witness child (the module docstring) at ``where``, with
    the recorded run's (``ran``) ``sys_path`` (its places below that run's ``root`` moved to the
    witness's tree), and return its answers. Raises ``GitError`` when the commit cannot be checked out,
    ``BuildFailed`` when its build fails, ``OSError`` when the child cannot be started,
    ``ForeignCode`` when the environment cannot say how the tree is imported."""
    if not calls:
        return Witnessed((), ())
    with tempfile.TemporaryDirectory(prefix="patchlane-witness-") as tmp:
        tree = Path(tmp) / "tree"
        # On the repository's branch and shown at its path, as the slice's run is
        # (``check.checkout``): a run the code under test could tell apart is no witness.
        checkout(where.repo, where.commit, tree)
        built(where.build, tree, "witness")
        _hide_suite(tree, where.roots, where.patterns)
        env = plain_env(hash_seed)
        shown = presented(tree, env)
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        run = process.run_child(
            process.Launch(
                (sys.executable, "-m", WITNESS_MODULE),
                {
                    "sys_path": list(ran.sys_path),
                    "root": ran.root,
                    "calls": [[c.module, c.qualname, c.args] for c in calls],
                },
                token=secrets.token_hex(16),
                timeout_s=timeout_s,
                cwd=tree,
                env=env,
                confinement=run_confinement(scratch, tree, shown=shown),
            )
        )
    rounds: dict[int, dict[int, str]] = {1: {}, 2: {}}
    for record in run.records:
        i, round_, answer = record.get("w"), record.get("round"), record.get("a")
        if isinstance(i, int) and round_ in rounds and isinstance(answer, str):
            rounds[round_].setdefault(i, answer)
    answers = tuple(
        (rounds[1].get(i, _MISSING), rounds[2].get(i, _MISSING)) for i in range(len(calls))
    )
    problem = ""
    if run.timed_out or run.problems or run.done_count is None:
        problem = "; ".join(run.problems) or "the witness did not finish"
    return Witnessed(tuple(calls), answers, problem)


def _hide_suite(tree: Path, roots: tuple[str, ...], patterns: ModulePatterns) -> None:
    """Remove from ``tree`` every file of the test suite (``is_suite_path``: test modules,
    conftests, files in the test roots' suite folders) and ``.git``."""
    shutil.rmtree(tree / ".git", ignore_errors=True)
    for folder, dirs, files in os.walk(tree):
        here = Path(folder)
        for name in files:
            rel = (here / name).relative_to(tree).as_posix()
            if is_suite_path(rel, roots, patterns):
                (here / name).unlink()
        dirs.sort()


@dataclass(frozen=True)
class Difference:
    """A call whose answer outside the tests differs from what its tests saw."""

    call: Call
    excused: bool


@dataclass(frozen=True)
class Judged:
    """What ``compare`` found: the differences at the head (``excused`` by the base or not)
    and counts (``calls_recorded``, ``calls_witnessed``: made with a deterministic answer
    to compare, ``calls_differing``: not excused)."""

    differences: tuple[Difference, ...]
    counts: Mapping[str, int]

    @property
    def unexcused(self) -> tuple[Call, ...]:
        """The calls whose difference the base does not share."""
        return tuple(d.call for d in self.differences if not d.excused)


def differing(witness: Witnessed) -> tuple[list[Call], int]:
    """The calls of ``witness`` whose (deterministic) answer differs from the recorded one,
    and how many calls had an answer to compare."""
    found: list[Call] = []
    compared = 0
    for call, (first, second) in zip(witness.calls, witness.answers, strict=True):
        if first == _MISSING or first.startswith(_NO_CALL) or first != second:
            continue  # no call could be made there, or its answer is not deterministic
        compared += 1
        if first != call.result:
            found.append(call)
    return found, compared


def compare(at_head: Witnessed, at_base: Witnessed | None = None) -> Judged:
    """Judge the head's witness (the module docstring), with the base's (its own recorded
    calls, witnessed at the base) to excuse a difference the base shows for the same
    function and arguments."""
    head_diff, compared = differing(at_head)
    base_keys: set[tuple[str, str, str]] = set()
    if at_base is not None:
        base_diff, _ = differing(at_base)
        base_keys = {(c.module, c.qualname, c.args) for c in base_diff}
    differences = tuple(
        Difference(c, (c.module, c.qualname, c.args) in base_keys) for c in head_diff
    )
    counts = {
        "calls_recorded": len(at_head.calls),
        "calls_witnessed": compared,
        "calls_differing": sum(not d.excused for d in differences),
    }
    return Judged(differences, counts)
