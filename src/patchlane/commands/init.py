"""``patchlane init``: scaffold a review map, an empty freeze registry and fixture locks.

What it finds decides what it writes, and what it cannot find it leaves out with a comment
rather than guessing. It finds the code (``init_layout``), where the tests are
(``init_roots``), the prose (``init_prose``) and the candidate properties: a property
module (``checks.props``) and the project's Hypothesis ``@given`` tests (``init_given``).
It runs those once at the work tree, as the property lane would, and keeps only what holds
there (``init_trial``); without any, the code is judged by the base's tests alone
(``lanes.replay.paths``) and its seed goes in ``lanes.replay.seed``, so the printed gate
command works as written. Every file is rendered and validated before the first is
written, and nothing existing is overwritten without ``--force``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchlane.main import Context


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Scaffold review-map.yml in an existing git repository: the code's paths "
        "(packages and modules in src/, else at the top level, namespace packages included), "
        "where the tests are (pytest's testpaths, else the folders and top-level files that "
        "hold test modules), the properties that hold at the work tree (a checks.props module "
        "and Hypothesis @given tests, each run once in the sandbox; one that fails there or "
        "needs pytest fixtures is left out with a line saying why), else the code in "
        "lanes.replay.paths (judged by the base's tests alone) with its seed in "
        "lanes.replay.seed; the prose (top-level changelog, authors, readme and licence files, "
        "documentation folders) as "
        "ignore entries; fixture roots from --fixtures or tests/fixtures/*/. Also writes an "
        "empty freeze registry (flaky-freeze.yml in the tests' folder) and a LOCK.json for "
        "each fixture root, appends .patchlane/ to an existing .gitignore that lacks it, and "
        "prints the gate command to run next once the scaffold is committed on the current "
        "branch (it passes --base only when that branch is not the one the gate defaults "
        "to). Refuses to overwrite an existing file (exit 2) unless --force.",
    )
    p.add_argument(
        "--fixtures",
        action="append",
        metavar="DIR",
        default=None,
        help="a fixture root to lock (repeatable; default: every tests/fixtures/*/ directory)",
    )
    p.add_argument("--force", action="store_true", help="overwrite files that already exist")


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``init`` (``init_scaffold.run``); return its exit code."""
    # Here, not at the top: the survey's modules (YAML, git, the property lane's child
    # helpers) would more than double what ``patchlane init --help`` loads.
    from patchlane.commands.init_scaffold import run as scaffold

    return scaffold(args, ctx)
