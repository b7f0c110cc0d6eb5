"""The doctor: each synthetic trace built to show one cause puts that cause first, a healthy
one reports nothing above threshold, thresholds change the outcome, and every real trace
gets a sane diagnosis."""

from __future__ import annotations

import json
import math

import pytest

import hta_fast
from hta_fast.doctor import CAUSES, Diagnosis, Finding, Thresholds, diagnose
from tests.support import synthetic_traces as synth
from tests.support.kineto_builder import KinetoBuilder, traceset

MS = 1_000_000


@pytest.fixture(scope="module")
def diagnoses() -> dict[str, Diagnosis]:
    out = {name: diagnose(build()) for name, build in synth.SCENARIOS.items()}
    out["healthy"] = diagnose(synth.healthy())
    return out


@pytest.mark.parametrize("cause", CAUSES)
def test_each_cause_comes_first_on_its_trace(diagnoses, cause):
    d = diagnoses[cause]
    first = d.findings[0]
    assert first.cause == cause, d.to_text()
    assert first.above_threshold
    assert not d.healthy
    assert [f.cause for f in d.findings if f.cause != cause and f.share > first.share] == []


def test_every_cause_has_one_finding_ranked_by_cost(diagnoses):
    for d in diagnoses.values():
        assert sorted(f.cause for f in d.findings) == sorted(CAUSES)
        # Above threshold first; then by the model's saving where it has one, else the cost.
        keys = [f.rank_key for f in d.findings]
        assert keys == sorted(keys)
        for f in d.findings:
            assert isinstance(f, Finding) and f.cost_ns_per_step >= 0 and f.share >= 0
            assert f.advice and f.title


def test_healthy_trace_reports_nothing_above_threshold(diagnoses):
    d = diagnoses["healthy"]
    assert d.healthy
    assert not any(f.above_threshold for f in d.findings)
    assert d.failed() == []
    assert d.utilization > 0.99
    assert "Healthy" in d.to_text()


def test_costs_match_the_construction(diagnoses):
    # launch_bound: 100 kernels of 30 µs per 10 ms step, each waiting ~70 µs for its launch.
    f = diagnoses["launch_bound"].finding("launch_bound")
    assert f.cost_ns_per_step == pytest.approx(7 * MS, rel=0.01)
    assert diagnoses["launch_bound"].utilization == pytest.approx(0.30, abs=0.005)
    # input_pipeline: 4 ms of data loading per 10 ms step with the GPU idle.
    f = diagnoses["input_pipeline"].finding("input_pipeline")
    assert f.cost_ns_per_step == pytest.approx(4 * MS, rel=0.01)
    # exposed_communication: a 4.95 ms all-reduce per step that nothing overlaps.
    f = diagnoses["exposed_communication"].finding("exposed_communication")
    assert f.cost_ns_per_step == pytest.approx(4.95 * MS, rel=0.001)
    assert f.evidence["overlap_pct"] == pytest.approx(0.0)
    # rank_imbalance: rank 1 waits 5 ms per step, rank 0 none: 2.5 ms mean; the rest of the
    # collective (1.95 ms on each rank) stays exposed communication.
    d = diagnoses["rank_imbalance"]
    assert d.finding("rank_imbalance").cost_ns_per_step == pytest.approx(2.5 * MS, rel=0.001)
    assert d.finding("rank_imbalance").ranks == [1]
    assert d.finding("rank_imbalance").evidence["slowest_rank"] == 0
    assert d.finding("rank_imbalance").evidence["stragglers"] == "0"  # starts its collective last
    assert d.finding("exposed_communication").cost_ns_per_step == pytest.approx(
        1.95 * MS, rel=0.001
    )
    # parallelism: 1000 gaps of 2 µs plus 1000 kernels of 8 µs filling 16 of 108 SMs.
    f = diagnoses["parallelism"].finding("parallelism")
    assert f.cost_ns_per_step == pytest.approx(2 * MS + 8 * MS * (1 - 16 / 108), rel=0.001)
    assert f.evidence["small_grid_time_share"] == 1.0
    assert f.evidence["sm_count"] == "108"


