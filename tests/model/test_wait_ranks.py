"""The rank everybody waits for: the wait inside a collective splits into the data time and
the wait for the last rank to arrive; the wait is charged to that rank (rank_imbalance names
it, with what its host was doing), and exposed communication keeps the data time only. By
construction on a 4-rank job whose rank 3 is late for its host (its GPU work is the same as
the others'), and on param_dlrm_8rank, whose rank 7 arrives last."""

from __future__ import annotations

import numpy as np
import pytest

import hta_fast
from hta_fast.analysis.collectives import collectives
from hta_fast.doctor import diagnose
from tests.support.kineto_builder import KinetoBuilder, traceset
from tests.support.paths import SHARED_TRACES

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
STEPS, STEP_US = 5, 10_000
LATE = 3  # the rank whose host is late
COMPUTE_US, HOST_US, DATA_US = 3_000, 4_000, 200
START = {r: 100 + COMPUTE_US for r in range(4)}  # when each rank reaches the all-reduce (µs)
START[LATE] = 60 + HOST_US + 20
END = START[LATE] + DATA_US


def _job() -> hta_fast.TraceSet:
    builders = []
    for rank in range(4):
        b = KinetoBuilder(rank=rank, world_size=4)
        for s in range(STEPS):
            t0 = s * STEP_US
            b.step(s, t0, STEP_US)
            for j in range(6):
                b.kernel(GEMM, t0 + 1 + 6 * j, t0 + 100 + 500 * j, 500)
            if rank == LATE:
                b.cpu_op("host_preprocess", t0 + 60, HOST_US)
                launch = t0 + 60 + HOST_US + 5
            else:
                launch = t0 + 50
            b.nccl("allreduce", launch, t0 + START[rank], END - START[rank])
        builders.append(b)
    return traceset(builders)


def test_the_late_rank_is_named_with_its_host_and_the_others_wait():
    d = diagnose(_job())
    f = d.finding("rank_imbalance")
    ev = f.evidence
    wait = START[LATE] - START[0]
    assert ev["waited_for_rank"] == LATE and ev["waited_for_share"] == pytest.approx(1.0)
    assert ev["times_last"] == STEPS
    assert ev["others_wait_for_it_ns_per_step"] == pytest.approx(wait * 1e3, rel=0.02)
    assert ev["its_host_meanwhile"] == "host_preprocess"
    assert f.above_threshold and f"rank {LATE}" in f.title
    # The GPU work is alike: no rank stands out by it, the late one is late for its host.
    assert ev["slowest_rank"] == "none stands out"
    assert f.cost_ns_per_step == pytest.approx(wait * 1e3 * 3 / 4, rel=0.02)


def test_exposed_communication_is_the_data_time_only():
    d = diagnose(_job())
    f = d.finding("exposed_communication")
    assert f.cost_ns_per_step == pytest.approx(DATA_US * 1e3, rel=0.05)
    assert not f.above_threshold


PARAM = SHARED_TRACES / "param_dlrm_8rank"


def test_param_dlrm_rank_7_is_waited_for_and_exposed_comm_is_at_most_the_data_time():
    """The collectives end within ~10 µs on all ranks; rank 7 arrives last at 5 of the 8,
    and the data moves in ~0.2 ms a step (the shortest durations, summed)."""
    if not PARAM.is_dir():
        pytest.skip("param_dlrm_8rank not present")
    ts = hta_fast.load_dir(str(PARAM))
    d = diagnose(ts)
    ri = d.finding("rank_imbalance")
    assert ri.evidence["waited_for_rank"] == 7 and ri.evidence["times_last"] == 5
    assert ri.evidence["others_wait_for_it_ns_per_step"] > 4e6
    data = float(np.sum(collectives(ts).table["data_time"].to_numpy()))  # one step
    assert 150e3 < data < 250e3
    assert d.finding("exposed_communication").cost_ns_per_step <= data


def test_compute_utilization_stands_beside_the_busy_share():
    """Communication kernels keep the GPU busy while compute waits: where they run, the
    doctor gives the compute kernels' share beside the busy share; without them, none."""
    d = diagnose(_job())
    assert d.compute_utilization is not None
    assert d.compute_utilization < d.utilization
    compute = 6 * 500 / STEP_US  # each rank's compute kernels a step
    assert d.compute_utilization == pytest.approx(compute, rel=0.05)
    assert "compute kernels" in d.headline_text()[0]
    single = diagnose(traceset([KinetoBuilder()]))
    assert single.compute_utilization is None
