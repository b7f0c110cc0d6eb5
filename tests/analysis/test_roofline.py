"""Roofline per operator group and kernel, and the device table it reads."""

from __future__ import annotations

import json

import pytest

from hta_fast.analysis.ops.roofline import roofline
from hta_fast.costs.devices import DeviceTable
from tests.support.op_traces import OpTraceBuilder

N = 4096
MM_FLOPS = 2 * N**3
MM_BYTES = 3 * N * N * 2


def _trace(device="NVIDIA A100-SXM4-80GB"):
    b = OpTraceBuilder(device_name=device)
    # a compute-bound fp16 GEMM at half the A100's 312 TFLOP/s: 2 * 440.5 µs
    mm_us = MM_FLOPS / 312e12 * 1e6 * 2
    b.op_with_kernels("aten::mm", 0, [[N, N], [N, N]], ["c10::Half"] * 2, [mm_us])
    # linear -> addmm: the kernel is charged to addmm only
    b.op("aten::linear", 2000, 100, [[64, 128], [256, 128], [256]], ["float"] * 3)
    b.op_with_kernels(
        "aten::addmm",
        2010,
        [[256], [64, 128], [128, 256], [], []],
        ["float"] * 3 + ["Scalar"] * 2,
        [10.0],
    )
    # a memory-bound add of 16M floats at the full 2039 GB/s: 3 * 64 MiB / 2039e9 s
    n = 1 << 24
    add_us = 3 * n * 4 / 2039e9 * 1e6
    b.op_with_kernels(
        "aten::add", 3000, [[n], [n], []], ["float", "float", "Scalar"], [add_us], gpu_ts=5000
    )
    # a host copy inside copy_ is not charged
    b.op("aten::copy_", 9000, 50, [[1000], [1000], []], ["float", "float", "Scalar"])
    b.memcpy("HtoD", 9005, 9100, 20.0, 4000)
    return b.load()


def test_compute_and_memory_bound_operators():
    r = roofline(_trace())
    df = r.to_pandas().set_index("name")
    mm = df.loc["aten::mm"]
    assert mm.device == "A100-SXM4-80GB" and mm.bound == "compute"
    assert mm.flops == MM_FLOPS and mm.bytes == MM_BYTES
    assert mm.pct_of_roofline == pytest.approx(50.0, rel=1e-3)
    assert mm.achieved_flops == pytest.approx(156e12, rel=1e-3)
    assert mm.intensity == pytest.approx(MM_FLOPS / MM_BYTES)
    add = df.loc["aten::add"]
    assert add.bound == "memory"
    assert add.pct_of_roofline == pytest.approx(100.0, rel=1e-2)
    assert add.achieved_bandwidth == pytest.approx(2039e9, rel=1e-2)
    # ranked by time left: the GEMM's 440 µs first
    assert r.table["name"][0].as_py() == "aten::mm"
    assert mm.time_left == pytest.approx(mm.gpu_time - mm.roofline_time)


def test_kernels_charged_to_innermost_modelled_operator_only():
    r = roofline(_trace())
    names = set(r.table["name"].to_pylist())
    assert "aten::addmm" in names and "aten::linear" not in names
    cov = r["coverage"].to_pandas().iloc[0]
    assert cov.host_transfer_time == 20_000
    kernels = r["kernels"].to_pandas().set_index("kernel")
    assert kernels.loc["aten::mm_kernel", "flops"] == MM_FLOPS


def test_device_override_and_unknown_device():
    r = roofline(_trace(), device="H100-SXM")
    mm = r.to_pandas().set_index("name").loc["aten::mm"]
    assert mm.peak_flops == pytest.approx(989.4e12)
    r = roofline(_trace(device="Some Future GPU"))
    assert r.to_pandas().pct_of_roofline.isna().all()
    assert any("not in the device table" in n for n in r.notes)
    with pytest.raises(ValueError, match="unknown device"):
        roofline(_trace(), device="no such gpu")


