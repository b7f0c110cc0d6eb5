"""A trace that opens with the GPU busy on work it does not hold (a serving engine profiled
mid-flight): the launch into its first recorded GPU event waits behind that work. The
critical path calls it gpu_unrecorded_work, not launch overhead, and removing launch
overhead does not remove it; by construction, against the same trace with the earlier
work recorded."""

from __future__ import annotations

import pytest

from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.whatif.steps import what_if
from tests.support.kineto_builder import KinetoBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


def _mid_flight(recorded_before: bool) -> KinetoBuilder:
    """Step [0, 5000) µs: kernels launched at 10 and 20 run at 3000 (1000 µs) and 4000
    (500 µs); a stream sync from 30 returns at 4503. With recorded_before, a kernel launched
    at 1 runs [2, 2900): the GPU's time before 3000 is then in the trace."""
    b = KinetoBuilder()
    b.step(0, 0, 5000)
    if recorded_before:
        b.kernel(GEMM, 1, 2, 2898)
    b.kernel(GEMM, 10, 3000, 1000)
    b.kernel(GEMM, 20, 4000, 500)
    b.runtime("cudaStreamSynchronize", 30, 4473)
    return b


def test_the_wait_behind_unrecorded_work_is_its_own_category():
    res = critical_path(_mid_flight(False).load())
    row = res.table.to_pylist()[0]
    assert row["gpu_unrecorded_work"] == pytest.approx(100 * (3000 - 10) / 5000, abs=1.5)
    assert row["gpu_kernel_launch_overhead"] == pytest.approx(0, abs=0.5)
    assert any("gpu_unrecorded_work, not launch overhead" in n for n in res.notes)
    recorded = critical_path(_mid_flight(True).load()).table.to_pylist()[0]
    assert recorded["gpu_unrecorded_work"] == 0
    assert recorded["gpu_compute_bound"] > 50


def test_removing_launch_overhead_does_not_remove_the_unrecorded_wait():
    t = what_if(_mid_flight(False).load(), zero_launch_overhead=True).table.to_pylist()[0]
    assert t["predicted"] == pytest.approx(t["measured"], rel=0.01)


def test_removing_launch_overhead_leaves_a_wait_behind_unrecorded_work(traces_dir):
    """On sglang_decode stream 3 waits 463 ms behind GPU work the trace does not hold, mid
    trace: launches costing nothing do not remove it (a launch edit that did predicted
    10.7 ms for the 473.8 ms step)."""
    import hta_fast

    path = traces_dir / "modern/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
    t = what_if(hta_fast.load(str(path)), zero_launch_overhead=True).table.to_pylist()[0]
    assert t["predicted"] == pytest.approx(t["measured"], rel=0.01)
