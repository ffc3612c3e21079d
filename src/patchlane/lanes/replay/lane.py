"""The replay lane's entry: which pipeline runs, and what every one of them ends with.

Replay runs only when every local lane is green. ``--replay none`` stops at ``undecided``;
``local`` runs the slice here, on the head commit materialised from git (``local``); any
other value is a command with ``{slice}`` and ``{receipt}`` placeholders that submits the
slice to the user's own runner or a hosted one and leaves a receipt behind (``hosted``); it
runs from a copy of the base, never the patch's work tree (``replay_command``). Whatever
comes back is verified before it is believed, then checked at the base (``checks``); a
command that fails or leaves no receipt is an unreachable host (``undecided``), never a
pass. Every pipeline takes one frozen ``Stage`` (``stage``), built here once.
"""

from __future__ import annotations

from pathlib import Path

from patchlane.errors import ForeignCode, UsageError
from patchlane.formats.depmap import DependencyMap
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.infra.steps import Steps
from patchlane.infra.ui import Output
from patchlane.lanes.replay.compiled import compiled_events, judge_build_failure
from patchlane.lanes.replay.hosted import replay_hosted
from patchlane.lanes.replay.local import replay_here
from patchlane.lanes.replay.reports import no_evidence, skipped, with_events
from patchlane.lanes.replay.run import draw_hash_seed
from patchlane.lanes.replay.stage import ReplayOptions, Stage, dependency_map
from patchlane.lanes.replay.testbound import bounded, for_replay
from patchlane.project.build import BuildFailed
from patchlane.project.classify import Classification
from patchlane.project.replay_command import RUN_TIMEOUT_S

__all__ = ["RUN_TIMEOUT_S", "ReplayOptions", "obtain_map", "replay"]


def obtain_map(
    repo: Path, cls: Classification, opts: ReplayOptions, seed: int | None, out: Output
) -> tuple[DependencyMap | None, str] | None:
    """Return the base's dependency map and its note for the gate to hold in memory, or
    ``None`` when the replay will not select a slice with one (``--dep-map off``,
    ``--replay none``, no seed).

    Called before any lane runs the head's code: that code runs as this user and could
    write a map for the base into the cache, which a later lookup would take (a patch's
    property, or its oracle audit, found ``--dep-cache`` on an ancestor's command line).
    Raises what ``maprecord.obtain`` raises.
    """
    if opts.dep_map == "off" or opts.mode == "none" or seed is None:
        return None
    return dependency_map(repo, cls, opts, seed, out)


def replay(
    repo: Path,
    cls: Classification,
    opts: ReplayOptions,
    local_green: bool,
    freeze_report: FreezeReport,
    out: Output,
    steps: Steps | None = None,
) -> ReplayReport:
    """Return the replay lane's report (and write the slice and receipt files it used),
    with the review events compiled code raises (``lanes.replay.compiled``).

    Raises ``UsageError`` without a seed, ``CollectionError`` when pytest cannot collect the
    suite and the patch changes no harness file (this machine's fault, not the patch's),
    ``EnvironmentFault`` for a test file that cannot import a package at base and head
    alike, or for a map's build command that fails at both.
    """
    if not local_green:
        # A local lane that is not green is red: the verdict is already reject, and the
        # replay is skipped whatever --replay asked for (no evidence, not an error).
        return skipped(opts.mode)
    if opts.mode == "none":
        report = no_evidence("none", ReplayOutcome.NOT_RUN, "replay not run (--replay none)")
    elif opts.seed is None:
        raise UsageError(
            "--replay needs a seed: pass --seed N or set lanes.replay.seed in the review map"
        )
    else:
        stage = Stage(
            repo,
            cls,
            opts,
            seed=opts.seed,
            # The PYTHONHASHSEED and Hypothesis seed of every child this stage starts on the
            # head or the base (the run, and the checks beside it at the base, alike): drawn
            # afresh for each gate, never from the public seed, which a patch could be tuned
            # to.
            hash_seed=draw_hash_seed(),
            freeze_report=freeze_report,
            out=out,
            clock=steps if steps is not None else Steps(Output(quiet=True)),
            timeout_s=RUN_TIMEOUT_S,  # read here: a test may shorten it (this module's name)
        )
        report = _judged(stage)
    events = compiled_events(repo, cls)
    return with_events(report, *events) if events else report


def _judged(stage: Stage) -> ReplayReport:
    """The report of the pipeline ``stage.opts.mode`` names (``local``, else ``hosted``),
    every test bounded (``testbound``); a map's build command that fails in a tree is
    judged (``compiled.judge_build_failure``), and code under test imported from outside
    the tree under judgement is no evidence. Raises what ``replay`` raises."""
    opts = stage.opts
    bound = for_replay(opts.test_timeout_s, opts.obtained[0] if opts.obtained else None)
    try:
        with bounded(bound):  # every test this lane runs, at the head and the base
            return replay_here(stage) if opts.mode == "local" else replay_hosted(stage)
    except BuildFailed as e:
        return judge_build_failure(stage.repo, stage.cls, opts.mode, e.result)
    except ForeignCode as e:
        # The code under test was not the tree under judgement: no evidence (rule 6).
        return no_evidence(opts.mode, ReplayOutcome.NO_EVIDENCE, str(e))
