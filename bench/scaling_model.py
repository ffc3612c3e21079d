"""How a ``patchlane triage --tasks`` run scales to N nodes: the closed-form model (issue 32).

docs/explanation/scaling.md explains it; ``bench/scaling_sim.py`` is the discrete-event
simulation it is checked against (tests/bench/test_scaling.py), and ``bench/triage_engines.py``
feeds it the costs measured on this machine. Pure Python, standard library only.

The run, as the engines do it: a base (one ``Unit``) is prepared once, on one node, in one
CPU slot (the fetch of its repository, the checkout, the environment, the dependency map,
the base's property runs); its pairs are then gated on that node only (pinned: the checkout,
environment and map live there), each in one slot; a node runs at most ``slots = min(cpus,
jobs)`` of these at once. Every pair's evidence crosses the network to the driver (one link
of ``bandwidth`` bytes/s), which then checks the receipt and writes the row (``driver_s``
per pair, one pair at a time). A cluster costs ``start_s`` before anything runs.

``predict`` returns two bounds that hold for every schedule the simulation makes (bases
placed largest first on the least-loaded node, and no slot idle while a task of its node is
ready), and an estimate:

- ``lower``: no schedule does better. The largest of: a base's chain (its preparation, then
  its pairs on its node's slots), all the work spread over the nodes that can hold a base
  (``min(nodes, bases)``: a base never spans nodes), and the driver's link and checks, one
  pair at a time; plus the last pair's trip to the driver.
- ``upper``: Graham's bounds. Placing each base on the least-loaded node leaves no node more
  than ``W / N + (1 - 1/N) w_max`` of work; on a node, list scheduling with precedence ends
  within ``load / slots + (1 - 1/slots) x chain``; the driver's two stages in tandem end
  within ``n x max(net, check) + min(net, check)`` of the last gate.
- ``estimate``: ``lower``, or more where bases come whole: the busiest node holds
  ``ceil(B / N)`` bases, whose preparations run side by side and whose gates then share its
  slots (``mean prep + ceil(B / N) x mean gates / slots``). Over the test's grid of cases it
  is within ``ESTIMATE_TOLERANCE`` of the simulated makespan, so it is what the bench prints
  as the prediction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

# How far the estimate may stand from the simulated makespan, as a fraction of it, over the
# grid the test runs (tests/bench/test_scaling.py). The bounds themselves are exact.
ESTIMATE_TOLERANCE = 0.25


@dataclass(frozen=True)
class Base:
    """One base: ``prep_s`` (its preparation on one CPU, the repository's fetch included)
    and ``pair_s`` (each of its pairs' gate, on one CPU)."""

    prep_s: float
    pair_s: tuple[float, ...]

    @property
    def work(self) -> float:
        """Return the base's CPU-seconds: its preparation and all its gates."""
        return self.prep_s + sum(self.pair_s)


@dataclass(frozen=True)
class Workload:
    """What a run gates: its ``bases``; per pair ``evidence_bytes`` back to the driver and
    ``patch_bytes`` out to a worker; ``driver_s``, the driver's check and write of one pair."""

    bases: tuple[Base, ...]
    evidence_bytes: float = 200_000.0
    patch_bytes: float = 5_000.0
    driver_s: float = 0.05

    @property
    def pairs(self) -> int:
        """Return the number of pairs over all bases."""
        return sum(len(b.pair_s) for b in self.bases)


@dataclass(frozen=True)
class Cluster:
    """Where it runs: ``nodes`` x ``cpus`` each, ``jobs`` gates at a time per node (the
    engine's ``-j``), the driver's link in bytes/s, and ``start_s`` (a cluster's start)."""

    nodes: int
    cpus: int
    jobs: int
    bandwidth: float = 125_000_000.0  # 1 Gbit/s
    start_s: float = 0.0

    @property
    def slots(self) -> int:
        """Return the tasks one node runs at once: more processes than CPUs go no faster."""
        return max(1, min(self.cpus, self.jobs))


@dataclass(frozen=True)
class Prediction:
    """The model's answer: ``lower`` and ``upper`` bounds on the makespan (seconds),
    ``estimate`` (the figure to quote), ``bottleneck`` (what sets it: ``chain``, ``work``,
    ``driver`` or ``bases per node``), the throughput the estimate gives (pairs per minute) and the
    bytes that cross the network (out to workers, back to the driver)."""

    lower: float
    upper: float
    estimate: float
    bottleneck: str
    pairs_per_minute: float
    bytes_out: float
    bytes_back: float


def chain(base: Base, slots: int) -> float:
    """Return the least time ``base`` takes on one node of ``slots``: its preparation, then
    its gates spread over the slots (never less than its longest gate)."""
    if not base.pair_s:
        return base.prep_s
    return base.prep_s + max(sum(base.pair_s) / slots, max(base.pair_s))


def longest_path(base: Base) -> float:
    """Return the base's longest chain of dependent tasks: preparation, then one gate."""
    return base.prep_s + max(base.pair_s, default=0.0)


def driver_stage(workload: Workload, cluster: Cluster) -> tuple[float, float]:
    """Return (the link's seconds per pair, the driver's check seconds per pair)."""
    return workload.evidence_bytes / cluster.bandwidth, workload.driver_s


def predict(workload: Workload, cluster: Cluster) -> Prediction:
    """Return the model's bounds and estimate for ``workload`` on ``cluster``. Raises
    ``ValueError`` for an empty workload or a cluster without nodes."""
    if not workload.bases or cluster.nodes < 1:
        raise ValueError("a workload needs a base and a cluster a node")
    slots = cluster.slots
    nodes = cluster.nodes
    used = min(nodes, len(workload.bases))
    net, check = driver_stage(workload, cluster)
    n = workload.pairs
    total = sum(b.work for b in workload.bases)
    tail = net + check if n else 0.0

    lower_chain = max(chain(b, slots) for b in workload.bases)
    lower_work = total / (used * slots)
    first = min((b.prep_s + min(b.pair_s) for b in workload.bases if b.pair_s), default=0.0)
    lower_driver = first + n * max(net, check) + min(net, check) if n else 0.0
    candidates = {
        "chain": lower_chain + tail,
        "work": lower_work + tail,
        "driver": lower_driver,
    }
    bottleneck = max(candidates, key=lambda k: candidates[k])
    lower = cluster.start_s + candidates[bottleneck]

    w_max = max(b.work for b in workload.bases)
    node_load = total / nodes + (1 - 1 / nodes) * w_max
    path = max(longest_path(b) for b in workload.bases)
    compute = node_load / slots + (1 - 1 / slots) * path
    upper = cluster.start_s + compute + (n * max(net, check) + min(net, check) if n else 0.0)
    upper = max(upper, lower)

    # The estimate adds what the bounds leave out: bases come whole, so the busiest node holds
    # ceil(B / N) of them; its preparations run side by side, then all their gates share its
    # slots (the mean base stands for each).
    per_node = math.ceil(len(workload.bases) / nodes)
    mean_prep = sum(b.prep_s for b in workload.bases) / len(workload.bases)
    mean_gates = sum(sum(b.pair_s) for b in workload.bases) / len(workload.bases)
    packed = mean_prep + per_node * mean_gates / slots + tail
    estimate = min(max(lower, cluster.start_s + packed), upper)
    if estimate > lower:
        bottleneck = "bases per node"
    return Prediction(
        lower=lower,
        upper=upper,
        estimate=estimate,
        bottleneck=bottleneck,
        pairs_per_minute=60.0 * n / estimate if estimate > 0 else math.inf,
        bytes_out=n * workload.patch_bytes,
        bytes_back=n * workload.evidence_bytes,
    )


def uniform(bases: int, pairs: int, prep_s: float, pair_s: float, **workload: float) -> Workload:
    """Return a workload of ``bases`` alike, each ``prep_s`` and ``pairs`` gates of
    ``pair_s`` (the shape the bench measures: its means)."""
    one = Base(prep_s, (pair_s,) * pairs)
    return Workload(bases=(one,) * bases, **workload)


def scaling_table(
    workload: Workload, cluster: Cluster, nodes: Sequence[int]
) -> list[tuple[int, Prediction]]:
    """Return the prediction for ``cluster`` with each node count of ``nodes`` (the bench's
    N = 1, 2, 4, 8)."""
    return [(n, predict(workload, replace(cluster, nodes=n))) for n in nodes]
