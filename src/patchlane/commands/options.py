"""Options and output helpers that several commands share."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.errors import UsageError
from patchlane.infra.ui import write_stdout

if TYPE_CHECKING:
    from patchlane.infra.ui import Output


# The --base default, as every command's help says it (``init_layout.default_base``).
BASE_DEFAULT_HELP = (
    "default: origin/HEAD's branch, as the local branch of that name, else origin/NAME; "
    "else main, else master; none: exit 2"
)


def add_base_option(p: argparse.ArgumentParser, what: str) -> None:
    """Add ``--base`` (default ``None``: ``base_ref`` finds the default branch); ``what``
    begins its help."""
    p.add_argument("--base", metavar="REF", help=f"{what} ({BASE_DEFAULT_HELP})")


def base_ref(repo: Path, given: str | None) -> str:
    """Return ``--base`` as given, else the default branch (``init_layout.default_base``, the
    branch ``init``'s next line assumes). Raises ``UsageError`` when there is none."""
    from patchlane.commands.init_layout import default_base

    if given is not None:
        return given
    base = default_base(repo)
    if not base.found:
        raise UsageError(
            "no --base given and no default branch (origin/HEAD, main or master): "
            "pass --base REF, the branch patches are judged against"
        )
    return base.ref


def add_diff_options(p: argparse.ArgumentParser) -> None:
    """Add ``--base`` (default: ``base_ref``'s) and ``--head`` (default HEAD) to a command's
    parser."""
    add_base_option(p, "the revision the patch is judged against")
    p.add_argument(
        "--head", metavar="REF", default="HEAD", help="the patched revision (default: HEAD)"
    )


def publish(out: Output, data: Any, path: str | Path | None, summary: Callable[[], None]) -> None:
    """Write a report to ``--out`` (atomically) when given, then show it: with ``--json`` the
    same bytes on stdout (also for a path that is not UTF-8), else the human ``summary``."""
    from patchlane.inputs.jsonio import dumps_report, write_json

    if path:
        write_json(Path(path), data)
    if out.json:
        write_stdout(dumps_report(data))
    else:
        summary()


def seed_value(text: str) -> int:
    """argparse type for ``--seed``: an integer from 0 to 2**32 - 1 (the replay passes it on
    as ``PYTHONHASHSEED``, which accepts no other). Raises ``ArgumentTypeError``."""
    from patchlane.project.config import MAX_SEED

    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text[:40]!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_SEED}, not {text[:40]}")
    return value


DEP_MAP_ENV = "PATCHLANE_DEP_MAP"
DEP_MAP_TIMEOUT_ENV = "PATCHLANE_DEP_MAP_TIMEOUT"


