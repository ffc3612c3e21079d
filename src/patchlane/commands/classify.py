"""``patchlane classify``: list changed files and assign lanes (docs/architecture.md §1, §2)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from patchlane.commands.options import add_diff_options, base_ref, publish
from patchlane.errors import Exit
from patchlane.infra.ui import show

if TYPE_CHECKING:
    from patchlane.main import Context
    from patchlane.project.classify import Classification


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="List the files the patch changes (git diff against the merge base of "
        "--base and --head, renames and deletions included) and assign each to its lanes "
        "using the base's review map. Exit 0 when the map covers the diff, 3 when it must "
        "be extended.",
    )
    add_diff_options(p)
    p.add_argument("--out", metavar="FILE", help="write classify.json here")


def run(args: argparse.Namespace, ctx: Context) -> int:
    from patchlane.project.classify import classify

    repo = ctx.repo()
    result = classify(repo, base_ref(repo, args.base), args.head, ctx.map_option)
    data = result.to_json()
    publish(ctx.out, data, args.out, lambda: print_summary(result, ctx))
    return Exit.GREEN if result.map_complete else Exit.UNDECIDED


def print_summary(result: Classification, ctx: Context) -> None:
    """Print the human summary of a classification."""
    out = ctx.out
    src = result.map_source
    changed = ", changed by the patch" if src.changed else ""
    out.say(f"map: {show(src.path or '')} ({src.source}{changed})")
    for f in result.files:
        name = show(f.path) if f.old_path is None else f"{show(f.old_path)} -> {show(f.path)}"
        lanes = ",".join(f.lanes) or ("ignored" if f.ignored_reason is not None else "-")
        out.say(f"  {f.status} {name}  [{lanes}]")
    for lane, info in result.lanes.items():
        out.say(f"{lane}: {'applicable' if info.applicable else 'not_applicable'} ({info.reason})")
    for path, kind in result.control_plane:
        why = result.control_why.get((path, kind))
        out.say(f"control plane: {show(path)} ({kind}{': ' + show(why) if why else ''})")
    for path in result.unmapped:
        out.say(f"unmapped: {show(path)}")
    out.say(f"map_complete: {json.dumps(result.map_complete)} ({result.map_reason})")
