"""The TensorBoard profiler plugin's metrics (hta_fast.analysis.tensorboard): synthetic traces
whose answers hold by construction, and the plugin's own ResNet-50 samples (one V100,
DataLoader num_workers 0 and 4)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.registry import ANALYSES
from hta_fast.analysis.temporal import temporal_breakdown
from hta_fast.analysis.tensorboard import (
    achieved_occupancy,
    gpu_utilization,
    sm_efficiency,
    step_breakdown,
)
from hta_fast.cli import cli
from hta_fast.doctor import diagnose
from hta_fast.frame import Selection, kernel_args
from hta_fast.frame.gpu_work import gpu_work
from hta_fast.recipes import sm_occupancy
from hta_fast.steps import step_windows
from tests.conftest import TRACES_DIR
from tests.support import synthetic_traces as synth
from tests.support.kineto_builder import BASE_US, KinetoBuilder, traceset

US = 1000  # ns
GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
PAIR = TRACES_DIR / "pairs" / "dataloader_workers"
WORKERS = {n: PAIR / f"resnet50_num_workers_{n}.pt.trace.json.gz" for n in (0, 4)}
V100_SMS = 80  # a Tesla V100 has 80 SMs (NVIDIA's V100 datasheet)


def one(result, which=None) -> dict:
    (row,) = result.to_arrow(which).to_pylist()
    return row


def by_step(result, which="steps") -> dict:
    return {r["step"]: r for r in result.to_arrow(which).to_pylist()}


def memset(b: KinetoBuilder, cpu_ts: float, gpu_ts: float, dur: float) -> None:
    b._launch("cudaMemsetAsync", cpu_ts, 5.0, "gpu_memset", "Memset (Device)", gpu_ts, dur, 7, {})


def kernel_event(b: KinetoBuilder, index: int = -1) -> dict:
    return [e for e in b.events if e.get("cat") == "kernel"][index]


# --- the steps' windows ---------------------------------------------------------------------
def extended_steps() -> KinetoBuilder:
    """Step 1 (host 0-1000 µs) launches a kernel at 900 that runs 950-1400; step 2 (host
    1000-2000) a kernel on 1500-1600 and a copy on 1700-1800. A kernel launched before the
    steps runs -40..20 µs, before step 1's own GPU work."""
    b = KinetoBuilder()
    b.kernel(GEMM, -50, -40, 60)
    b.step(1, 0, 1000)
    b.kernel(GEMM, 900, 950, 450)
    b.step(2, 1000, 1000)
    b.kernel(GEMM, 1100, 1500, 100)
    b.memcpy("HtoD", 1200, 1700, 100, 1 << 20)
    return b


def test_a_step_runs_to_the_end_of_its_gpu_work():
    t = extended_steps().load()
    w = step_windows.step_windows(t, None)
    base = BASE_US * US
    assert (w.ts - base).tolist() == [20 * US, 1400 * US]  # after the earlier kernel; after step 1
    assert (w.end - base).tolist() == [1400 * US, 2000 * US]
    assert w.gpu_events.tolist() == [1, 2]


def test_window_totals_split_intervals_between_windows():
    got = step_windows.window_totals(
        np.array([0, 10, 30]), np.array([10, 20, 40]), np.array([5, 12, 0]), np.array([15, 35, 2])
    )
    # [5,15) -> 5 + 5; [12,35) -> 8 in the second, 5 in the third; [0,2) -> 2 in the first
    assert got.tolist() == [5 + 2, 5 + 8, 5]
    weighted = step_windows.window_totals(
        np.array([0, 10]), np.array([10, 20]), np.array([5]), np.array([15]), np.array([0.5])
    )
    assert weighted.tolist() == [2.5, 2.5]


# --- GPU utilization --------------------------------------------------------------------------
def test_gpu_utilization_is_kernel_time_over_the_steps_time():
    t = extended_steps().load()
    r = gpu_utilization.gpu_utilization(t)
    row = one(r)
    assert row["steps_time"] == (2000 - 20) * US
    assert row["kernel_busy_in_steps"] == (450 + 100) * US  # the copy is not kernel time
    assert row["kernel_busy_of_steps_pct"] == pytest.approx(100 * 550 / 1980)
    steps = by_step(r)
    assert steps[1]["kernel_busy_of_step_pct"] == pytest.approx(100 * 450 / 1380)
    assert steps[2]["kernel_busy_of_step_pct"] == pytest.approx(100 * 100 / 600)
    # Ours: any GPU work (the copy too) over its span, the temporal breakdown's number.
    assert row["gpu_work_busy"] == (60 + 450 + 100 + 100) * US
    assert row["gpu_work_span"] == (1800 + 40) * US
    temporal = one(temporal_breakdown(t))
    assert row["gpu_work_busy_of_span_pct"] == pytest.approx(100 - temporal["idle_time_pctg"])
    assert steps[2]["gpu_work_busy"] == 200 * US and steps[2]["gpu_work_span"] == 300 * US


