"""What every step of a replay takes: the lane's options and one frozen ``Stage``.

``lane`` builds the stage once per replay (the public seed checked, the hash seed drawn) and
each mode's pipeline (``local``, ``hosted``) and the checks at the base (``checks``) pass it
on, instead of threading the repository, the classification, the options, both seeds, the
freeze report, the output and the clock through every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats.depmap import DependencyMap
from patchlane.formats.freeze_report import FreezeReport
from patchlane.infra.steps import Steps
from patchlane.infra.ui import Output
from patchlane.lanes.replay.basecheck import BaseRun
from patchlane.lanes.replay.compiled import build_of
from patchlane.lanes.replay.maprecord import RECORD_TIMEOUT_S, obtain
from patchlane.lanes.replay.selection import SliceRequest
from patchlane.project.build import Build
from patchlane.project.classify import Classification
from patchlane.project.replay_command import ReplayCommand


@dataclass(frozen=True)
class ReplayOptions:
    mode: str
    seed: int | None
    failure_log: frozenset[str]
    public_key: Path | None
    slice_path: Path
    receipt_path: Path
    dep_map: str = "off"
    dep_cache: Path | None = None
    dep_map_timeout_s: float = RECORD_TIMEOUT_S
    # The map as the gate obtained it before any lane ran the head's code (``obtain_map``);
    # ``None``: look it up when the slice is selected.
    obtained: tuple[DependencyMap | None, str] | None = None
    # ``mode`` checked (``replay_command.parse_replay``): ``None`` for ``none`` and ``local``.
    command: ReplayCommand | None = None
    # ``--test-timeout``: each test's bound in seconds (``None``: derived, ``testbound``).
    test_timeout_s: float | None = None


@dataclass(frozen=True)
class Stage:
    """What every step of one replay takes: the repository, the patch's classification, the
    options, the public ``seed`` the receipt answers to, the ``hash_seed`` drawn for the
    gate's own children (the run and the checks beside it at the base alike), the freeze
    report, where it speaks, its clock, and each run's wall clock (``timeout_s``)."""

    repo: Path
    cls: Classification
    opts: ReplayOptions
    seed: int
    hash_seed: int
    freeze_report: FreezeReport
    out: Output
    clock: Steps
    timeout_s: float

    @property
    def build(self) -> Build | None:
        """The map's build command, which every materialised tree runs before its tests."""
        return build_of(self.cls)

    @property
    def base(self) -> BaseRun:
        """How this replay runs tests at the merge base (``basecheck``)."""
        return BaseRun(
            self.repo, self.cls.merge_base, self.hash_seed, self.timeout_s, build_of(self.cls)
        )

    @property
    def freeze_path(self) -> Path | None:
        """The freeze report the gate wrote beside the receipt, if it did."""
        path = self.opts.receipt_path.parent / "freeze-report.json"
        return path if path.is_file() else None

    def the_map(self) -> tuple[DependencyMap | None, str]:
        """The map the gate obtained before the lanes ran, else the one looked up now.
        Raises what ``maprecord.obtain`` raises."""
        if self.opts.obtained is not None:
            return self.opts.obtained
        with self.clock.step("replay: dependency map"):
            return dependency_map(self.repo, self.cls, self.opts, self.seed, self.out)

    def slice_request(self, the_map: tuple[DependencyMap | None, str]) -> SliceRequest:
        """The patch as selection takes it, with ``the_map`` (the map, and its note)."""
        dep_map, note = the_map
        cls = self.cls
        return SliceRequest(
            head=cls.head,
            merge_base=cls.patch.merge_base,
            changed_paths=cls.patch.changed_paths,
            failure_log=self.opts.failure_log,
            all_tests=False,
            dep_map=dep_map,
            dep_map_note=note,
        )


def dependency_map(
    repo: Path, cls: Classification, opts: ReplayOptions, seed: int, out: Output
) -> tuple[DependencyMap | None, str]:
    """The merge base's dependency map and a note on it (``maprecord.obtain``)."""
    return obtain(
        repo,
        cls.patch.review_map,
        cls.merge_base,
        mode=opts.dep_map,
        cache=opts.dep_cache,
        timeout_s=opts.dep_map_timeout_s,
        seed=seed,
        out=out,
    )


def added_or_changed(cls: Classification) -> list[str]:
    """The head's paths the patch adds, changes, copies or renames to."""
    return [f.path for f in cls.files if f.status[:1] != "D"]


def quote(ids: Sequence[str], limit: int = 5) -> str:
    """The first ``limit`` of ``ids``, and how many more."""
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
