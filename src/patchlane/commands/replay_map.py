"""``patchlane replay map``: record the base's dependency map (docs/architecture.md §4).

The parser lives in ``patchlane.commands.replay``; this function gets its ``args``.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from patchlane.commands.options import base_ref
from patchlane.errors import Exit, UsageError
from patchlane.formats.depmap import Binding
from patchlane.infra import git
from patchlane.infra.cache import default_cache
from patchlane.infra.cachekey import load_or_create_key
from patchlane.infra.steps import Steps
from patchlane.infra.ui import write_stdout
from patchlane.inputs.jsonio import dumps_report
from patchlane.lanes.replay import maprecord
from patchlane.project.classify import load_map_at
from patchlane.project.config import DEFAULT_MAP

if TYPE_CHECKING:
    from patchlane.main import Context
    from patchlane.project.config import ReviewMap


def main_map(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``replay map``: find the map of ``--base`` in the cache, or record and keep one.

    Prints the map's path (``--json``: path, base, tests, files, whether it was recorded
    now, seconds). Returns 0. Raises ``GitError`` for an unknown ref, ``UsageError`` when the
    base has no review map, ``CollectionError``/``MapRecordingError`` when the base's suite
    cannot be collected or run, ``InputError`` when the cache cannot be written and
    ``CacheKeyError`` when the cache key cannot be read or made (all exit 2).
    """
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be positive")
    repo = ctx.repo()
    base = git.resolve_commit(repo, base_ref(repo, args.base))
    rel = ctx.map_option or DEFAULT_MAP
    review_map = load_map_at(repo, base, rel, "base")
    if review_map is None:
        raise UsageError(f"replay map: the base {base[:12]} has no review map at {rel}")
    cache = args.dep_cache if args.dep_cache is not None else default_cache()
    start = time.monotonic()
    key = load_or_create_key(cache)
    found = maprecord.find(cache, Binding.here(base), key)
    for entry in found.unverified:
        ctx.out.progress(f"replay map: cache entry {entry} did not verify: not used")
    recorded = found.map is None or found.path is None or args.force
    if found.map is not None and found.path is not None and not args.force:
        depmap, path = found.map, found.path
    else:
        seed = args.seed if args.seed is not None else _map_seed(review_map)
        binding = Binding.here(base)
        try:
            # A recording runs the base's whole suite: said on stderr once it runs a while.
            with Steps(ctx.out).step("replay map: recording the base's suite"):
                depmap = maprecord.record(
                    repo, review_map, base, seed=seed, out=ctx.out, timeout_s=args.timeout
                )
        except maprecord.MapRecordingError as e:
            maprecord.keep_failure(cache, binding, str(e), key)  # later gates do not retry it
            raise
        path = depmap.write(cache, key)
        maprecord.forget_failure(cache, binding)
    summary = {
        "path": str(path),
        "base": base,
        "tests": len(depmap.tests),
        "files": len(depmap.lines),
        "blind_tests": len(depmap.blind_tests),
        "recorded": recorded,
        "seconds": round(time.monotonic() - start, 3),
    }
    if ctx.out.json:
        write_stdout(dumps_report(summary))
        return Exit.GREEN
    print(path, flush=True)
    if not ctx.out.quiet:
        what = "recorded" if recorded else "already recorded"
        ctx.out.say(
            f"dependency map of {base[:12]} {what}: {summary['tests']} test(s), "
            f"{summary['files']} file(s) with lines run, {summary['blind_tests']} test(s) "
            "that start processes (the static rules keep those)"
        )
    return Exit.GREEN


def _map_seed(review_map: ReviewMap) -> int:
    """The review map's seed (``ReviewMap.seed``), which ``replay run`` and the gate use;
    else 0."""
    return review_map.seed if review_map.seed is not None else 0