def test_gpu_utilization_of_a_cpu_only_rank_is_null():
    b = KinetoBuilder()
    b.step(1, 0, 1000)
    b.cpu_op("aten::add", 10, 100)
    r = gpu_utilization.gpu_utilization(b.load())
    row = one(r)
    assert row["kernel_busy_in_steps"] == 0 and row["kernel_busy_of_steps_pct"] == 0
    assert row["gpu_work_busy_of_span_pct"] is None


# --- SM efficiency ----------------------------------------------------------------------------
def sm_builder(num_sms=100) -> KinetoBuilder:
    """Step 1 (0-1000 µs): 50 blocks for 200 µs (0.5 of 100 SMs), then 400 blocks for 100 µs
    (4 SMs' worth each: 1). Step 2 (1000-2000): 50 blocks on 1100-1300 and, on another
    stream, 70 blocks on 1200-1400: 0.5, then 1.2 counted as 1, then 0.7."""
    b = KinetoBuilder(num_sms=num_sms)
    b.step(1, 0, 1000)
    b.kernel(GEMM, 10, 100, 200, grid=(50, 1, 1))
    b.kernel(GEMM, 20, 500, 100, grid=(400, 1, 1))
    b.step(2, 1000, 1000)
    b.kernel(GEMM, 1010, 1100, 200, grid=(50, 1, 1))
    b.kernel(GEMM, 1020, 1200, 200, grid=(10, 7, 1), stream=9)
    return b


