"""What a replay run yields, folded: each node's outcome, the run, and its receipt.

The plain values every step of the replay passes along (``run`` builds them from what the
pytest child streamed, ``collect`` and ``chosen`` read them, ``testbound`` and ``split``
combine them); this module imports nothing of the lane, so none of those needs another to
name them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from patchlane.formats.receipt import Receipt

PASSED, FAILED, SKIPPED, FROZEN = "passed", "failed", "skipped", "frozen"


@dataclass(frozen=True)
class Runner:
    """How a replay's pytest child runs: its ``PYTHONHASHSEED`` and Hypothesis seed
    (``hash_seed``), its wall clock (``timeout_s``) and the freeze report whose grants its
    plugin skips (``freeze_report``; ``None``: none)."""

    hash_seed: int
    timeout_s: float
    freeze_report: Path | None = None


@dataclass(frozen=True)
class NodeResult:
    """One node's folded outcome (``passed``, ``failed``, ``skipped`` or ``frozen``) and why,
    one line (empty for a plain pass)."""

    outcome: str
    why: str = ""


@dataclass(frozen=True)
class CollectError:
    """A file pytest could not collect: its node id, pytest's last line, and the module
    ``No module named`` names, if that was the error."""

    nodeid: str
    message: str
    missing: str | None


@dataclass(frozen=True)
class TestRun:
    """What one pytest child did, folded.

    ``results`` has one entry per wanted node id (with ``files``: per collected item of those
    files). ``collected`` are the wanted items pytest collected; ``problems`` say why the run
    as a whole cannot pass (empty for a run whose exit status agrees with its outcomes).
    """

    results: Mapping[str, NodeResult]
    collected: tuple[str, ...]
    collect_errors: tuple[CollectError, ...]
    exit_code: int | None
    problems: tuple[str, ...]
    timed_out: bool
    output_tail: bytes
    # Files of the tree pytest held as plugins (conftests, ``pytest_plugins`` modules,
    # plugins registered at run time): what the run loaded, against what classify found.
    plugin_files: tuple[str, ...] = ()
    # What the tests left behind for later tests to see (``child.leftover``): each item
    # (``env NAME``, ``quota.LIMIT`` ...) and the node after which it was first seen.
    left: Mapping[str, str] = field(default_factory=dict)
    # Project modules the run imported from outside the tree under judgement, one line
    # each (``infra.origins.foreign``): non-empty, the run is no evidence.
    foreign: tuple[str, ...] = ()
    # The changed functions' calls the run recorded for the witness (``child.calls``):
    # (module, qualified name, pickled arguments, pickled result; base64), and the run's
    # ``sys.path`` as the child had it. Empty unless the run was asked to record.
    calls: tuple[tuple[str, str, str, str], ...] = ()
    sys_path: tuple[str, ...] = ()
    # The tree's root as that child saw it (``sys_path``'s places below it move with it).
    root: str = ""
    # The node that ran past its bound (``testbound``), which stopped the run, and the bound
    # (seconds); the nodes that run left without a judgement of their own (every node but
    # that one and those that failed by their own reports before it).
    overran: str | None = None
    bound_s: float | None = None
    not_judged: tuple[str, ...] = ()
    # Node -> the seconds from its start to its end, as the parent saw them.
    durations: Mapping[str, float] = field(default_factory=dict)

    def ids(self, outcome: str) -> tuple[str, ...]:
        """The node ids with ``outcome``, sorted."""
        return tuple(sorted(n for n, r in self.results.items() if r.outcome == outcome))


@dataclass(frozen=True)
class RunResult:
    """One slice run: the receipt (unsigned) and the run it was built from."""

    receipt: Receipt
    run: TestRun

    @property
    def output_tail(self) -> bytes:
        """The last bytes pytest wrote (stdout, then stderr), for ``-v``."""
        return self.run.output_tail


def file_part(nodeid: str) -> str:
    """The file (or directory) part of a node id: all before its first ``::``.

    Wrong for a path that holds ``::`` itself, but such a head file is a review event
    before any node id of it is read (``unmaterialised``, docs/architecture.md §4), so
    the verdict never rests on the split."""
    return nodeid.split("::", 1)[0]
