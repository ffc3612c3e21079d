"""``patchlane replay select|split|run|verify|merge|map``: the bounded, receipted replay lane.

This module only defines the command line; each action's work lives in
``patchlane.lanes.replay`` (imported when the action runs, so ``--help`` stays cheap).
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.commands.options import (
    add_base_option,
    add_dep_map_options,
    add_diff_options,
    add_test_timeout_option,
    seed_value,
)

if TYPE_CHECKING:
    from patchlane.main import Context

# action -> (module under patchlane.commands, function)
ACTIONS = {
    "select": ("replay_select", "main_select"),
    "split": ("replay_select", "main_split"),
    "run": ("replay_receipt", "main_run"),
    "verify": ("replay_receipt", "main_verify"),
    "merge": ("replay_receipt", "main_merge"),
    "map": ("replay_map", "main_map"),
}


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``replay`` and its actions to the sub-parsers."""
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Replay only the tests the local lanes could not decide, as a hashed "
        "slice, and check the receipt a host returns against it.",
    )
    actions = p.add_subparsers(dest="replay_command", metavar="ACTION", parser_class=type(p))
    actions.required = True
    for add in (_add_select, _add_split, _add_run, _add_verify, _add_merge, _add_map):
        add(actions, parents)


def _add_select(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    select = actions.add_parser(
        "select",
        parents=parents,
        help="write the slice of node ids the local lanes could not decide; print its sha256",
        description="Write the replay slice: the tests in changed test files, the tests whose "
        "files import a changed module (directly or through other project modules), the tests "
        "that name a changed fixture file, and the node ids in the failure log (--all: the "
        "whole suite under replay.tests). One node id per line, sorted, UTF-8, '\\n' line ends; "
        "its sha256 is printed. A slice that needs private or secret-bearing files is marked "
        "private: run it locally or on your own runner. Exit 0 written, 2 bad input.",
    )
    add_diff_options(select)
    select.add_argument("--property-report", type=Path, metavar="FILE", help="property-report.json")
    select.add_argument(
        "--failure-log", type=Path, metavar="FILE", help="JUnit XML or FAILED lines"
    )
    select.add_argument("--all", action="store_true", help="the whole suite under replay.tests")
    add_dep_map_options(select)
    select.add_argument("--out", type=Path, metavar="FILE", help="write the slice here")


def _add_split(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    split = actions.add_parser(
        "split",
        parents=parents,
        help="split a slice into N hashed sub-slices for a CI matrix",
        description="Split a slice into N sub-slices (each sorted and hashed) for a CI matrix; "
        "'replay merge' combines their receipts into one for the whole slice.",
    )
    split.add_argument(
        "--slice", type=Path, required=True, metavar="FILE", help="the slice to split"
    )
    split.add_argument(
        "--shards", type=int, required=True, metavar="N", help="how many sub-slices to write"
    )
    split.add_argument(
        "--out-dir",
        type=Path,
        required=True,
        metavar="DIR",
        help="where slice-K-of-N.txt go, one per shard (each one's sha256 is printed)",
    )


def _add_run(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    run = actions.add_parser(
        "run",
        parents=parents,
        help="on the host: run exactly the slice with pytest and write a receipt",
        description="Run exactly the slice's node ids with pytest in this work tree, skipping "
        "only the in-play, passing freezes of --freeze-report, and write a receipt naming its "
        "HEAD; a work tree that holds anything HEAD does not (a tracked change, staged or not; "
        "an untracked file git does not ignore; .patchlane/ and the given files aside) is "
        "refused (exit 2). A node that errors, is "
        "missing or is deselected is failed, never passed. With --signing-key (or "
        "PATCHLANE_SIGNING_KEY) the receipt is signed (Ed25519, DSSE-style). Exit 0 when "
        "every node passed or was skipped by a freeze, 1 otherwise, 2 bad input. A skip or "
        "xfail the suite makes on its own is recorded as skipped_nodeids (neither evidence nor "
        "failure; the gate checks those nodes at the base).",
    )
    run.add_argument(
        "--slice", type=Path, required=True, metavar="FILE", help="the slice 'replay select' wrote"
    )
    run.add_argument(
        "--seed",
        type=seed_value,
        required=True,
        metavar="N",
        help="the public seed the receipt answers to (replay verify checks it)",
    )
    run.add_argument(
        "--hash-seed",
        type=seed_value,
        metavar="N",
        help="PYTHONHASHSEED and Hypothesis seed of the run (default: drawn afresh from "
        "os.urandom); recorded in the receipt as hash_seed: pass a receipt's to reproduce it",
    )
    run.add_argument(
        "--freeze-report",
        type=Path,
        metavar="FILE",
        help="freeze-report.json: its in-play, passing freezes are the only skips "
        "(absent: nothing is skipped)",
    )
    run.add_argument(
        "--base",
        metavar="REF",
        help="the patch's base: the test files the patch adds or changes since its merge base "
        "run in a pytest process apart from the others, and the receipt names that merge "
        "base (split_base); without it one process runs the whole slice",
    )
    run.add_argument("--signing-key", type=Path, metavar="FILE", help="Ed25519 private key (PEM)")
    run.add_argument(
        "--host-role", default="local", metavar="ROLE", help="who ran it (default: local)"
    )
    run.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="wall clock for the whole run",
    )
    add_test_timeout_option(run, "default: 120")
    run.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="write receipt.json here"
    )


def _add_verify(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    verify = actions.add_parser(
        "verify",
        parents=parents,
        help="check a receipt against the slice, its seed, the head and the freeze report",
        description="Check a receipt before believing it. Exit 3 (refused) on a different "
        "slice hash, seed or head; a failed or skipped node outside the slice; a skip that is "
        "not an in-play, passing freeze; passed+failed+skipped not equal to the slice; a "
        "missing or bad signature where the map requires one; malformed JSON or unknown "
        "fields. Exit 1 when a valid receipt shows a non-frozen failure, 0 otherwise.",
    )
    verify.add_argument(
        "--slice", type=Path, required=True, metavar="FILE", help="the slice the host ran"
    )
    verify.add_argument(
        "--receipt", type=Path, required=True, metavar="FILE", help="the host's receipt.json"
    )
    verify.add_argument(
        "--freeze-report",
        type=Path,
        required=True,
        metavar="FILE",
        help="freeze-report.json: the freezes a receipt's skips must match",
    )
    verify.add_argument(
        "--seed",
        type=seed_value,
        metavar="N",
        help="expected seed (default: the map's lanes.property.seed, else lanes.replay.seed)",
    )
    verify.add_argument(
        "--head", metavar="REF", default="HEAD", help="expected head commit (default: HEAD)"
    )
    verify.add_argument(
        "--public-key", type=Path, metavar="FILE", help="Ed25519 public key (PEM) of the host"
    )
    verify.add_argument("--out", type=Path, metavar="FILE", help="write replay-report.json here")


def _add_merge(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    merge = actions.add_parser(
        "merge",
        parents=parents,
        help="combine the receipts of split sub-slices into one for the whole slice",
        description="Combine shard receipts (each checked against its sub-slice) into one "
        "receipt for the whole slice.",
    )
    merge.add_argument("--slice", type=Path, required=True, metavar="FILE", help="the whole slice")
    merge.add_argument(
        "--shard",
        nargs=2,
        action="append",
        required=True,
        type=Path,
        metavar=("SLICE", "RECEIPT"),
        help="a sub-slice and its receipt (repeat for every shard)",
    )
    merge.add_argument("--public-key", type=Path, metavar="FILE", help="verify shard signatures")
    merge.add_argument("--signing-key", type=Path, metavar="FILE", help="sign the merged receipt")
    merge.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="write the merged receipt here"
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Dispatch to the action's implementation; return its exit code."""
    module, function = ACTIONS[args.replay_command]
    mod = importlib.import_module(f"patchlane.commands.{module}")
    code: int = getattr(mod, function)(args, ctx)
    return code


def _add_map(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    record = actions.add_parser(
        "map",
        parents=parents,
        help="record the base's dependency map (what each test ran, read and imported)",
        description="Run the whole suite under replay.tests once on the base commit "
        "(materialised from git, in the replay's isolated child) with coverage.py, and keep, "
        "per test, the lines it ran in the project's files, the files it opened, the "
        "directories it listed and the modules it imported. The map is bound to the base "
        "commit and the versions of Python, pytest and coverage.py, written to the cache "
        "(--dep-cache) under the SHA-256 of its bytes with a MAC under the user's cache key "
        "($PATCHLANE_KEY_DIR, else ~/.config/patchlane: cache.key), and used by 'replay "
        "select' and 'gate' to narrow the slice. A map already recorded with this binding "
        "whose MAC verifies is reused (--force "
        "records again). Prints the map's path. Exit 0 recorded or found, 2 bad input or a "
        "base suite that cannot run.",
    )
    add_base_option(record, "the commit to record")
    record.add_argument(
        "--seed",
        type=seed_value,
        metavar="N",
        help="PYTHONHASHSEED for the run (default: the map's lanes.property.seed, else lanes.replay.seed, else 0)",
    )
    record.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="wall clock for the base's whole suite (default: 1800)",
    )
    record.add_argument("--force", action="store_true", help="record again even if cached")
    record.add_argument(
        "--dep-cache",
        type=Path,
        metavar="DIR",
        help="where dependency maps are kept (default: $PATCHLANE_CACHE_DIR, else "
        "$XDG_CACHE_HOME/patchlane, else ~/.cache/patchlane)",
    )