def test_evidence_names_the_events_steps_and_ranks(diagnoses):
    f = diagnoses["launch_bound"].finding("launch_bound")
    assert f.top_events[0]["name"] == "aten::add"
    assert f.top_events[0]["count"] == 100 * synth.STEPS
    assert f.steps == list(range(synth.STEPS)) and f.ranks == [0]
    m = diagnoses["memory_sync"].finding("memory_sync")
    assert m.evidence["pageable_copies_per_step"] == 1.0
    assert m.evidence["blocking_syncs_per_step"] == 1.0  # item > _local_scalar_dense > sync
    assert {e["name"] for e in m.top_events} >= {"Memcpy DtoH (Device -> Pageable)"}
    i = diagnoses["input_pipeline"].finding("input_pipeline")
    assert i.top_events[0]["name"].startswith("enumerate(DataLoader)")
    assert i.evidence["gpu_idle_share_of_loader_time"] > 0.99
    e = diagnoses["exposed_communication"].finding("exposed_communication")
    assert "AllReduce" in e.top_events[0]["name"]
    assert e.evidence["collectives_with_size"] == 2 * synth.STEPS


def test_threshold_overrides_change_the_outcome():
    trace = synth.input_pipeline()
    assert not diagnose(trace).healthy
    assert diagnose(trace, thresholds=Thresholds(min_share=0.5)).healthy
    # Gaps of 2 µs between queued kernels stop counting when kernel_wait_us is 1.
    par = synth.parallelism()
    base = diagnose(par).finding("parallelism").cost_ns_per_step
    fewer = diagnose(par, thresholds=Thresholds(kernel_wait_us=1)).finding("parallelism")
    assert fewer.cost_ns_per_step == pytest.approx(base - 2 * MS, rel=0.001)


def test_thresholds_validate_and_load_from_a_mapping():
    t = Thresholds.from_mapping({"min_share": 0.1, "tiny_kernel_us": 5})
    assert t.min_share == 0.1 and t.tiny_kernel_us == 5.0 and t.kernel_wait_us == 30.0
    with pytest.raises(ValueError, match="unknown threshold"):
        Thresholds.from_mapping({"min_shares": 0.1})
    with pytest.raises(ValueError, match="min_share"):
        Thresholds(min_share=-1)
    with pytest.raises(ValueError, match="number"):
        Thresholds.from_mapping({"min_share": "high"})
    with pytest.raises(ValueError, match="fp32_gemm_speedup"):
        Thresholds(fp32_gemm_speedup=0.5)


def test_failed_is_a_ci_gate(diagnoses):
    d = diagnoses["launch_bound"]
    reasons = d.failed()
    assert len(reasons) == 1 and reasons[0].startswith("launch_bound")
    assert d.failed(fail_on=["rank_imbalance"]) == []
    assert d.failed(fail_on=["launch_bound"]) == reasons
    assert any(
        "utilization" in r for r in d.failed(fail_under_utilization=50, fail_on=["input_pipeline"])
    )
    assert d.failed(fail_under_utilization=10, fail_on=["input_pipeline"]) == []
    with pytest.raises(ValueError, match="unknown cause"):
        d.failed(fail_on=["gpu_on_fire"])


def test_serialisations(diagnoses):
    for name, d in diagnoses.items():
        doc = json.loads(json.dumps(d.to_dict()))
        assert set(doc) >= {"utilization", "findings", "thresholds", "notes"}
        assert [f["cause"] for f in doc["findings"]] == [f.cause for f in d.findings]
        text = d.to_text()
        assert len(text.splitlines()) >= 2
        if name != "healthy":
            assert name in text


def test_step_selection():
    trace = synth.launch_bound()
    d = diagnose(trace, steps=[1, 2])
    assert d.steps == [1, 2]
    assert d.finding("launch_bound").steps == [1, 2]
    with pytest.raises(ValueError, match="none of the steps"):
        diagnose(trace, steps=[99])


def test_bad_arguments():
    with pytest.raises(TypeError, match="Trace or a TraceSet"):
        diagnose("trace.json")
    with pytest.raises(TypeError, match="Thresholds"):
        diagnose(synth.healthy(), thresholds={"min_share": 0.1})


