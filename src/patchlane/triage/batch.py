"""Gate many candidates against one base: the base's work once, the gates in parallel.

The order of work keeps the trust model of a single gate:

1. The base and every ref are resolved first (a typo is the user's: exit 2 before anything
   runs); diffs become commits on the base (``apply_patch``: a temporary index, the work
   tree and branches untouched); one that does not apply is a row, not an abort.
2. The base's dependency map is obtained once per merge base (``share_map``) before any
   candidate's code runs: a candidate's code runs as this user and could otherwise write a
   map for the base into the cache that the other candidates would take.
3. Candidates that are the same head commit (``identical``) are gated once, the first of
   them; each other gets the same verdict in a row of its own that names the candidate it
   shares the gate with. The commit, not its tree: a gate's tests can read the commit's
   message, author and parents, so two commits with one tree are two patches. The same
   diff under two names is one commit (``inputs.patchfile`` commits it with fixed
   metadata that names its bytes), and no normalisation merges two diffs that differ.
4. The gates run, ``jobs`` at a time, each in a thread driving its own child processes
   (every lane that runs a candidate's code runs it in a child); each writes its evidence
   in ``OUT/<name>/``. Property runs that a candidate does not change (the base's oracles
   against code the candidate leaves alone) come from the shared result cache.
"""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING

from patchlane import __version__
from patchlane.errors import Exit, InputError, PatchlaneError, UsageError
from patchlane.gate.run import GateOptions, GateResult, SharedBase, run_gate, share_map
from patchlane.infra import git
from patchlane.infra.ui import Output, one_line
from patchlane.inputs.patchfile import apply_patch
from patchlane.triage.candidates import Candidate
from patchlane.triage.summary import DOES_NOT_APPLY, EMPTY_PATCH, ERROR, Row

if TYPE_CHECKING:
    from patchlane.formats.depmap import DependencyMap


@dataclass(frozen=True)
class TriageOptions:
    """How to triage: ``gate`` is every candidate's gate (its ``head`` and ``out_dir`` are
    replaced per candidate), ``out_dir`` the run's folder (absolute), ``jobs`` how many
    gates run at once."""

    gate: GateOptions
    out_dir: Path
    jobs: int = 1


@dataclass(frozen=True)
class _Ready:
    """A candidate with a commit to gate, and the seconds spent getting it."""

    candidate: Candidate
    head: str
    seconds: float


Progress = Callable[[Row, int, int], None]


def triage(
    repo: Path,
    candidates: Sequence[Candidate],
    opts: TriageOptions,
    out: Output,
    progress: Progress | None = None,
) -> list[Row]:
    """Gate every candidate and return one row each, in the candidates' order.

    Raises ``GitError`` for an unknown base or ref, and what ``run_gate`` raises for bad
    options, before any candidate is gated. A candidate that does not apply, is empty, or
    whose gate meets bad input is a row; so is an internal error (exit code 4), with the
    traceback on stderr under ``-v``."""
    base = git.resolve_commit(repo, opts.gate.base)
    heads = {c.name: git.resolve_commit(repo, c.ref) for c in candidates if c.ref is not None}
    template = dataclasses.replace(opts.gate, base=base)
    rows: dict[str, Row] = {}
    ready: list[_Ready] = []
    for c in candidates:
        got = _commit_for(repo, base, c, heads)
        if isinstance(got, Row):
            rows[c.name] = got
        else:
            ready.append(got)
    shared, failed = _share(repo, template, ready, out)
    rows.update(failed)
    todo = [r for r in ready if r.candidate.name not in failed]
    same = identical([(r.candidate.name, patch_key(repo, r.head)) for r in todo])
    done = _Counter(len(candidates), progress)
    for row in rows.values():
        done.finished(row)
    for row in _gate_all(
        repo, template, shared, [r for r in todo if r.candidate.name not in same], opts, out, done
    ):
        rows[row.name] = row
    for r in todo:
        first = same.get(r.candidate.name)
        if first is not None:
            rows[r.candidate.name] = shared_row(rows[first], r.candidate, r.head, r.seconds)
            done.finished(rows[r.candidate.name])
    return [rows[c.name] for c in candidates]


def patch_key(repo: Path, head: str) -> str:
    """What a gate reads of the candidate ``head``: its commit (tree, message, author and
    parents, and so its merge base with the base), as a full commit id. Raises
    ``GitError``."""
    return git.resolve_commit(repo, head)