def seconds_value(text: str) -> float:
    """argparse type for a positive number of seconds. Raises ``ArgumentTypeError``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text[:40]!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text[:40]}")
    return value


def dep_map_timeout(value: float | None) -> float:
    """Return the recording timeout: ``--dep-map-timeout``, else $PATCHLANE_DEP_MAP_TIMEOUT,
    else ``RECORD_TIMEOUT_S``. Raises ``UsageError`` for an environment value that is not a
    positive number."""
    from patchlane.lanes.replay.maprecord import RECORD_TIMEOUT_S

    if value is not None:
        return value
    text = os.environ.get(DEP_MAP_TIMEOUT_ENV)
    if not text:
        return RECORD_TIMEOUT_S
    try:
        return seconds_value(text)
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"${DEP_MAP_TIMEOUT_ENV}={text[:40]!r}: {e}") from None


def add_dep_map_options(p: argparse.ArgumentParser) -> None:
    """Add ``--dep-map`` and ``--dep-cache``: whether selection uses the base's dependency map
    (``replay map``), and where maps are kept."""
    p.add_argument(
        "--dep-map",
        choices=("auto", "off"),
        default=os.environ.get(DEP_MAP_ENV) or "auto",
        help="auto: the slice is what the base's dependency map says the patch can reach "
        "(recorded on first use: the base's whole suite runs once with coverage; cached per "
        "base commit), widened wherever the map cannot vouch; off: the static rules alone "
        "choose it, which on most libraries is the whole suite "
        f"(default: ${DEP_MAP_ENV}, else auto)",
    )
    p.add_argument(
        "--dep-map-timeout",
        type=seconds_value,
        default=None,
        metavar="SECONDS",
        help="wall-clock limit for recording a missing map; when it runs out the slice "
        f"keeps to the static rules (default: ${DEP_MAP_TIMEOUT_ENV}, else 1800)",
    )
    p.add_argument(
        "--dep-cache",
        type=Path,
        metavar="DIR",
        help="where dependency maps are kept (default: $PATCHLANE_CACHE_DIR, else "
        "$XDG_CACHE_HOME/patchlane, else ~/.cache/patchlane)",
    )


def add_test_timeout_option(p: argparse.ArgumentParser, default_help: str) -> None:
    """Add ``--test-timeout``: each replayed test's own wall clock (``testbound``);
    ``default_help`` says what it is when not given."""
    p.add_argument(
        "--test-timeout",
        type=seconds_value,
        default=None,
        metavar="SECONDS",
        help="wall clock of each test the replay runs, kept by patchlane (the test cannot "
        "stop it): a test past it fails, 'timed out', and the run stops there; one past it "
        f"at the base as well is this machine's (exit 2) ({default_help})",
    )


PROPERTY_CACHE_ENV = "PATCHLANE_PROPERTY_CACHE"


def add_property_cache_option(p: argparse.ArgumentParser) -> None:
    """Add ``--property-cache``: whether property runs reuse the results of earlier runs
    whose inputs are unchanged (the result cache in patchlane's cache directory)."""
    p.add_argument(
        "--property-cache",
        choices=("on", "off"),
        default=os.environ.get(PROPERTY_CACHE_ENV) or "on",
        help="on: a property run whose module, settings and every file it read are unchanged "
        "since an earlier run takes that run's result instead of starting a child; off: "
        "every run starts a child and nothing is stored (default: "
        f"${PROPERTY_CACHE_ENV}, else on)",
    )


def property_cache_enabled(value: str) -> bool:
    """Return whether ``--property-cache`` (or its environment default) is ``on``. Raises
    ``UsageError`` for a value other than ``on`` or ``off`` (argparse checks the choices
    of the command line, not a default taken from the environment)."""

    if value not in ("on", "off"):
        raise UsageError(f"${PROPERTY_CACHE_ENV}={value!r}: expected on or off")
    return value == "on"


# A candidate's gate in a tasks run, at most (an hour: a large suite's slice and the
# property runs of a slow project, with room to spare).
PAIR_TIMEOUT_S = 3600.0


def add_tasks_options(p: argparse.ArgumentParser) -> None:
    """Add the options of a tasks run (``triage --tasks``), which ``triage`` hands to
    ``triage_tasks``; both read them, so they live here, below both."""
    g = p.add_argument_group("a benchmark's tasks (--tasks)")
    g.add_argument(
        "--tasks",
        type=Path,
        metavar="FILE",
        help="tasks.jsonl (instance_id, repo, base_commit; optional setup, python, map, "
        "test_cmd): the candidates are then predictions .jsonl files, each gated against "
        "its instance's base; --base does not apply",
    )
    g.add_argument(
        "--engine",
        default="local",
        metavar="NAME",
        help="where the tasks run: local (this machine, the default) or ray (a Ray "
        "cluster; pip install 'patchlane[ray]')",
    )
    g.add_argument(
        "--address",
        metavar="ADDR",
        help="the Ray cluster to use (default: $RAY_ADDRESS, else one started for the run)",
    )
    g.add_argument(
        "--pair-timeout",
        type=seconds_value,
        default=None,
        metavar="SECONDS",
        help=f"wall-clock bound of one candidate's gate; past it the candidate is undecided "
        f"for the infrastructure (default: {PAIR_TIMEOUT_S:.0f})",
    )
    g.add_argument(
        "--work-dir",
        type=Path,
        metavar="DIR",
        help="where each machine keeps the bases' checkouts, environments and maps "
        "(default: tasks/ in patchlane's cache directory)",
    )
