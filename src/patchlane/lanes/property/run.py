"""The run step: every planned run job run in its child, or its result taken from the
result cache when nothing it read has changed; then the runs that may be reused stored.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from patchlane.formats.property_report import CacheUse, ChildTiming
from patchlane.infra import process
from patchlane.lanes.property.cache import results as resultcache
from patchlane.lanes.property.jobs import ChildJob, Context, Finished, execute


@dataclass(frozen=True)
class Ran:
    """The run step's result: each run job's child result in job order (the child's
    record of its reads taken out), and what the result cache did (``None``: not used)."""

    finished: tuple[Finished, ...]
    cache_use: CacheUse | None

    @property
    def timings(self) -> tuple[ChildTiming, ...]:
        """The children's entries in the report's ``timings.children``, in job order."""
        return tuple(f.timing for f in self.finished)


def run(ctx: Context, jobs: Sequence[ChildJob]) -> Ran:
    """Run every job (``plan.Plan.jobs``), or take its result from the cache when nothing
    it read has changed; then store the runs that may be reused. Raises nothing for what
    a child does: a child that fails, hangs or lies is a result to judge."""
    ready: dict[int, process.ChildRun] = {}
    cache = ctx.cache
    if cache is not None:
        for i, job in enumerate(jobs):
            if job.described is None:
                continue
            start = time.monotonic()
            records = cache.lookup(job.described)
            if records is not None:
                ready[i] = resultcache.hit_run(records, time.monotonic() - start)
                ctx.out.progress(f"property: {job.module} ({job.source}, from the cache)")
        for entry in cache.unverified:
            ctx.out.progress(f"property: cache entry {entry} did not verify: not used")
    finished = execute(ctx, jobs, ready)
    offers: list[tuple[ChildJob, resultcache.Offer | None, str]] = []
    kept = []
    for one in finished:
        if one.job.described is not None and not one.cached:
            result, offer, why = _offer(one.job, one.result)
            offers.append((one.job, offer, why))
            one = Finished(one.job, result, one.cached)
        kept.append(one)
    use = None
    if cache is not None:
        use = _store(ctx, cache, offers, jobs=len(jobs), hits=len(ready))
    return Ran(tuple(kept), use)


def _offer(
    job: ChildJob, result: process.ChildRun
) -> tuple[process.ChildRun, resultcache.Offer | None, str]:
    """Take the child's record of its reads out of ``result``; return the result without
    it (to be judged), the run to store (``None``: it may not be) and why not."""
    assert job.described is not None  # noqa: S101 - only jobs with a key are offered
    result, reads = resultcache.split(result)
    records, why = resultcache.trusted_records(job.names, result)
    if reads is None:
        why = why or "the child sent no well-formed record of its reads"
    if records is None or reads is None:
        return result, None, why
    return result, resultcache.Offer(job.described, records, reads, job.home), ""


def _store(
    ctx: Context,
    cache: resultcache.ResultCache,
    offers: Sequence[tuple[ChildJob, resultcache.Offer | None, str]],
    *,
    jobs: int,
    hits: int,
) -> CacheUse:
    """Store the offered runs and count what the cache did for this lane run."""
    stored = iter(cache.store([offer for _, offer, _ in offers if offer is not None]))
    count = 0
    for job, offer, why in offers:
        if offer is not None:
            why = next(stored)
        if why:
            ctx.out.debug(f"property cache: {job.module} ({job.source}) not stored: {why}")
        else:
            count += 1
    return CacheUse(hits=hits, misses=jobs - hits, stored=count, unverified=len(cache.unverified))