def test_without_sm_count_occupancy_decides():
    b = KinetoBuilder(num_sms=None)
    for s in range(3):
        b.step(s, s * 10_000, 10_000)
        for j in range(20):
            b.kernel(
                "small_kernel",
                s * 10_000 + j * 20,
                s * 10_000 + 100 + j * 500,
                499,
                grid=(4, 1, 1),
                occupancy=2.0,
            )
    d = diagnose(traceset([b]))
    f = d.finding("parallelism")
    assert d.findings[0].cause == "parallelism"
    # occupancy 2 % against the 10 % threshold: 80 % of each kernel's time is lost.
    assert f.cost_ns_per_step == pytest.approx(0.8 * 20 * 499_000, rel=0.01)
    assert any("SM count" in n for n in d.notes)


def test_real_trace_diagnoses(traces_dir, chrome_trace):
    trace = hta_fast.load(traces_dir / chrome_trace)
    d = diagnose(trace)
    # None where no rank recorded GPU activity (a CPU-only trace)
    assert d.utilization is None if d.step_time_ns is None else 0.0 <= d.utilization <= 1.0
    assert sorted(f.cause for f in d.findings) == sorted(CAUSES)
    for f in d.findings:
        assert f.cost_ns_per_step >= 0 and math.isfinite(f.share)
        assert set(f.ranks) <= set(d.ranks)
    json.dumps(d.to_dict())
    assert d.to_text()
    if d.no_gpu_activity:  # CPU-only traces, launches without GPU events (test_doctor_no_gpu)
        assert d.ranks and not d.healthy and d.failed()


def test_real_eight_rank_set(traces_dir):
    ts = hta_fast.load_dir(traces_dir / "param_dlrm_8rank")
    d = diagnose(ts)
    assert d.ranks == list(range(8))
    imb = d.finding("rank_imbalance")
    assert imb.evidence["stragglers"] != "unknown"
    assert 0 <= imb.evidence["work_time_spread"]
    assert 0.0 < d.utilization < 1.0
    json.dumps(d.to_dict())


def test_covered_length_and_touches():
    import numpy as np

    from hta_fast.doctor.views.intervals import covered_length, touches

    s, e = np.array([10, 30, 50]), np.array([20, 40, 60])
    q0 = np.array([0, 15, 0, 25, 35, 45, 60, 5])
    q1 = np.array([5, 35, 100, 28, 55, 50, 70, 5])
    assert covered_length(s, e, q0, q1).tolist() == [0, 10, 30, 0, 10, 0, 0, 0]
    assert touches(s, e, q0, q1).tolist() == [False, True, True, False, True, True, True, False]
    assert covered_length(s[:0], e[:0], q0, q1).tolist() == [0] * 8


@pytest.mark.parametrize(
    "name",
    [
        "hta/trace_diff/control/control.json.gz",
        "hta/negative_queue_length_values_check/rank0.json.gz",
    ],
)
def test_mean_queue_length_is_the_queue_length_analysis_mean(traces_dir, name):
    # launch_bound takes the time-weighted mean queue length by Little's law instead of
    # building the step functions: it must equal analysis.queue_length's.
    from hta_fast.analysis.queue_length import queue_length
    from hta_fast.doctor.causes.launch_bound import _queue_time

    trace = hta_fast.load(traces_dir / name)
    ts = trace.column("events", "ts")
    for window in (None, (int(ts.min()) + 10**7, int(ts.min()) + 5 * 10**7)):
        q = queue_length(trace, window=window)["summary"]
        d = q.column("duration").to_numpy().astype(float)
        expected = float((q.column("mean").to_numpy() * d).sum() / d.sum())
        waited, lasted = _queue_time(trace, window)
        assert waited / lasted == pytest.approx(expected, rel=1e-9)


