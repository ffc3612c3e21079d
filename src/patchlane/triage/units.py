"""The values a tasks run (``patchlane triage --tasks``) passes between its driver, its engine
and the workers: built once at the edge (``triage.tasks``), frozen, and plain enough to cross
a process or a Ray task boundary (strings, numbers, bytes, tuples of them).

The unit of work is one base (``Unit``): its repository, commit and environment, and the
candidates gated against it (``Pair``). A worker prepares the base once (``Prepared``: the
checkout, the interpreter, the dependency map recorded) and gates each pair where that base
lives; every pair comes back as a ``PairResult`` with its evidence as bytes, which the driver
writes and checks itself. An infrastructure failure (a lost worker, a timeout, a set-up that
failed) is a ``PairResult`` with ``infra`` set: an ``undecided`` that is counted apart, never
a verdict on the patch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

# What an infrastructure failure's verdict is: never a pass, never a judgement of the patch.
INFRA_VERDICT = "undecided"
# Its exit code: ``gate``'s for ``undecided`` (``patchlane.errors.Exit.UNDECIDED``); a bug in
# patchlane met on the way is 4 (``Exit.INTERNAL``), passed by the caller.
INFRA_EXIT = 3
INFRA_PREFIX = "infrastructure: "
_REASON_MAX = 400


@dataclass(frozen=True)
class BaseSpec:
    """One base of a tasks file: ``repo`` (a path or a URL git can fetch), ``base_commit``
    (a full commit id), how its environment is made (``setup``: a command run once in the
    sandbox into an environment cached by base and command; or ``python``: an interpreter
    that exists; neither: the driver's own), ``map_text`` (the review map to use when the
    base has none) and ``test_cmd`` (the project's own test command, shown in the note)."""

    repo: str
    base_commit: str
    setup: str | None = None
    python: str | None = None
    map_text: str | None = None
    test_cmd: str | None = None

    @property
    def key(self) -> str:
        """The base's content key (hex SHA-256): what its preparation depends on. Two tasks
        with equal keys share one preparation."""
        return content_key(
            {
                "repo": self.repo,
                "base_commit": self.base_commit,
                "setup": self.setup,
                "python": self.python,
                "map": self.map_text,
            }
        )


@dataclass(frozen=True)
class Pair:
    """One (instance, candidate) to gate: the prediction's ``instance_id`` and
    ``model_name_or_path``, ``name`` (its evidence folder under the out dir,
    ``<instance>/<model>``, unique in the run), ``source`` (``FILE:LINE`` of the
    prediction), the diff's bytes, and ``key``: the content key a rerun finds it by
    (``pair_key``)."""

    instance_id: str
    model: str
    name: str
    source: str
    patch: bytes
    key: str


@dataclass(frozen=True)
class Unit:
    """One base and the pairs gated against it, in the predictions' order."""

    base: BaseSpec
    pairs: tuple[Pair, ...]


@dataclass(frozen=True)
class Prepared:
    """A base made ready on one machine: ``checkout`` (a git repository holding the base),
    ``python`` (the interpreter the gates run under, with patchlane importable),
    ``gate_base`` (the commit the gates take as ``--base``: ``base_commit``, or a commit on
    it that adds the review map when the base has none), ``node`` (where it lives: the
    host name, or Ray's node id), and the seconds it took."""

    base_key: str
    checkout: str
    python: str
    gate_base: str
    node: str
    seconds: float


@dataclass(frozen=True)
class PairResult:
    """What gating one pair gave: ``verdict`` (a gate's verdict, or one of triage's
    ``does_not_apply``/``empty_patch``/``error`` rows), ``exit_code`` (what ``gate`` would
    exit with), ``reason`` (one line), ``infra`` (an infrastructure failure: ``verdict`` is
    ``undecided``), ``attempts`` (1, or 2 after a retry), ``seconds``, ``row`` (the triage
    row as JSON text, ``""`` when none) and ``evidence`` (the evidence folder as an
    uncompressed tar archive, ``b""`` when none)."""

    key: str
    instance_id: str
    model: str
    name: str
    verdict: str
    exit_code: int
    reason: str
    infra: bool
    attempts: int
    seconds: float
    row: str = ""
    evidence: bytes = b""


@dataclass(frozen=True)
class RunPlan:
    """How every pair is gated: ``gate_argv`` (the gate options, as command-line words, the
    same for every pair), ``work_dir`` (where a worker keeps checkouts, environments and
    maps on its machine), ``jobs`` (gates at a time on one machine) and ``pair_timeout_s``
    (a gate's wall-clock bound; past it the pair is an infrastructure failure)."""

    gate_argv: tuple[str, ...]
    work_dir: str
    jobs: int
    pair_timeout_s: float


@dataclass(frozen=True)
class BaseEvent:
    """A base's preparation ended: ``error`` is ``None`` when it is ready, else the
    infrastructure reason (every pair of the base then comes back ``infra``)."""

    base_key: str
    node: str
    seconds: float
    error: str | None


Report = Callable[[BaseEvent | PairResult], None]


class Engine(Protocol):
    """Runs units of work somewhere: ``local`` (this machine) or ``ray`` (a cluster)."""

    name: str

    def run(self, units: Sequence[Unit], plan: RunPlan, report: Report) -> None:
        """Prepare each unit's base once and gate its pairs where it lives, calling
        ``report`` (from any thread, one call at a time) with a ``BaseEvent`` per base and
        exactly one ``PairResult`` per pair. A failure of one unit never stops the others;
        raises only for a failure of the engine itself (the cluster cannot be reached)."""
        ...


def infra_result(
    pair: Pair, why: str, attempts: int, seconds: float = 0.0, code: int = INFRA_EXIT
) -> PairResult:
    """Return ``pair``'s result when it could not be gated (a lost worker, a timeout, a
    set-up that failed): ``undecided``, ``infra``, counted apart; never a verdict on the
    patch. ``why`` becomes one line of at most 400 characters, starting
    ``infrastructure: `` (added when it does not already)."""
    reason = " ".join(why.split())
    if not reason.startswith(INFRA_PREFIX):
        reason = INFRA_PREFIX + reason
    return PairResult(
        key=pair.key,
        instance_id=pair.instance_id,
        model=pair.model,
        name=pair.name,
        verdict=INFRA_VERDICT,
        exit_code=int(code),
        reason=reason[:_REASON_MAX],
        infra=True,
        attempts=attempts,
        seconds=seconds,
    )


def content_key(value: object) -> str:
    """Return the hex SHA-256 of ``value`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pair_key(version: str, base: BaseSpec, gate_argv: Sequence[str], patch: bytes) -> str:
    """Return a pair's content key: patchlane's ``version``, the base's key, the gate
    options and the patch's bytes. Not the names: the same patch for the same base under
    another model name is the same gate."""
    return content_key(
        {
            "patchlane": version,
            "base": base.key,
            "gate": list(gate_argv),
            "patch": hashlib.sha256(patch).hexdigest(),
        }
    )
