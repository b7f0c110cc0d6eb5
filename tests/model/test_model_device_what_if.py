"""The what-if "this step on another GPU": kernels take predict()'s times on the target
device and the schedule is replayed. A synthetic job whose pair is known by construction
(the same job with every kernel twice as fast) and the real A100 / V100 pair."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

import hta_fast
from hta_fast.model.replay.steps import replay_steps
from hta_fast.model.whatif.steps import what_if
from tests.conftest import TRACES_DIR
from tests.support.op_traces import OpTraceBuilder, device_table

N = 1 << 22  # elements of each aten::add
M = K = 1024  # aten::mm [M, K] x [K, M]


def gpu_bound_job(kernel_us: float, steps: int = 3) -> hta_fast.Trace:
    """Each step: 10 operators launched 10 µs apart (adds, matmuls and one custom kernel
    outside any operator), kernel_us each, queued back to back on one stream; a stream sync
    that returns 3 µs after the last kernel; then 500 µs of host work."""
    b = OpTraceBuilder(device_name="Test GPU")
    t0 = 0.0
    for s in range(steps):
        free, kernels = -1.0, []
        for j in range(10):
            op_ts = t0 + 10 + 10 * j
            launch = op_ts + 2
            start = max(launch + 10, free)
            free = start + kernel_us
            if j == 9:
                kernels.append(("my_custom_kernel", launch, start))
                continue
            if j % 2:
                b.op("aten::mm", op_ts, 8, [[M, K], [K, M]], ["float", "float"])
                kernels.append(("gemm_kernel", launch, start))
            else:
                b.op("aten::add", op_ts, 8, [[N], [N], []], ["float", "float", "Scalar"])
                kernels.append(("add_kernel", launch, start))
        sync_start = t0 + 120
        sync_end = max(sync_start + 5, free + 3)
        end = sync_end + 2 + 500 + 1
        b.step(s, t0, end - t0)
        for name, launch, start in kernels:
            b.kernel(name, launch, start, kernel_us, launch_dur=5.0)
        b.runtime("cudaStreamSynchronize", sync_start, sync_end - sync_start)
        b.cpu_op("aten::cpu_work", sync_end + 2, 500)
        t0 = end
    return b.load()


@pytest.fixture()
def double_device(tmp_path):
    """A device table with a source GPU and one with exactly twice its peaks and bandwidth."""
    return device_table(
        tmp_path / "devices.json",
        {"memory_gbps": 1000, "tflops": {"fp32": 20, "fp16": 300}},
        {
            "key": "DOUBLE-TEST",
            "match": "^double$",
            "memory_gbps": 2000,
            "tflops": {"fp32": 40, "fp16": 600},
        },
    )


def test_twice_the_device_halves_every_kernel_and_the_replay_follows(double_device):
    base = gpu_bound_job(300.0)
    r = what_if(base, device="DOUBLE-TEST", devices_file=double_device).to_pandas()
    actual = replay_steps(gpu_bound_job(150.0)).to_pandas().measured.to_numpy()
    # every kernel (adds, matmuls, the custom one) at half its time: the pair by construction
    assert np.abs(r.predicted.to_numpy() - actual).max() <= 10  # ns: rounding per kernel
    assert (r.predicted < 0.8 * r.measured).all()  # the knob matters


def test_the_same_device_changes_nothing(double_device):
    base = gpu_bound_job(300.0)
    r = what_if(base, device="SRC-TEST", devices_file=double_device).to_pandas()
    assert (r.predicted == r.measured).all()


def test_a_slower_device_lengthens_the_step_and_the_bound_follows(double_device, tmp_path):
    slow = tmp_path / "slow.json"
    slow.write_text(
        json.dumps(
            {
                "devices": [
                    {
                        "key": "SRC-TEST",
                        "match": "^test gpu$",
                        "memory_gbps": 1000,
                        "tflops": {"fp32": 20},
                    },
                    {
                        "key": "SLOW-TEST",
                        "match": "^slow$",
                        "memory_gbps": 250,
                        "tflops": {"fp32": 5},
                    },
                ]
            }
        )
    )
    r = what_if(gpu_bound_job(300.0), device="SLOW-TEST", devices_file=str(slow)).to_pandas()
    actual = replay_steps(gpu_bound_job(1200.0)).to_pandas().measured.to_numpy()
    assert np.abs(r.predicted.to_numpy() - actual).max() <= 10
    assert (r.bound_after == "gpu_compute_bound").all()


def test_device_combines_with_the_other_edits(double_device):
    base = gpu_bound_job(300.0)
    both = what_if(base, device="DOUBLE-TEST", devices_file=double_device, cpu=0.5).to_pandas()
    device_only = what_if(base, device="DOUBLE-TEST", devices_file=double_device).to_pandas()
    assert (both.predicted < device_only.predicted).all()


def test_unknown_device_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown device 'Nope'"):
        what_if(gpu_bound_job(300.0), device="Nope", source_device="A100-SXM4-80GB")


@functools.lru_cache(maxsize=None)
def _pair() -> tuple[hta_fast.Trace, hta_fast.Trace]:
    return (
        hta_fast.load_dir(TRACES_DIR / "hta/trace_diff/control"),
        hta_fast.load_dir(TRACES_DIR / "hta/trace_diff/test"),
    )


def _mean_step(r) -> tuple[float, float]:
    t = r.to_pandas()
    return float(t.predicted.mean()), float(t.measured.mean())


@pytest.mark.skipif(not TRACES_DIR.is_dir(), reason="the real traces are not here")
def test_the_real_pair_moves_toward_the_other_gpu():
    """A100 trace on a V100 and back: the prediction moves from the source's step toward the
    other trace's measured step (different runs, so no tight bound: docs/model.md)."""
    a100, v100 = _pair()
    measured_v100 = what_if(v100).to_pandas().measured.mean()
    measured_a100 = what_if(a100).to_pandas().measured.mean()
    on_v100, own_a100 = _mean_step(what_if(a100, device="V100-SXM2"))
    on_a100, own_v100 = _mean_step(what_if(v100, device="A100-SXM4-40GB"))
    assert own_a100 < on_v100 and on_a100 < own_v100
    # closer to the other trace than the source trace was
    assert abs(on_v100 - measured_v100) < abs(own_a100 - measured_v100)
    assert abs(on_a100 - measured_a100) < abs(own_v100 - measured_a100)