def test_sm_efficiency_weighs_each_kernel_by_its_share_of_the_sms():
    r = sm_efficiency.sm_efficiency(sm_builder().load())
    row = one(r)
    assert row["sm_count"] == 100 and row["sm_count_from"] == "deviceProperties"
    steps = by_step(r)
    assert steps[1]["sm_efficiency_pct"] == pytest.approx(100 * (0.5 * 200 + 1 * 100) / 1000)
    assert steps[2]["sm_efficiency_pct"] == pytest.approx(100 * (50 + 100 + 70) / 1000)
    assert row["sm_efficiency_pct"] == pytest.approx(100 * (200 + 220) / 2000)
    timeline = r["timeline"].to_pylist()
    base = BASE_US * US
    got = [((x["ts"] - base) // US, round(x["sm_efficiency_pct"], 6)) for x in timeline]
    assert got == [
        (100, 50),
        (300, 0),
        (500, 100),
        (600, 0),
        (1100, 50),
        (1200, 100),
        (1300, 70),
        (1400, 0),
    ]


def test_sm_efficiency_takes_the_sm_count_from_the_kernels_when_the_header_has_none():
    b = sm_builder(num_sms=None)
    for e in b.events:
        if e.get("cat") == "kernel":
            del e["args"]["blocks per SM"]
            g, blk = e["args"]["grid"], e["args"]["block"]
            e["args"]["warps per SM"] = g[0] * g[1] * g[2] * blk[0] / 32 / 100
    r = sm_efficiency.sm_efficiency(b.load())
    row = one(r)
    assert row["sm_count"] == 100 and row["sm_count_from"] == "warps per SM"
    assert row["sm_efficiency_pct"] == pytest.approx(21.0)
    assert any("warps per SM" in n for n in r.notes)
    for e in b.events:
        e.get("args", {}).pop("warps per SM", None)
    r = sm_efficiency.sm_efficiency(b.load())
    assert one(r)["sm_efficiency_pct"] is None and one(r)["sm_count"] is None
    assert [s["sm_efficiency_pct"] for s in r["steps"].to_pylist()] == [None, None]
    assert any("SM efficiency is null" in n for n in r.notes)


def test_kernel_shares_match_kinetos_blocks_per_sm(traces_dir):
    # Where the header gives the SM count, blocks / SMs is what Kineto wrote as blocks per SM.
    t = hta_fast.load(traces_dir / "hta" / "trace_diff" / "control" / "control.json.gz")
    rows = np.flatnonzero(t.column("events", "kind") == hta_fast.EventKind.kernel)
    share, sms, source = sm_efficiency.kernel_sm_shares(t, rows)
    recorded = kernel_args.kernel_arg(t, rows, "blocks_per_sm").astype(float)
    ok = ~np.isnan(recorded)
    assert source == "deviceProperties" and sms == 108 and ok.sum() > 1000
    np.testing.assert_allclose(share[ok], recorded[ok], rtol=1e-6)
    # ... and the SM count the kernels' warps per SM imply is the header's.
    assert kernel_args.sm_counts_from_warps(t, rows) == 108


# --- achieved occupancy ------------------------------------------------------------------------
def test_achieved_occupancy_is_time_weighted_over_the_kernels_with_a_value():
    b = KinetoBuilder()
    b.step(1, 0, 1000)
    b.kernel(GEMM, 10, 100, 200, occupancy=50)
    b.kernel(GEMM, 20, 400, 100, occupancy=10)
    b.kernel(GEMM, 30, 600, 300)
    del kernel_event(b)["args"]["est. achieved occupancy %"]  # no value: left out
    b.step(2, 1000, 1000)
    b.kernel(GEMM, 1010, 1100, 50, occupancy=80)
    r = achieved_occupancy.achieved_occupancy(b.load())
    steps = by_step(r)
    assert steps[1]["achieved_occupancy_pct"] == pytest.approx((50 * 200 + 10 * 100) / 300)
    assert steps[1]["kernels"] == 3 and steps[1]["kernels_without_value"] == 1
    assert steps[1]["kernel_time_with_value"] == 300 * US
    assert steps[2]["achieved_occupancy_pct"] == pytest.approx(80)
    row = one(r)
    assert row["achieved_occupancy_pct"] == pytest.approx((50 * 200 + 10 * 100 + 80 * 50) / 350)
    assert any("1 of 4 kernels" in n for n in r.notes)
    # The recipe gives the analysis's per-step numbers.
    recipe = {x["step"]: x for x in sm_occupancy.occupancy_per_step(b.load()).table.to_pylist()}
    assert recipe[1]["occupancy"] == steps[1]["achieved_occupancy_pct"]
    assert recipe[1]["events"] == 2


def test_a_kernel_counts_only_its_time_inside_the_steps():
    # Launched before the steps, it runs into step 1's window (it ends after step 1's own
    # first kernel began, so the window does not wait for it): only its part inside counts.
    b = KinetoBuilder()
    b.kernel(GEMM, -150, -100, 200, occupancy=90)
    b.step(1, 0, 1000)
    b.kernel(GEMM, 10, 50, 100, occupancy=30, stream=9)
    row = one(achieved_occupancy.achieved_occupancy(b.load()))
    assert row["kernel_time_with_value"] == (100 + 100) * US
    assert row["achieved_occupancy_pct"] == pytest.approx((90 * 100 + 30 * 100) / 200)


# --- the step-time breakdown ------------------------------------------------------------------
def breakdown_builder() -> KinetoBuilder:
    """Step 1 (0-1000 µs), by construction:
    0-200 dataloader (a CPU op inside it too), 200-300 CPU op with two 5 µs launches,
    300-500 kernel, 450-550 copy (under the kernel till 500), 550-600 the CPU op again,
    610 / 620 two more launches, 700-750 memset, 800-900 an NCCL kernel, 900-1000 nothing.
    Step 2 (1000-2000): a DataPipe graph's iteration on 1000-1300, a host nccl:all_reduce
    on 1500-1600, a Python function over the whole step and a GPU annotation (neither is a
    category)."""
    b = KinetoBuilder()
    b.step(1, 0, 1000)
    b.dataloader(0, 200)
    b.cpu_op("aten::copy_", 50, 100)
    b.cpu_op("aten::linear", 200, 400)
    b.kernel(GEMM, 250, 300, 200)
    b.memcpy("HtoD", 260, 450, 100, 1 << 20)
    memset(b, 610, 700, 50)
    b.nccl("allreduce", 620, 800, 100)
    b.step(2, 1000, 1000)
    b.cpu_op("enumerate(DataPipe)#BatcherIterDataPipe", 1000, 300, cat="user_annotation")
    b.cpu_op("enumerate(DataPipe)#MapperIterDataPipe", 1010, 280, cat="user_annotation")
    b.cpu_op("nccl:all_reduce", 1500, 100)
    b.cpu_op("train.py(10): main", 1000, 1000, cat="python_function")
    b._x("gpu_user_annotation", "forward", 1700, 100, 0, 7, {})
    return b


def test_the_breakdown_gives_each_instant_to_the_first_category_running():
    r = step_breakdown.step_breakdown(breakdown_builder().load())
    steps = by_step(r, None)
    first = {c: steps[1][c] // US for c in step_breakdown.CATEGORIES}
    assert first == {
        "kernel": 200,
        "memcpy": 50,
        "memset": 50,
        "communication": 100,
        "runtime": 4 * 5,
        "dataloader": 200,
        "cpu_exec": 50 + 5 + 35 + 50,
        "other": 10 + 5 + 75 + 50 + 100,
    }
    second = {c: steps[2][c] // US for c in step_breakdown.CATEGORIES if steps[2][c]}
    assert second == {"dataloader": 300, "communication": 100, "other": 600}
    for s in steps.values():
        assert sum(s[c] for c in step_breakdown.CATEGORIES) == s["dur"]
        assert sum(s[f"{c}_pct"] for c in step_breakdown.CATEGORIES) == pytest.approx(100)
    mean = one(r, "ranks")
    assert mean["steps"] == 2 and mean["dataloader"] == pytest.approx(250 * US)
    assert mean["dataloader_pct"] == pytest.approx(100 * 250 / 1000)


def test_a_datapipe_graph_is_data_loading_for_the_doctor_too():
    # One pattern (frame.derived.DATALOADER) for the breakdown and the doctor.
    b = KinetoBuilder()
    for s in range(synth.STEPS):
        t0 = s * synth.STEP_US
        b.step(s, t0, synth.STEP_US)
        b.cpu_op("enumerate(DataPipe)#BatcherIterDataPipe", t0, 4000, cat="user_annotation")
        for j in range(10):
            b.kernel(GEMM, t0 + 4000 + j * 10, t0 + 4010 + j * 599, 598)
    r = step_breakdown.step_breakdown(b.load())
    assert all(row["dataloader"] == 4000 * US for row in r.table.to_pylist())
    f = diagnose(traceset([b])).finding("input_pipeline")
    assert f.cost_ns_per_step == 4000 * US


# --- by name, selections --------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["gpu_utilization", "sm_efficiency", "achieved_occupancy", "step_breakdown"]
)
def test_each_metric_runs_by_name_with_a_step_chosen(name, tmp_path):
    b = breakdown_builder()
    path = tmp_path / "rank0.json"
    path.write_bytes(b.to_bytes())
    res = CliRunner().invoke(cli, ["analyze", str(path), "-a", name, "--steps", "2"])
    assert res.exit_code == 0, res.output
    r = ANALYSES[name](b.load(), Selection(steps=[2]))
    steps = r.table if name == "step_breakdown" else r["steps"]
    assert steps.column("step").to_pylist() == [2]


# --- the plugin's own samples: ResNet-50 on a V100, num_workers 0 and 4 -------------------------
@pytest.fixture(scope="module")
def workers(traces_dir):
    return {n: hta_fast.load(p) for n, p in WORKERS.items()}


def test_the_data_loader_share_falls_with_workers(workers):
    share = {}
    for n, t in workers.items():
        r = step_breakdown.step_breakdown(t)
        for s in r.table.to_pylist():
            assert sum(s[c] for c in step_breakdown.CATEGORIES) == s["dur"]
            assert all(0 <= s[f"{c}_pct"] <= 100 for c in step_breakdown.CATEGORIES)
        share[n] = one(r, "ranks")["dataloader_pct"]
    # Without workers the loader runs in the training loop; with four it only hands over
    # batches that are ready.
    assert share[0] > 10
    assert share[4] < share[0] / 10


def test_the_samples_numbers_are_sane_and_agree_with_each_other(workers):
    util = {}
    for n, t in workers.items():
        gu = gpu_utilization.gpu_utilization(t)
        sm = sm_efficiency.sm_efficiency(t)
        br = step_breakdown.step_breakdown(t)
        occ = achieved_occupancy.achieved_occupancy(t)
        row, sm_row = one(gu), one(sm)
        assert 30 < row["kernel_busy_of_steps_pct"] <= 100
        assert 30 < row["gpu_work_busy_of_span_pct"] <= 100
        # No deviceProperties: the SMs come from the kernels' warps per SM.
        assert sm_row["sm_count"] == V100_SMS and sm_row["sm_count_from"] == "warps per SM"
        # A share of the SMs is counted only while kernels run.
        assert 0 < sm_row["sm_efficiency_pct"] <= row["kernel_busy_of_steps_pct"]
        for g, s in zip(gu["steps"].to_pylist(), sm["steps"].to_pylist()):
            assert 0 < s["sm_efficiency_pct"] <= g["kernel_busy_of_step_pct"]
        # No collective kernels: the breakdown's kernel time is the kernels' busy time.
        assert br.table.column("kernel").to_pylist() == (
            gu["steps"].column("kernel_busy_in_step").to_pylist()
        )
        # These traces record no est. achieved occupancy: null, and said.
        assert one(occ)["achieved_occupancy_pct"] is None and occ.notes
        # Each step's window holds its host step and all the GPU work it launched.
        w = step_windows.step_windows(t, None)
        assert (w.ts >= w.host_ts).all() and (w.end >= w.host_end).all()
        work = gpu_work(t, None)
        step = t.column("events", "step")[work.rows]
        for s, end in zip(w.step, w.end):
            assert work.ends[step == s].max() <= end
        util[n] = row["kernel_busy_of_steps_pct"]
    assert util[4] > util[0]  # the GPU waits less for data with workers