def test_device_table_matches_trace_names():
    t = DeviceTable.load()
    cases = {
        ("NVIDIA A100-PG509-200", 42297524224, 108): "A100-SXM4-40GB",
        ("NVIDIA A100-SXM4-80GB", 84990623744, 108): "A100-SXM4-80GB",
        ("Tesla V100-SXM2-32GB", 34079899648, 80): "V100-SXM2",
        ("AMD Radeon Graphics", 68702699520, 104): "MI250-GCD",
        ("NVIDIA H100 80GB HBM3", 85e9, 132): "H100-SXM",
        ("NVIDIA H100 PCIe", 85e9, 114): "H100-PCIe",
        ("NVIDIA GH200 480GB", 102e9, 132): "GH200-96GB",
        ("NVIDIA H200", 150e9, 132): "H200-SXM",
        ("Tesla T4", 16e9, 40): "T4",
        ("AMD Instinct MI300X", 206e9, 304): "MI300X",
    }
    for (name, mem, sms), key in cases.items():
        assert t.match({"name": name, "totalGlobalMem": mem, "numSms": sms}).key == key, name
    h100 = t.get("h100-sxm")
    assert h100.peak_flops("fp32", matrix=True) == 67e12
    assert h100.peak_flops("fp32", matrix=True, allow_tf32=True) == 494.7e12
    assert h100.peak_flops("fp8", matrix=True) == 1978.9e12
    assert all(e.device.source for e in t.entries)


def test_user_device_file_overrides(tmp_path):
    f = tmp_path / "my.json"
    f.write_text(
        json.dumps(
            {
                "devices": [
                    {
                        "key": "A100-SXM4-80GB",
                        "match": "a100",
                        "memory_gbps": 1000,
                        "tflops": {"fp16": 100},
                    }
                ]
            }
        )
    )
    r = roofline(_trace(), devices_file=str(f))
    mm = r.to_pandas().set_index("name").loc["aten::mm"]
    assert mm.peak_flops == 100e12 and mm.peak_bandwidth == 1000e9
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="not a device table"):
        DeviceTable.load(bad)


def test_real_trace_roofline(traces_dir):
    import hta_fast

    trace = hta_fast.load(traces_dir / "hta/trace_diff/control/control.json.gz")
    r = roofline(trace)
    df = r.to_pandas()
    assert (df.device == "A100-SXM4-40GB").all() and len(df) > 50
    assert (df.gpu_time > 0).all() and df.bound.isin(["compute", "memory"]).all()
    # charged time never exceeds the GPU time of the trace's kernels
    cov = r["coverage"].to_pandas().iloc[0]
    assert 0 < cov.modelled_time <= cov.gpu_time - cov.host_transfer_time
    assert df.gpu_time.sum() == cov.modelled_time


def test_tf32_peak_where_the_kernels_are_tf32_kernels():
    b = OpTraceBuilder()
    b.op_with_kernels(
        "aten::mm",
        0,
        [[512, 512], [512, 512]],
        ["float"] * 2,
        [50.0],
        kernel_name="ampere_tf32_s1688gemm_fp32_128x128_ldg8_stages_32x3_nn",
    )
    b.op_with_kernels(
        "aten::mm",
        1000,
        [[256, 512], [512, 512]],
        ["float"] * 2,
        [50.0],
        kernel_name="ampere_sgemm_128x64_nn",
    )
    trace = b.load()
    peaks = roofline(trace).to_pandas().set_index("input_dims").peak_flops
    assert peaks["[[512, 512], [512, 512]]"] == 156e12
    assert peaks["[[256, 512], [512, 512]]"] == 19.5e12
    off = roofline(trace, allow_tf32=False).to_pandas()
    assert (off.peak_flops == 19.5e12).all()


def test_many_ranks_and_a_window_selection(traces_dir):
    import hta_fast
    from hta_fast.analysis.ops.op_table import op_table

    traces = hta_fast.load_dir(traces_dir / "param_dlrm_8rank")
    r = roofline(traces)
    assert sorted(set(r.table["rank"].to_pylist())) == list(range(8))
    assert set(r.table["device"].to_pylist()) == {"V100-SXM2"}
    rank0 = traces[0]
    ts = rank0.column("events", "ts")
    half = (int(ts.min()), int(ts.min() + (ts.max() - ts.min()) // 2))
    whole = op_table(rank0).to_pandas()
    one = op_table(rank0, window=half).to_pandas()
    assert 0 < one["count"].sum() < whole["count"].sum()
    assert one.gpu_time_sum.sum() <= whole.gpu_time_sum.sum()
