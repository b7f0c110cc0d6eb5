"""Kernel time on another GPU: a call's launch latency keeps its time (or moves to the
target's launch floor when that is given) while its work scales with the roofline, held
between 1 and the roofline ratio. A synthetic trace whose answer is known by construction,
the rule on hand-made numbers, and the real H100 / MI300X pairs (benchmarks/eval_predict.py,
docs/ops.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hta_fast.costs.kernel_model import EfficiencyCurve, KernelModels, latency_floor
from hta_fast.model.predict import launch_floor_of, predict
from tests.conftest import TRACES_DIR
from tests.support.op_traces import OpTraceBuilder, device_table
from tests.support.paths import REPO

SRC_BW, DST_BW = 1000e9, 2000e9
LATENCY_US = 2.0  # every kernel of the synthetic trace: this much launch latency
SIZES = (1 << 18, 1 << 20, 1 << 22)  # elements of the aten::add groups


@pytest.fixture()
def devices(tmp_path) -> str:
    """A source GPU and one with twice its bandwidth (compute far from binding)."""
    return device_table(
        tmp_path / "devices.json",
        {"memory_gbps": 1000, "tflops": {"fp32": 1000}},
        {"key": "FAST-TEST", "match": "^fast$", "memory_gbps": 2000, "tflops": {"fp32": 2000}},
    )


def _roofline_us(n: int) -> float:
    return 3 * n * 4 / SRC_BW * 1e6  # an fp32 add reads two tensors and writes one


def latency_bound_trace():
    """20 kernels at the launch floor (no operator: unmodelled), one unmodelled kernel of
    10 µs, and aten::add at three sizes whose work runs at half the roofline: t = 2 + 2R."""
    b = OpTraceBuilder(device_name="Test GPU")
    ts = 0.0
    for n in SIZES:
        work = 2 * _roofline_us(n)
        ts = (
            b.op_with_kernels(
                "aten::add",
                ts,
                [[n], [n], []],
                ["float", "float", "Scalar"],
                [LATENCY_US + work],
                gpu_ts=ts + 100,
            )
            + 200
        )
    for j in range(20):
        b.kernel("tiny_kernel", ts + 10 * j, ts + 100 + 10 * j, LATENCY_US)
    b.kernel("mid_kernel", ts + 400, ts + 500, 10.0)
    return b.load()


def _per_size(r) -> dict:
    ops = r["ops"].to_pandas()
    return {json.loads(d)[0][0]: p / c for d, p, c in zip(ops.input_dims, ops.predicted, ops.calls)}


def _unmodelled(r) -> list:
    ev = r["events"].to_pandas()
    return sorted(ev[ev.family == "(unmodelled compute)"].predicted.round().unique())


def test_the_latency_keeps_its_time_and_the_work_scales(devices):
    trace = latency_bound_trace()
    assert launch_floor_of(trace) == LATENCY_US * 1e3
    r = predict(trace, "FAST-TEST", devices_file=devices)
    # work at twice the bandwidth takes half as long; the 2 µs of latency stay
    for n, got in _per_size(r).items():
        assert got == pytest.approx((LATENCY_US + _roofline_us(n)) * 1e3, rel=1e-3)
    # kernels outside an operator: at the floor they keep their time; 10 µs -> 2 + 8 / 2
    assert _unmodelled(r) == [2000.0, 6000.0]


def test_a_known_target_floor_moves_the_latency(devices):
    r = predict(latency_bound_trace(), "FAST-TEST", devices_file=devices, device_floor_ns=4000.0)
    for n, got in _per_size(r).items():
        assert got == pytest.approx((4.0 + _roofline_us(n)) * 1e3, rel=1e-3)
    assert _unmodelled(r) == [4000.0, 8000.0]


def test_the_rule_on_hand_made_numbers():
    m = KernelModels({}, floor_ns=2000.0, latency_ns=2000.0)
    measured = np.array([12_000.0, 3_000.0, 10_000.0])
    roof_src = np.array([5_000.0, 500.0, 10_000.0])
    pred = m.predict_call("x", measured, roof_src, roof_src / 2, np.ones(3))
    # latency 2 µs + work / 2; a call at its roofline has no latency part: all of it scales
    assert list(pred) == [2_000 + 5_000, 2_000 + 500, 5_000]
    pred = m.predict_call("x", measured, roof_src, roof_src / 2, np.ones(3), floor_dst_ns=4000)
    assert list(pred) == [4_000 + 5_000, 4_000 + 500, 5_000]


def test_the_curve_correction_stays_between_one_and_the_roofline_ratio():
    # a curve steeper than slope 1: efficiency 1 % at 1 µs of roofline, 100 % at 10 µs; on a
    # device 10x faster it would make the call 10x slower; held at 1, it keeps its time
    steep = EfficiencyCurve(np.array([3.0, 4.0]), np.array([-2.0, 0.0]))
    m = KernelModels({"f": steep}, floor_ns=0.0)
    measured, roof = np.array([1e6]), np.array([1e4])
    assert m.predict_call("f", measured, roof, roof / 10, np.ones(1)) == pytest.approx(1e6)
    # and no further than the roofline ratio the other way
    falling = EfficiencyCurve(np.array([3.0, 4.0]), np.array([0.0, -1.0]))
    m = KernelModels({"f": falling}, floor_ns=0.0)
    assert m.predict_call("f", measured, roof, roof / 10, np.ones(1)) == pytest.approx(1e5)


def test_a_trace_of_long_kernels_measures_no_latency():
    # its low quantile is the cap: nothing says any of a 300 µs kernel is latency
    assert latency_floor(np.full(10, 300_000)) == 0.0
    assert latency_floor(np.array([2_000] * 10 + [300_000] * 90)) == 2_000.0


# The real pairs: the same Hugging Face model and script, one step on each GPU.
PAIRS = TRACES_DIR / "pairs" / "gpu_swap"
QWEN = "Qwen_Qwen1.5-0.5B-Chat"
FALCON = "Falconsai_nsfw_image_detection"
MI300X_OTHER = TRACES_DIR / "pairs" / "attention_backend" / "flux_aiter.json.gz"
EVAL = REPO / "benchmarks" / "eval_predict.py"


def _eval(a: Path, b: Path, *extra: str) -> dict:
    for p in (a, b):
        if not p.exists():
            pytest.skip(f"{p} is not here")
    out = subprocess.run(
        [sys.executable, str(EVAL), str(a), str(b), *extra],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["families"]["(all)"]


def _pair(model: str, src: str, dst: str) -> tuple[Path, Path]:
    return PAIRS / f"{model}.{src}.json.gz", PAIRS / f"{model}.{dst}.json.gz"


# all-groups GM error, pinned a little above the measured figure (docs/ops.md). H100 ->
# MI300X, the pairs' direction, uses the device table's MI300X launch floor (measured on
# the FLUX traces, another workload); the table has no H100 floor, so MI300X -> H100 keeps
# the source's latency.
@pytest.mark.parametrize(
    "src, dst, measured", [("h100", "mi300x", 0.432), ("mi300x", "h100", 0.569)]
)
def test_qwen_beats_no_change(src, dst, measured):
    r = _eval(*_pair(QWEN, src, dst))
    assert r["gm_error"] <= measured + 0.01
    assert r["gm_error"] < r["gm_error_no_model"]


def test_falconsai_beats_no_change_with_the_device_tables_floor():
    r = _eval(*_pair(FALCON, "h100", "mi300x"))
    assert r["gm_error"] <= 0.405 + 0.01
    assert r["gm_error"] < r["gm_error_no_model"]  # 64.1 %


def test_falconsai_onto_a_gpu_without_a_known_floor():
    # every kernel of this small model ran slower on the MI300X, whose peaks and bandwidth
    # are all higher: predicting the H100 from it without the H100's floor, no ratio between
    # 1 and the roofline ratio beats "no change" (docs/ops.md); the rule still gains on the
    # previous 99 %
    r = _eval(*_pair(FALCON, "mi300x", "h100"))
    assert r["gm_error"] <= 0.885 + 0.01


@pytest.mark.parametrize(
    "src, dst, floor_from, measured",
    [
        ("h100", "mi300x", MI300X_OTHER, 0.387),
        ("mi300x", "h100", PAIRS / f"{QWEN}.h100.json.gz", 0.503),
    ],
)
def test_falconsai_beats_no_change_with_the_target_floor(src, dst, floor_from, measured):
    # the target's launch floor measured on another workload recorded on that GPU
    if not floor_from.exists():
        pytest.skip(f"{floor_from} is not here")
    r = _eval(*_pair(FALCON, src, dst), "--device-floor-from", str(floor_from))
    assert r["gm_error"] <= measured + 0.01
    assert r["gm_error"] < r["gm_error_no_model"]


# --- kernel time per step on the GPU-swap pairs: the model against the one-ratio baseline ----
SWAP = ("Qwen_Qwen1.5-0.5B-Chat", "Falconsai_nsfw_image_detection")
NOT_FAMILIES = {"(all)", "(communication)", "(host transfer)", "(graph replay, no capture)"}


def _directions():
    from hta_fast import load

    folder = TRACES_DIR / "pairs/gpu_swap"
    for name in SWAP:
        h100, mi300x = (load(str(folder / f"{name}.{d}.json.gz")) for d in ("h100", "mi300x"))
        yield f"{name} H100->MI300X", h100, mi300x
        yield f"{name} MI300X->H100", mi300x, h100


@pytest.mark.slow
def test_the_ratio_families_are_those_the_model_loses_on_and_the_default_beats_the_ratio():
    """Per family, the kernel model's summed error over the four directions against the
    ratio's decides RATIO_FAMILIES; with them, the default prediction's kernel time per
    step is no further from B's than the ratio's, in every direction."""
    from hta_fast.model.predict import RATIO_FAMILIES
    from hta_fast.model.predict_check import kernel_time_errors

    model, ratio = {}, {}
    for label, a, b in _directions():
        raw = kernel_time_errors(a, b, ratio_families=()).to_pylist()
        for row in raw:
            if row["family"] in NOT_FAMILIES or row["model_error"] is None:
                continue
            model[row["family"]] = model.get(row["family"], 0.0) + row["model_error"]
            ratio[row["family"]] = ratio.get(row["family"], 0.0) + row["ratio_error"]
        total = kernel_time_errors(a, b).to_pylist()[-1]
        assert total["family"] == "(all)"
        assert total["model_error"] <= total["ratio_error"], (label, total)
    losing = {f for f in model if model[f] > ratio[f]}
    assert losing == set(RATIO_FAMILIES), {f: (model[f], ratio[f]) for f in model}


def test_replayed_work_without_its_capture_is_scaled_by_the_bandwidth_ratio():
    """A graph replay with no capture recorded: its kernels count for the graph launch's
    operators, which say nothing of their shapes, so the prediction scales them by the two
    devices' memory bandwidths, and a note says so."""
    from hta_fast.costs.devices import DeviceTable
    from tests.support.kineto_builder import KinetoBuilder

    b = KinetoBuilder()  # an A100-SXM4-80GB
    b.step(0, 0, 1000)
    b.cpu_op("CompiledRegion", 0, 100)
    b.graph_launch(10, [("k0", 100, 40.0), ("k1", 150, 60.0)])
    res = predict(b.load(), "H100-SXM")
    ev = res["events"].to_pylist()
    table = DeviceTable.load()
    ratio = table.get("A100-SXM4-80GB").memory_gbps / table.get("H100-SXM").memory_gbps
    assert [e["family"] for e in ev] == ["(graph replay, no capture)"] * 2
    assert [e["predicted"] for e in ev] == pytest.approx([40_000 * ratio, 60_000 * ratio])
    assert any("matched no capture" in n for n in res.notes)
