"""A discrete-event simulation of a ``patchlane triage --tasks`` run on N nodes (issue 32).

It runs the schedule the model (``bench/scaling_model.py``) describes, task by task, to check
the model's formulas rather than assert them (tests/bench/test_scaling.py):

1. bases are placed largest first (by CPU-seconds), each on the node with the least work
   placed so far (a base never spans nodes: its checkout, environment and map live there);
2. on each node, ``slots`` tasks run at once; a slot never idles while a task of its node is
   ready: preparations first (they start the bases' chains), then the gates of prepared
   bases in the order they became ready (a gate needs its base prepared, on its node);
3. each finished gate's evidence crosses the driver's link (one at a time, in order of
   arrival), then the driver checks and writes it (one at a time).

``spread`` draws a workload with cost spread (log-normal around the given means, seeded), so
the same seed gives the same workload. Standard library only.

Run ``python3 bench/scaling_sim.py`` to print model and simulation side by side on a few
shapes.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaling_model import Base, Cluster, Workload, driver_stage, predict


@dataclass(frozen=True)
class SimResult:
    """One simulated run: ``makespan`` (seconds, the cluster's start included),
    ``compute_end`` (the last gate's end), ``placement`` (each base's node, in the
    workload's order) and ``busy`` (each node's busy slot-seconds)."""

    makespan: float
    compute_end: float
    placement: tuple[int, ...]
    busy: tuple[float, ...]


@dataclass
class _Node:
    slots: int
    preps: deque[int] = field(default_factory=deque)
    pairs: deque[tuple[int, int]] = field(default_factory=deque)
    running: int = 0
    busy: float = 0.0


def place(workload: Workload, nodes: int) -> list[int]:
    """Return each base's node: largest first, on the least-loaded node (lowest index on a
    tie), as Graham's LPT rule places jobs."""
    order = sorted(range(len(workload.bases)), key=lambda i: -workload.bases[i].work)
    load = [0.0] * nodes
    where = [0] * len(workload.bases)
    for i in order:
        node = min(range(nodes), key=lambda k: (load[k], k))
        where[i] = node
        load[node] += workload.bases[i].work
    return where


def simulate(workload: Workload, cluster: Cluster) -> SimResult:
    """Return the simulated run of ``workload`` on ``cluster``. Raises ``ValueError`` for a
    cluster without nodes."""
    if cluster.nodes < 1:
        raise ValueError("a cluster needs a node")
    where = place(workload, cluster.nodes)
    nodes = [_Node(cluster.slots) for _ in range(cluster.nodes)]
    for i in sorted(range(len(workload.bases)), key=lambda i: -workload.bases[i].work):
        nodes[where[i]].preps.append(i)
    events: list[tuple[float, int, int, int, int]] = []  # (end, seq, node, base, pair or -1)
    seq = 0
    arrivals: list[float] = []
    compute_end = 0.0

    def start(now: float, k: int) -> None:
        nonlocal seq
        node = nodes[k]
        while node.running < node.slots and (node.preps or node.pairs):
            if node.preps:
                base, pair, cost = node.preps.popleft(), -1, 0.0
                cost = workload.bases[base].prep_s
            else:
                base, pair = node.pairs.popleft()
                cost = workload.bases[base].pair_s[pair]
            node.running += 1
            node.busy += cost
            seq += 1
            heapq.heappush(events, (now + cost, seq, k, base, pair))

    for k in range(cluster.nodes):
        start(0.0, k)
    while events:
        now, _, k, base, pair = heapq.heappop(events)
        compute_end = max(compute_end, now)
        nodes[k].running -= 1
        if pair < 0:
            nodes[k].pairs.extend((base, j) for j in range(len(workload.bases[base].pair_s)))
        else:
            arrivals.append(now)
        start(now, k)

    net, check = driver_stage(workload, cluster)
    link_free = check_free = 0.0
    for arrival in sorted(arrivals):
        link_free = max(link_free, arrival) + net
        check_free = max(check_free, link_free) + check
    end = max(compute_end, check_free)
    return SimResult(
        makespan=cluster.start_s + end,
        compute_end=cluster.start_s + compute_end,
        placement=tuple(where),
        busy=tuple(n.busy for n in nodes),
    )


def _draw(rng: random.Random, mean: float, cv: float) -> float:
    """Return a log-normal draw of mean ``mean`` and coefficient of variation ``cv``."""
    if cv <= 0 or mean <= 0:
        return mean
    sigma = math.sqrt(math.log(1 + cv * cv))
    return rng.lognormvariate(math.log(mean) - sigma * sigma / 2, sigma)


def spread(
    pairs: Sequence[int],
    prep_s: Sequence[float],
    pair_s: float,
    cv: float,
    seed: int,
    **workload: float,
) -> Workload:
    """Return a workload of one base per entry of ``pairs`` (its pair count) and ``prep_s``
    (its mean preparation), gates of mean ``pair_s``, every cost drawn log-normal with
    coefficient of variation ``cv`` from ``random.Random(seed)``. Raises ``ValueError``
    when the two sequences differ in length."""
    if len(pairs) != len(prep_s):
        raise ValueError("one preparation cost per base")
    rng = random.Random(seed)
    bases = tuple(
        Base(_draw(rng, p, cv), tuple(_draw(rng, pair_s, cv) for _ in range(n)))
        for n, p in zip(pairs, prep_s, strict=True)
    )
    return Workload(bases=bases, **workload)


SHAPES = {
    "12 bases x 40 pairs": ([40] * 12, [60.0] * 12),
    "3 bases x 160 pairs": ([160] * 3, [60.0] * 3),
    "one huge base": ([200] + [20] * 10, [600.0] + [30.0] * 10),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Print model and simulation for a few shapes over N = 1..16 nodes; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", type=int, default=8)
    parser.add_argument("--pair-s", type=float, default=20.0)
    parser.add_argument("--cv", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=32)
    args = parser.parse_args(argv)
    cols = ("shape", "N", "sim s", "model s", "lower", "upper", "sim/model", "pairs/min", "bound")
    print(" | ".join(cols))
    for shape, (pairs, prep) in SHAPES.items():
        workload = spread(pairs, prep, args.pair_s, args.cv, args.seed)
        for n in (1, 2, 4, 8, 16):
            cluster = Cluster(nodes=n, cpus=args.cpus, jobs=args.cpus)
            sim = simulate(workload, cluster)
            model = predict(workload, cluster)
            print(
                f"{shape} | {n} | {sim.makespan:.0f} | {model.estimate:.0f} | {model.lower:.0f}"
                f" | {model.upper:.0f} | {sim.makespan / model.estimate:.2f}"
                f" | {60 * workload.pairs / sim.makespan:.1f} | {model.bottleneck}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