def identical(keys: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Return, for each candidate name in ``keys`` (``(name, head commit)``, in the
    candidates' order) whose key an earlier one has, the name of the first with it."""
    first: dict[str, str] = {}
    same: dict[str, str] = {}
    for name, key in keys:
        if key in first:
            same[name] = first[key]
        else:
            first[key] = name
    return same


def shared_row(row: Row, c: Candidate, head: str, seconds: float) -> Row:
    """Return ``row`` (the gate of the first candidate with the same patch) as ``c``'s:
    its own name, source, kind, head and seconds (its patch's applying), the gate's
    verdict, reason and evidence, and ``same_as`` naming the candidate gated."""
    return dataclasses.replace(
        row, name=c.name, source=c.source, kind=c.kind, head=head, seconds=seconds, same_as=row.name
    )


def _commit_for(repo: Path, base: str, c: Candidate, heads: dict[str, str]) -> _Ready | Row:
    """The commit to gate for ``c``: its ref's, or its diff applied to ``base``; a row when
    there is none (an empty patch, one that does not apply)."""
    if c.ref is not None:
        return _Ready(c, heads[c.name], 0.0)
    start = time.monotonic()
    patch = c.patch or b""
    if not patch.strip():
        return _row_without_gate(c, EMPTY_PATCH, "the patch is empty", Exit.BAD_INPUT, 0.0)

    try:
        head = apply_patch(repo, base, patch, c.source)
    except InputError as e:  # PatchApplyError, and input that holds no patch
        seconds = time.monotonic() - start
        return _row_without_gate(c, DOES_NOT_APPLY, str(e), Exit.BAD_INPUT, seconds)
    except PatchlaneError as e:
        seconds = time.monotonic() - start
        return _row_without_gate(c, ERROR, str(e), Exit.BAD_INPUT, seconds)
    return _Ready(c, head, time.monotonic() - start)


def _share(
    repo: Path, template: GateOptions, ready: Sequence[_Ready], out: Output
) -> tuple[SharedBase, dict[str, Row]]:
    """Classify one candidate per merge base and obtain that base's dependency map, before
    any candidate runs; return the maps and a row for each candidate whose merge base or map
    cannot be found (a shallow clone, a head without a map where the base has none).

    Raises ``UsageError`` for options no candidate can be gated with (no seed): the
    user's to fix, not a row per candidate."""
    maps: dict[str, tuple[DependencyMap | None, str] | None] = {}
    failed: dict[str, Row] = {}
    for r in ready:
        try:
            merge_base = git.merge_base(repo, template.base, r.head)
            if merge_base not in maps:
                got, obtained = share_map(repo, dataclasses.replace(template, head=r.head), out)
                maps[got] = obtained
        except UsageError:
            raise
        except PatchlaneError as e:
            failed[r.candidate.name] = _row_without_gate(
                r.candidate, ERROR, str(e), Exit.BAD_INPUT, r.seconds, head=r.head
            )
    return SharedBase(maps), failed


def _gate_all(
    repo: Path,
    template: GateOptions,
    shared: SharedBase,
    todo: Sequence[_Ready],
    opts: TriageOptions,
    out: Output,
    done: _Counter,
) -> list[Row]:
    """Gate ``todo``, ``opts.jobs`` at a time; return the rows as they finish."""

    def one(r: _Ready) -> Row:
        gate_opts = dataclasses.replace(
            template,
            head=r.head,
            out_dir=opts.out_dir / r.candidate.name,
            shared=shared,
            applied_from=r.candidate.source if r.candidate.ref is None else None,
        )
        row = _gate_one(repo, r, gate_opts, opts.out_dir, out)
        done.finished(row)
        return row

    if opts.jobs <= 1 or len(todo) <= 1:
        return [one(r) for r in todo]
    with ThreadPoolExecutor(max_workers=opts.jobs, thread_name_prefix="triage") as pool:
        futures = [pool.submit(one, r) for r in todo]
        return [f.result() for f in as_completed(futures)]


def _gate_one(repo: Path, r: _Ready, gate_opts: GateOptions, root: Path, out: Output) -> Row:
    """Run one candidate's gate (its own lines silenced) and return its row."""
    start = time.monotonic()
    c = r.candidate
    try:
        result = run_gate(repo, gate_opts, Output(quiet=True))
    except PatchlaneError as e:
        seconds = r.seconds + time.monotonic() - start
        return _row_without_gate(c, ERROR, str(e), Exit.BAD_INPUT, seconds, head=r.head)
    except Exception as e:  # noqa: BLE001 - one candidate's bug must not lose the others' rows
        if out.verbose:
            traceback.print_exc()
        message = f"internal error (a bug in patchlane {__version__}): {type(e).__name__}: {e}"
        seconds = r.seconds + time.monotonic() - start
        return _row_without_gate(c, ERROR, message, Exit.INTERNAL, seconds, head=r.head)
    return _gated_row(c, r.head, result, root, r.seconds + time.monotonic() - start)


def _gated_row(c: Candidate, head: str, result: GateResult, root: Path, seconds: float) -> Row:
    verdict = result.verdict
    first = verdict.reasons[0] if verdict.reasons else None
    reason = "" if first is None else f"{first.lane}: {first.message}"
    replay = result.reports.replay
    return Row(
        name=c.name,
        source=c.source,
        kind=c.kind,
        head=head,
        verdict=verdict.verdict,
        exit_code=verdict.exit_code,
        reason=one_line(reason),
        slice_count=replay.slice_count if replay is not None else None,
        suite_size=replay.suite_size if replay is not None else None,
        seconds=seconds,
        evidence=Path(os.path.relpath(result.out_dir, root)).as_posix(),
        slice_added=replay.slice_added if replay is not None else 0,
    )


def _row_without_gate(
    c: Candidate, verdict: str, reason: str, code: int, seconds: float, head: str | None = None
) -> Row:
    return Row(
        name=c.name,
        source=c.source,
        kind=c.kind,
        head=head,
        verdict=verdict,
        exit_code=int(code),
        reason=one_line(reason),
        slice_count=None,
        suite_size=None,
        seconds=seconds,
        evidence=None,
    )


class _Counter:
    """Counts finished candidates and reports each to ``progress`` (from any thread)."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self._total = total
        self._done = 0
        self._lock = Lock()
        self._progress = progress

    def finished(self, row: Row) -> None:
        with self._lock:
            self._done += 1
            if self._progress is not None:
                self._progress(row, self._done, self._total)
