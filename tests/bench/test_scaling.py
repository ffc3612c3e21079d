"""The scaling model (bench/scaling_model.py) against the simulation (bench/scaling_sim.py).

Over a grid of workloads, clusters and seeds the simulated makespan must lie within the
model's two bounds (they are proved in its docstring: a failure here is a wrong formula or a
simulation that idles), and the model's estimate within ``ESTIMATE_TOLERANCE`` of it. Then
the regimes where adding nodes stops helping, each made to happen in the simulation: fewer
bases than nodes, one huge base, and a driver whose link or checks are the bottleneck.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from scaling_model import (
    ESTIMATE_TOLERANCE,
    Base,
    Cluster,
    Workload,
    predict,
    scaling_table,
    uniform,
)
from scaling_sim import simulate, spread

# (pair counts, mean preparations, mean gate seconds, workload options)
SHAPES: dict[str, tuple[list[int], list[float], float, dict[str, float]]] = {
    "many bases": ([12] * 12, [30.0] * 12, 4.0, {}),
    "fewer bases than nodes": ([24] * 3, [30.0] * 3, 4.0, {}),
    "one huge base": ([60] + [6] * 8, [300.0] + [20.0] * 8, 4.0, {}),
    "driver bound": ([40] * 4, [5.0] * 4, 0.2, {"evidence_bytes": 5e6, "driver_s": 0.05}),
    "mixed": ([1, 30, 5, 17, 8], [10.0, 90.0, 20.0, 45.0, 5.0], 3.0, {}),
}
# (cpus, jobs): one slot, this machine, a large node, -j below the CPUs.
NODE_KINDS = ((1, 1), (2, 2), (8, 8), (8, 4))
NODES = (1, 2, 3, 4, 8, 16)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_simulation_lies_within_the_model_bounds_and_near_its_estimate(shape: str) -> None:
    pairs, prep, gate, options = SHAPES[shape]
    for cv in (0.0, 0.6):
        for seed in (1, 2):
            workload = spread(pairs, prep, gate, cv, seed, **options)
            for nodes in NODES:
                for cpus, jobs in NODE_KINDS:
                    cluster = Cluster(nodes, cpus, jobs, bandwidth=1.25e8, start_s=2.0)
                    sim = simulate(workload, cluster).makespan
                    model = predict(workload, cluster)
                    case = (shape, cv, seed, nodes, cpus, jobs, sim, model)
                    assert model.lower - 1e-9 <= sim <= model.upper + 1e-9, case
                    assert abs(sim - model.estimate) <= ESTIMATE_TOLERANCE * sim, case


def test_spread_is_seeded_and_keeps_the_shape() -> None:
    one = spread([3, 5], [10.0, 20.0], 2.0, 0.5, seed=7)
    assert one == spread([3, 5], [10.0, 20.0], 2.0, 0.5, seed=7)
    assert one != spread([3, 5], [10.0, 20.0], 2.0, 0.5, seed=8)
    assert [len(b.pair_s) for b in one.bases] == [3, 5]
    flat = spread([3], [10.0], 2.0, 0.0, seed=7)
    assert flat.bases == (Base(10.0, (2.0, 2.0, 2.0)),)


def test_fewer_bases_than_nodes_stops_scaling_at_one_node_per_base() -> None:
    workload = uniform(bases=3, pairs=24, prep_s=30.0, pair_s=4.0)
    at = {n: simulate(workload, Cluster(n, 2, 2)).makespan for n in (1, 3, 6, 12)}
    assert at[1] > 2.0 * at[3]  # up to one node per base, nodes pay
    assert at[3] == at[6] == at[12]  # past it, a node has nothing to take
    predicted = {n: p.estimate for n, p in scaling_table(workload, Cluster(1, 2, 2), (3, 6, 12))}
    assert predicted[3] == predicted[6] == predicted[12] == pytest.approx(at[3], rel=0.01)


def test_one_huge_base_is_the_critical_path() -> None:
    huge = Base(600.0, (10.0,) * 200)
    small = tuple(Base(30.0, (10.0,) * 10) for _ in range(10))
    workload = Workload(bases=(huge, *small))
    chain = 600.0 + 200 * 10.0 / 8
    for nodes in (2, 4, 8, 16):
        cluster = Cluster(nodes, 8, 8)
        sim = simulate(workload, cluster).makespan
        assert chain <= sim <= chain + 1.0, (nodes, sim)
        assert predict(workload, cluster).bottleneck == "chain"
    # one CPU: all the work, not the huge base alone, sets the time
    assert predict(workload, Cluster(1, 1, 1)).bottleneck == "work"


def test_the_driver_link_bounds_a_large_cluster() -> None:
    # 100 MB of evidence per pair over 1 Gbit/s: 0.8 s a pair, whatever the nodes.
    workload = uniform(bases=64, pairs=10, prep_s=1.0, pair_s=1.0, evidence_bytes=1e8)
    cluster = Cluster(64, 8, 8)
    sim = simulate(workload, cluster).makespan
    model = predict(workload, cluster)
    assert model.bottleneck == "driver"
    assert sim == pytest.approx(640 * 0.8, rel=0.01)
    assert simulate(workload, Cluster(128, 8, 8)).makespan == pytest.approx(sim)


def test_jobs_past_the_cpus_give_nothing() -> None:
    workload = uniform(bases=4, pairs=16, prep_s=5.0, pair_s=2.0)
    assert (
        simulate(workload, Cluster(2, 2, 8)).makespan
        == simulate(workload, Cluster(2, 2, 2)).makespan
    )


def test_an_empty_workload_or_cluster_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a base"):
        predict(Workload(bases=()), Cluster(1, 1, 1))
    with pytest.raises(ValueError, match="needs a node"):
        simulate(uniform(1, 1, 1.0, 1.0), Cluster(0, 1, 1))
