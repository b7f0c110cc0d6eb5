"""The step time of an embedding sharding plan by replay: the plan's predicted lookup times
replace the lookup kernels' durations and all ranks of each step are replayed together.
A DLRM-like synthetic job (lookup, all-to-all, dense GEMM, all-reduce) whose answer is
known by construction, and the real 8-rank DLRM trace."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import hta_fast
from hta_fast.model.plans.embedding_cost import (
    LookupCostModel,
    TableSpec,
    evaluate_plan,
    fit_lookup_costs,
    improve_plan,
)
from hta_fast.model.plans.embedding_lookups import lookup_kernels
from hta_fast.model.plans.plan_replay import compare_plans, plan_step_time
from tests.conftest import TRACES_DIR
from tests.model.test_model_cross_rank import collective_job, steps_of

LOOKUP = "split_embedding_codegen_forward_unweighted_kernel"
# 10 µs + bytes at 1 GB/s (1 B/ns); each table reads batch × pooling × dim × 4 bytes.
COST = LookupCostModel.from_parameters(10_000, 1.0, family=LOOKUP)
TABLES = [
    TableSpec(f"t{i}", rows=10_000, dim=50, pooling=p, batch=1000)
    for i, p in enumerate([1, 2, 3, 1, 2, 3])
]  # 200, 400, 600 µs each


def planned_us(plan: dict[str, int]) -> list[int]:
    ns = evaluate_plan(TABLES, plan, 3, cost=COST).to_pandas().lookup_ns
    return [int(round(x / 1000)) for x in ns]


def dlrm_like(lookup_us: list[int]) -> hta_fast.TraceSet:
    """3 ranks, 2 steps: a lookup of lookup_us[rank] µs before the all-to-all (data 80 µs),
    then a dense GEMM before the all-reduce (data 120 µs)."""
    dense = [300, 350, 320]
    compute = [[[lookup_us[r], dense[r]], [lookup_us[r], dense[r]]] for r in range(3)]
    return collective_job(compute, [[80, 120], [80, 120]], first_kernel=LOOKUP)


@pytest.mark.parametrize(
    "plan",
    [
        {"t0": 0, "t1": 0, "t2": 0, "t3": 1, "t4": 1, "t5": 2},  # 1210, 610, 610 µs
        {"t0": 0, "t1": 1, "t2": 2, "t3": 0, "t4": 1, "t5": 2},  # 410, 810, 1210 µs
        {"t0": 0, "t1": 1, "t2": 2, "t3": 2, "t4": 1, "t5": 0},  # 810 each
    ],
)
def test_plan_step_time_is_the_job_run_with_that_plan(plan):
    measured_job = dlrm_like([500, 450, 700])
    r = plan_step_time(measured_job, TABLES, plan, cost=COST)
    actual = steps_of(dlrm_like(planned_us(plan)))
    assert r.to_pandas().predicted.tolist() == actual.tolist()
    assert r.to_pandas().lookup_planned.tolist() == [
        1000.0 * u for _ in range(2) for u in planned_us(plan)
    ]  # rows: step by step


def test_the_balanced_plan_wins_by_replay():
    job = dlrm_like([500, 450, 700])
    plans = {
        "skewed": {"t0": 0, "t1": 0, "t2": 0, "t3": 1, "t4": 1, "t5": 2},
        "balanced": {"t0": 0, "t1": 1, "t2": 2, "t3": 2, "t4": 1, "t5": 0},
    }
    c = compare_plans(job, TABLES, plans, cost=COST).to_pandas()
    assert c.plan.tolist() == ["balanced", "skewed"]
    # Every rank waits for the slowest lookup at the all-to-all: 1210 vs 810 µs, twice.
    assert c.step_ns.iloc[1] - c.step_ns.iloc[0] == 400_000


def test_no_such_lookup_kernels_is_a_clear_error():
    with pytest.raises(ValueError, match="no 'other_kernel' lookup kernels"):
        plan_step_time(
            dlrm_like([500, 450, 700]),
            TABLES,
            {t.name: 0 for t in TABLES},
            cost=COST,
            kernel_family="other_kernel",
        )


@functools.lru_cache(maxsize=None)
def dlrm():
    return hta_fast.load_dir(TRACES_DIR / "param_dlrm_8rank")


def test_real_dlrm_plans_by_replay(traces_dir):
    cost = fit_lookup_costs(lookup_kernels(dlrm(), dim=64))
    tables = [
        TableSpec(f"t{i}", rows=1_000_000, dim=64 * (1 + i % 3), pooling=10 + 5 * i, batch=2048)
        for i in range(16)
    ]
    round_robin = {t.name: i % 8 for i, t in enumerate(tables)}
    better = improve_plan(tables, 8, cost=cost, family=LOOKUP)
    r = plan_step_time(dlrm(), tables, round_robin, cost=cost, family=LOOKUP).to_pandas()
    assert len(r) == 8 and (r.lookup_measured > 0).all()
    # The rank with the longest planned lookup holds most others at the next collective.
    # (Each rank's all-to-all waits for its own lookup kernels, by the trace's stream waits,
    # so a rank whose host reaches it late can hold some: docs/model.md, stream waits
    # without cuda_sync rows.)
    slowest = int(r["rank"][r.lookup_planned.idxmax()])
    assert r.held_by.dropna().value_counts().idxmax() == slowest
    c = compare_plans(
        dlrm(), tables, {"round_robin": round_robin, "improved": better}, cost=cost, family=LOOKUP
    ).to_pandas()
    assert c.plan.iloc[0] == "improved" and np.all(np.diff(c.max_lookup_ns) > 0)