def test_real_trace_evidence_matches_the_json(traces_dir):
    # Count, straight from the JSON, what memory_sync and input_pipeline report for a real
    # trace: blocking syncs, host<->device copies (launched inside the steps), pageable ones,
    # their bytes, and data-loader calls.
    import gzip

    path = traces_dir / "hta/trace_diff/control/control.json.gz"
    events = json.load(gzip.open(path))["traceEvents"]
    steps = [e for e in events if e.get("name", "").startswith("ProfilerStep#")]
    lo, hi = min(e["ts"] for e in steps), max(e["ts"] + e["dur"] for e in steps)
    x = [e for e in events if e.get("ph") == "X" and lo <= e["ts"] <= hi]
    sync_calls = [
        e
        for e in x
        if e["name"]
        in (
            "cudaStreamSynchronize",
            "cudaDeviceSynchronize",
            "aten::item",
            "aten::_local_scalar_dense",
        )
    ]
    # one sync per outermost call: aten::item > aten::_local_scalar_dense > the sync is one
    # (of two calls with the same span, the first in the file encloses the other)
    syncs = sum(
        not any(
            (o["pid"], o["tid"]) == (e["pid"], e["tid"])
            and o["ts"] <= e["ts"]
            and e["ts"] + e["dur"] <= o["ts"] + o["dur"]
            and ((o["ts"], o["dur"]) != (e["ts"], e["dur"]) or j < i)
            for j, o in enumerate(sync_calls)
        )
        for i, e in enumerate(sync_calls)
    )
    loaders = sum(e["name"].startswith("enumerate(DataLoader)") for e in x)
    launch_ts = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    copies = [
        e
        for e in events
        if e.get("cat") == "gpu_memcpy"
        and ("HtoD" in e["name"] or "DtoH" in e["name"])
        and lo <= launch_ts.get(e["args"].get("correlation"), -1) <= hi
    ]
    n = len(steps)
    d = diagnose(hta_fast.load(path))
    m = d.finding("memory_sync").evidence
    assert m["blocking_syncs_per_step"] == pytest.approx(syncs / n)
    assert m["host_device_copies_per_step"] == pytest.approx(len(copies) / n)
    assert m["pageable_copies_per_step"] == pytest.approx(
        sum("Pageable" in e["name"] for e in copies) / n
    )
    assert m["copy_bytes_per_step"] == pytest.approx(sum(e["args"]["bytes"] for e in copies) / n)
    assert d.finding("input_pipeline").evidence["loader_calls_per_step"] == pytest.approx(
        loaders / n
    )
    assert d.steps == sorted(int(e["name"].split("#")[1]) for e in steps)


def test_allocator_calls_in_steady_state_are_memory_sync():
    d = diagnose(synth.allocator_churn())
    f = d.findings[0]
    assert f.cause == "memory_sync" and f.above_threshold
    # The GPU idles from 5.1 ms to the next step's first kernel at 10.1 ms; cudaMalloc and
    # cudaFree calls cover 4.9 ms of that, the rest waits for the next launch.
    assert f.evidence["allocator_idle_ns_per_step"] == pytest.approx(4.9 * MS, rel=0.01)
    assert f.evidence["allocator_calls_per_step"] == 7
    assert f.evidence["allocator_calls_after_first_step"] == 7 * (synth.STEPS - 1)
    assert {e["name"] for e in f.top_events} == {"cudaMalloc", "cudaFree"}


def test_fp32_gemms_on_a_tensor_core_device_are_memory_sync():
    d = diagnose(synth.fp32_gemm())
    f = d.findings[0]
    assert f.cause == "memory_sync"
    # 20 GEMMs of 499 µs per step, half of each lost at the assumed 2x tensor-core speed-up.
    assert f.cost_ns_per_step == pytest.approx(20 * 499_000 / 2, rel=0.001)
    assert f.top_events[0]["name"] == "ampere_sgemm_128x64_nn"
    faster = diagnose(synth.fp32_gemm(), thresholds=Thresholds(fp32_gemm_speedup=4))
    assert faster.finding("memory_sync").cost_ns_per_step == pytest.approx(
        20 * 499_000 * 0.75, rel=0.001
    )
    # The same GEMMs on tensor cores (the healthy trace) cost nothing.
    assert diagnose(synth.healthy()).finding("memory_sync").cost_ns_per_step == 0
