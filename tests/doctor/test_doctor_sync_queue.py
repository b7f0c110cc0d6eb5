"""memory_sync charges the GPU idle time that a blocking sync causes, not the gaps between
kernels that were already queued when the host blocked, and counts each sync once.

Each step of the trace below, by construction (µs from the step's start):
  - the host launches 680 kernels of 5 µs, 1 µs apart (0-680); the GPU runs them from 50 on,
    0.5 µs apart, until 3,789.5: 679 gaps of 0.5 µs behind already queued work;
  - at 700 the host calls .item() (aten::item > aten::_local_scalar_dense >
    cudaStreamSynchronize, one sync) and blocks until 3,800, with 561 of those gaps starting
    while it waits;
  - it then works 990 µs and launches 10 kernels of 518 µs from 4,800 on; the first runs at
    4,810: the GPU sat idle 1,020.5 µs because of the sync (3,789.5-4,810).
"""

from __future__ import annotations

import pytest

from hta_fast.doctor import diagnose
from tests.support.kineto_builder import KinetoBuilder, traceset
from tests.support.synthetic_traces import STEP_US, STEPS

US = 1000
SMALL = "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>"
GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


def sync_behind_a_queue():
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(680):
            b.kernel(SMALL, t0 + j, t0 + 50 + 5.5 * j, 5, launch_dur=0.8)
        b.cpu_op("aten::item", t0 + 700, 3100)
        b.cpu_op("aten::_local_scalar_dense", t0 + 701, 3098)
        b.runtime("cudaStreamSynchronize", t0 + 702, 3096)
        b.cpu_op("aten::log_metrics", t0 + 3800, 990)
        for j in range(10):
            b.kernel(GEMM, t0 + 4800 + j, t0 + 4810 + 518 * j, 518)
    return traceset([b])


def test_only_the_gap_the_sync_caused_is_charged():
    d = diagnose(sync_behind_a_queue())
    m = d.finding("memory_sync")
    assert m.evidence["sync_idle_ns_per_step"] == pytest.approx(1020.5 * US, abs=1)
    assert m.cost_ns_per_step == pytest.approx(1020.5 * US, abs=1)
    # the 0.5 µs gaps between queued kernels are the launch machinery's (parallelism), all
    # 679 of them, whether or not the host was blocked when they began
    assert d.finding("parallelism").cost_ns_per_step == pytest.approx(679 * 0.5 * US, abs=1)


def test_each_sync_counts_once():
    m = diagnose(sync_behind_a_queue()).finding("memory_sync")
    assert m.evidence["blocking_syncs_per_step"] == 1.0
    assert "1.0 host syncs per step" in m.title
    # the idle time is charged to the call the program made
    assert m.top_events[0]["name"] == "aten::item"
    assert m.top_events[0]["count"] == STEPS
