"""Prediction of kernel times on another GPU, and the kernel models behind it."""

from __future__ import annotations

import numpy as np
import pytest

from hta_fast.costs.kernel_model import fit_curve, launch_floor
from hta_fast.model.predict import predict
from tests.support.op_traces import OpTraceBuilder

A100_BW, H100_BW = 2039e9, 3350e9


def _trace():
    b = OpTraceBuilder(device_name="NVIDIA A100-SXM4-80GB")
    n = 1 << 24
    add_us = 3 * n * 4 / A100_BW * 1e6  # at the A100's full bandwidth
    ts = 0.0
    for _ in range(3):
        ts = (
            b.op_with_kernels(
                "aten::add",
                ts,
                [[n], [n], []],
                ["float", "float", "Scalar"],
                [add_us],
                gpu_ts=ts + 100,
            )
            + 200
        )
    # a kernel outside any costed operator, and a collective
    b.kernel("my_custom_kernel", ts + 500, ts + 600, 100.0)
    b.nccl("allreduce", ts + 1000, ts + 1200, 300.0)
    return b.load(), add_us


def test_memory_bound_operator_scales_with_bandwidth():
    trace, add_us = _trace()
    r = predict(trace, "H100-SXM")
    s = r.to_pandas().set_index("family")
    assert s.loc["elementwise", "measured"] == pytest.approx(3 * add_us * 1e3, abs=3)
    assert s.loc["elementwise", "predicted"] == pytest.approx(
        3 * add_us * 1e3 * A100_BW / H100_BW, rel=1e-3
    )
    # unmodelled compute scales by bandwidth, communication keeps its time
    assert s.loc["(unmodelled compute)", "predicted"] == pytest.approx(100_000 * A100_BW / H100_BW)
    assert s.loc["(communication)", "predicted"] == 300_000
    ev = r["events"].to_pandas()
    assert len(ev) == 5 and (ev.predicted > 0).all()


def test_prediction_on_the_same_device_is_the_measurement():
    trace, _ = _trace()
    s = predict(trace, "A100-SXM4-80GB").to_pandas()
    assert np.allclose(s.predicted, s.measured)


def test_unknown_source_device_is_a_clear_error():
    b = OpTraceBuilder(device_name="Mystery GPU")
    b.op_with_kernels("aten::relu", 0, [[10]], ["float"], [5.0])
    with pytest.raises(ValueError, match="not in the device table; pass source_device="):
        predict(b.load(), "H100-SXM")
    assert predict(b.load(), "H100-SXM", source_device="A100-SXM4-80GB").table.num_rows


def test_efficiency_curve_and_floor():
    # efficiency 10% for small calls, 80% for large ones
    roof = np.array([1e3, 1e3, 1e6, 1e6])
    meas = roof / np.array([0.1, 0.1, 0.8, 0.8])
    c = fit_curve(roof, meas, np.array([1, 1, 1, 1]))
    assert 10 ** c(np.log10(1e3)) == pytest.approx(0.1)
    assert 10 ** c(np.log10(1e6)) == pytest.approx(0.8)
    assert 10 ** c(np.log10(1e9)) == pytest.approx(0.8)  # flat beyond the data
    # the 5 % quantile of the positive durations; zero-length events are ignored
    assert launch_floor(np.array([0] * 50 + [2000] * 10 + [10_000] * 90)) == 2000
    assert launch_floor(np.array([50_000] * 10)) == 5_000  # capped
    assert launch_floor(np.array([0])) == 0.0


def test_floor_stops_the_fall_but_never_raises_a_fast_call():
    from hta_fast.costs.kernel_model import KernelModels

    m = KernelModels({}, floor_ns=3_000.0)
    measured = np.array([100_000.0, 4_000.0, 1_000.0])
    roof_src = np.array([50_000.0, 1_000.0, 100.0])
    roof_dst = roof_src / 10
    pred = m.predict_call("x", measured, roof_src, roof_dst, np.ones(3))
    assert list(pred) == [10_000.0, 3_000.0, 1_000.0]
