"""Waits the trace implies: GPU work held behind a communication kernel on another stream
(hta_fast.model.graph.held_waits), and pageable copies that hold the host until they are
done (sync_calls.pageable_copies). A communication kernel is a source like any other: scaling
COMM moves everything held behind it."""

from __future__ import annotations

import collections
import functools
import re

import numpy as np
import pandas as pd
import pytest

import hta_fast
from hta_fast.model.graph import held_waits
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.whatif.steps import what_if
from hta_fast.schema import KernelClass
from tests.model.test_model_runtime_waits import call, edges_of, graph_of
from tests.support.kineto_builder import CPU_PID, CPU_TID, KinetoBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
ADD = "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>"
HOLD = 989  # µs: ADD ready at 40 (its launch call's end), started at 1,029


def comm_then_add(held: bool, wait_call: bool = True) -> hta_fast.Trace:
    """One step, µs: a GEMM on stream 7 (15-25); stream 20 made to wait for it (a
    cudaStreamWaitEvent without its cuda_sync row, before the collective's launch, as NCCL
    issues it); an all-reduce on stream 20 launched at 17 (27-1,027); every launch takes
    10 µs from its call's start to its kernel's; an add on stream 7 launched at 30-40,
    held until the all-reduce ends (starts 1,029) or not (starts 40); the host syncs on the
    stream and then works for 1,100 µs."""
    b = KinetoBuilder()
    b.step(0, 0, 3000)
    b.kernel(GEMM, 5, 15, 10, stream=7)
    if wait_call:
        call(b, "cudaStreamWaitEvent", 10, 1)
    b.nccl("allreduce", 17, 27, 1000, stream=20)
    add_start = 40 + HOLD if held else 40
    b.kernel(ADD, 30, add_start, 100, stream=7, launch_dur=10)
    sync_end = add_start + 103
    b._x(
        "cuda_runtime", "cudaStreamSynchronize", 45, sync_end - 45, CPU_PID, CPU_TID, {"cbid": 131}
    )
    b.cpu_op("aten::log", sync_end + 3, 1100)
    return b.load()


def saved(trace: hta_fast.Trace, scale: float) -> int:
    r = what_if(trace, kernel_class={"COMM": scale}).to_pandas()
    return int(r.measured[0] - r.predicted[0])


@pytest.mark.parametrize("wait_call", [True, False])
def test_comm_zero_saves_exactly_the_held_wait(wait_call):
    trace = comm_then_add(held=True, wait_call=wait_call)
    g = graph_of(trace)
    assert g.waits.held == 1 and g.waits.held_with_call == int(wait_call)
    cross = edges_of(trace, g, "cross_stream")
    assert [(a[:16], b) for a, _, b, _ in cross if b == ADD] == [("ncclDevKernel_Al", ADD)]
    assert saved(trace, 0.0) == HOLD * 1000
    assert saved(trace, 0.5) == 500 * 1000  # the all-reduce ends 500 µs earlier
    # The critical path charges the all-reduce (and the 2 µs release after it) to
    # communication: 1,002 µs of the 3,000 µs step.
    path = critical_path(trace).to_pandas()
    assert path.gpu_communication_bound[0] == pytest.approx(100 * 1002 / 3000, abs=1e-6)


def test_without_the_hold_comm_saves_nothing():
    trace = comm_then_add(held=False)
    assert graph_of(trace).waits.held == 0
    assert saved(trace, 0.0) == 0 and saved(trace, 0.5) == 0


def test_a_launch_latency_is_no_hold_and_a_late_start_no_release():
    """held_by on bare arrays: the add sat ready for less than MIN_HOLD, or started more
    than GAP after the other stream's work ended: no wait."""
    us = 1000

    def held(ready_gap, start_gap):
        # event 0: the collective (stream 1, 0-1000 µs); 1: the add's launch call; 2: the
        # add (stream 0), ready at 1000 - ready_gap, started at 1000 + start_gap
        ts = np.array([0, 0, 1000 + start_gap]) * us
        dur = np.array([1000, 1000 - ready_gap, 100]) * us
        return held_waits.held_by(
            ts,
            dur,
            lane=np.array([1, 2, 0]),
            device=np.zeros(3, np.int64),
            is_gpu=np.array([True, False, True]),
            call_end=np.array([-1, -1, (1000 - ready_gap) * us]),
        )[2]

    assert held(ready_gap=900, start_gap=2) == 0
    assert held(ready_gap=30, start_gap=2) == -1  # ready 32 µs before it started
    assert held(ready_gap=900, start_gap=40) == -1  # started 40 µs after: not released by it


def copy_trace(direction: str, pageable: bool, call_covers_copy: bool) -> hta_fast.Trace:
    """A kernel (stream 7, 10-510 µs), then a copy after it on the same stream (512-520)
    whose cudaMemcpyAsync (launched at 20) returns after the copy (523) or at once (25)."""
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    b.kernel(GEMM, 2, 10, 500, stream=7)
    b.memcpy(
        direction,
        20,
        512,
        8,
        1 << 20,
        stream=7,
        pageable=pageable,
        launch_dur=503 if call_covers_copy else 5,
    )
    b.cpu_op("aten::log", 530, 50)
    return b.load()


@pytest.mark.parametrize(
    "direction, pageable, covers, blocks",
    [
        ("DtoH", True, True, True),
        ("HtoD", True, True, True),
        ("DtoH", False, True, False),  # pinned: asynchronous
        ("HtoD", True, False, False),  # staged and returned before its copy ran
    ],
)
def test_pageable_copies_hold_the_host_until_done(direction, pageable, covers, blocks):
    trace = copy_trace(direction, pageable, covers)
    g = graph_of(trace)
    waits = edges_of(trace, g, "sync_wait")
    assert bool(waits) == blocks
    # Halving compute moves the host only where the copy held it.
    r = what_if(trace, kernel_class={"COMP": 0.5}).to_pandas()
    assert (r.predicted[0] < r.measured[0]) == blocks


# --- real traces: waits behind communication kernels ------------------------------------------

# Calls that hold the host until the GPU is done: the syncs and synchronous copies, and an
# asynchronous copy only where its copy touches pageable memory.
BLOCKING = re.compile(
    r"^(cuda|hip|cu)(StreamSynchronize|EventSynchronize|DeviceSynchronize|CtxSynchronize"
    r"|Memcpy$|MemcpyWithStream)"
)
ASYNC_COPY = re.compile(r"^(cuda|hip)MemcpyAsync")


def host_blocked_comm_waits(trace: hta_fast.Trace, gap_ns: int = 25_000) -> dict[int, int]:
    """Per step, ns, computed from the trace alone (no graph): GPU work on a stream that
    started within gap_ns after a communication kernel on another stream of its device ended,
    having been launched and found its own stream idle before that end; the part of its hold
    (from the later of when it was ready and the communication kernel's start) during which
    the host sat in a blocking call that returned after it started. That is the wait a
    faster collective removes from the host's step."""
    df = trace.events.select(
        ["ts", "dur", "kind", "kernel_class", "stream", "pid", "partner", "step", "name"]
    ).to_pandas()
    df["end"] = df.ts + df.dur
    gpu = df[df.kind.isin(["kernel", "memcpy", "memset"])]
    comm = gpu[gpu.kernel_class == "COMM"]
    runtime = df[(df.kind == "runtime") & (df.dur > 0)]
    copy_of = runtime.partner.where(runtime.partner >= 0, -1).astype(int)
    pageable = copy_of.map(lambda r: r >= 0 and "Pageable" in df.name.iloc[r])
    calls = runtime[
        runtime.name.str.match(BLOCKING) | (runtime.name.str.match(ASYNC_COPY) & pageable)
    ]
    blocked = calls[["ts", "end"]].sort_values("ts").to_numpy()
    out: dict[int, int] = collections.defaultdict(int)
    for (pid, stream), g in gpu[gpu.kernel_class != "COMM"].groupby(["pid", "stream"]):
        g = g.sort_values("ts")
        before = np.r_[np.iinfo(np.int64).min, np.maximum.accumulate(g.end.to_numpy())[:-1]]
        cs = comm[(comm.pid == pid) & (comm.stream != stream)].sort_values("end")
        if cs.empty:
            continue
        c_end, c_start = cs.end.to_numpy(), cs.ts.to_numpy()
        for (_, w), prev_end in zip(g.iterrows(), before):
            if not w.partner >= 0:
                continue
            launch = df.iloc[int(w.partner)]
            ready = max(launch.ts + launch.dur, prev_end)
            k = np.searchsorted(c_end, w.ts, side="right") - 1
            if k < 0 or w.ts - c_end[k] > gap_ns or ready >= c_end[k]:
                continue
            low = max(ready, c_start[k])
            for a, b in blocked:
                if a < w.ts <= b:
                    out[int(w.step)] += int(w.ts - max(low, a))
                    break
    return out


REAL = [
    *(f"param_dlrm_8rank/worker{r}.pt.trace.json.gz" for r in range(8)),
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/trace_diff/test/test.json.gz",
    "hta/trace_diff/control/control.json.gz",
    "hta/df_index_resolver/df_index_resolver.json.gz",
    "hta/nccl_parser_config/nccl_data.json.gz",
    "modern/mi300_ddp_resnet18/train_resnet18.json.gz",
]


@functools.lru_cache(maxsize=None)
def _load(rel: str) -> hta_fast.Trace:
    from tests.conftest import TRACES_DIR

    return hta_fast.load(str(TRACES_DIR / rel))


@pytest.mark.parametrize("chained", [True, False], ids=["chained", "windows"])
@pytest.mark.parametrize("rel", REAL)
def test_comm_zero_saves_the_waits_the_host_sat_through(rel, chained, traces_dir):
    """Per step, chained and window by window: COMM=0 saves at least 80 % of the
    communication wait measured from the trace alone, and COMM=0.5 between nothing and what
    COMM=0 saves."""
    trace = _load(rel)
    waits = host_blocked_comm_waits(trace)
    if not (trace.column("events", "kernel_class") == KernelClass.COMM).any():
        # modern/mi300_ddp_resnet18 runs one process: no collective, nothing to wait on,
        # and an edit of communication is refused rather than reported as 0 %.
        assert not waits
        with pytest.raises(ValueError, match="kernel class COMM"):
            what_if(trace, kernel_class={"COMM": 0.0})
        return
    zero = what_if(trace, kernel_class={"COMM": 0.0}, chained=chained)
    half = what_if(trace, kernel_class={"COMM": 0.5}, chained=chained)
    if chained:
        # A chain's steps start where the ones before them end: on a GPU that runs behind
        # its host (trace_diff/test) a step may grow when the one before it shrinks, so the
        # steps are held to the saving together (what_if's totals).
        z, h = zero["totals"].to_pandas().iloc[0], half["totals"].to_pandas().iloc[0]
        saved_zero, saved_half = z.replayed - z.predicted, h.replayed - h.predicted
        assert saved_zero >= 0.8 * sum(waits.values()), (rel, saved_zero, waits)
        assert 0 <= saved_half <= saved_zero, rel
        return
    for (_, z), (_, h) in zip(zero.to_pandas().iterrows(), half.to_pandas().iterrows()):
        step = -1 if pd.isna(z.step) else int(z.step)
        saved_zero, saved_half = z.measured - z.predicted, h.measured - h.predicted
        assert saved_zero >= 0.8 * waits.get(step, 0), (rel, step, saved_zero, waits)
        assert 0 <= saved_half <= saved_zero, (rel, step)
    if rel.startswith("param_dlrm_8rank/worker1"):
        assert waits[10] > 6_000_000  # the 7 ms all-to-all wait of the report


# --- no silent no-ops ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit, named",
    [
        ({"name": {"no_such_kernel": 0.5}}, "kernel name /no_such_kernel/"),
        ({"kernel_class": {"MEM": 0.5}}, "kernel class MEM"),
        ({"category": {"gpu_memset": 0.5}}, "GPU category 'gpu_memset'"),
        ({"op_scale": {"enumerate\\(DataLoader": 0.0}}, "CPU op /enumerate\\(DataLoader/"),
    ],
)
def test_an_edit_that_matches_nothing_is_an_error(edit, named):
    trace = comm_then_add(held=True)
    with pytest.raises(ValueError, match=re.escape(named)):
        what_if(trace, **edit)
    # Where it matches, it runs; a caller that applies fixed edits to any trace may pass.
    assert what_if(trace, allow_unmatched=True, **edit).table.num_rows == 1
    assert what_if(trace, name={"AddFunctor": 0.5}).table.num_rows == 1


def test_the_command_line_exits_2_on_an_edit_that_matches_nothing(tmp_path):
    from tests.cli.test_cli import one_error_line, run_subprocess

    b = KinetoBuilder()
    b.step(0, 0, 100)
    b.kernel(GEMM, 5, 15, 10)
    path = tmp_path / "t.json"
    path.write_bytes(b.to_bytes())
    res = run_subprocess("whatif", str(path), "--scale-name", "no_such_kernel=0.5")
    assert res.returncode == 2
    assert "kernel name /no_such_kernel/" in one_error_line(res.stderr)
    res = run_subprocess("whatif", str(path), "--scale", "COMM=0.5")
    assert res.returncode == 2 and "kernel class COMM" in one_error_line(res.stderr)


# --- a background thread's spanning event ------------------------------------------------


def test_a_thread_whose_only_event_spans_the_trace_is_no_step():
    """A decode trace without steps and an idle monitor thread whose one `wait` spans it:
    the window's end is the main thread's, and halving compute moves it."""
    b = KinetoBuilder()
    for i in range(5):
        t = 100.0 + i * 1000
        b.cpu_op("aten::mm", t, 50)
        b.kernel(GEMM, t + 10, t + 60, 800)
    b._x("cuda_runtime", "cudaDeviceSynchronize", 4200, 800, CPU_PID, CPU_TID, {"cbid": 165})
    b._x("python_function", "threading.py(324): wait", 0, 9000, CPU_PID, CPU_TID + 1, {})
    trace = b.load()
    from hta_fast.frame.idle_threads import background_mask

    assert background_mask(trace).sum() == 1
    r = what_if(trace, kernel_class={"COMP": 0.5}).to_pandas()
    assert r.measured[0] < 6_000_000  # the monitor's 9 ms wait is not the step
    assert r.predicted[0] < r.measured[0]


@pytest.mark.parametrize(
    "rel",
    [
        "hta/trace_diff/test/test.json.gz",
        "hta/trace_diff/control/control.json.gz",
        "hta/negative_queue_length_values_check/rank0.json.gz",
    ],
)
def test_the_doctors_exposed_communication_saving_agrees(rel, traces_dir):
    """The doctor's model saving for exposed communication (nothing waits for a collective)
    is within 10 % of what COMM=0 saves per step, and at least 80 % of the communication
    wait the host sat through, per step, measured from the trace alone."""
    from hta_fast.doctor import diagnose

    trace = _load(rel)
    saving = diagnose(trace, model=True).finding("exposed_communication").saving_ns_per_step
    totals = what_if(trace, kernel_class={"COMM": 0.0})["totals"].to_pandas()
    comm_zero = float(((totals.replayed - totals.predicted) / totals.steps).iloc[0])
    assert saving == pytest.approx(comm_zero, rel=0.1)
    waits = host_blocked_comm_waits(trace)
    assert saving >= 0.8 * sum(waits.values()) / trace.steps.num_rows


def test_a_thread_that_only_polls_is_left_out():
    """A watchdog thread that only calls cudaEventQuery (no launch, no wait) is no work of
    the step and wakes no thread; a thread with one launch among its calls is kept."""
    from hta_fast.frame.idle_threads import helper_mask

    b = KinetoBuilder()
    b.step(0, 0, 2000)
    b.kernel(GEMM, 10, 20, 500)
    for i in range(5):
        b._x("cuda_runtime", "cudaEventQuery", 100 + 300 * i, 2, CPU_PID, CPU_TID + 1, {})
    trace = b.load()
    tid = trace.column("events", "tid")
    assert helper_mask(trace).sum() == 5 and (tid[helper_mask(trace)] == CPU_TID + 1).all()
    assert (tid[graph_of(trace).rows] != CPU_TID + 1).all()


def test_work_held_behind_unrecorded_gpu_work_is_charged_to_that_work(traces_dir):
    """modern/sglang_decode: stream 3's kernels, launched at 0.12-0.33 ms, start at 463.38 ms,
    nothing recorded running meanwhile; the host sat in a blocking hipMemcpyWithStream queued
    behind them. The path charges the wait to the unrecorded work (on the held kernel), not
    to the copy and not to the launch."""
    from hta_fast.model.path.critical_path import critical_path

    trace = _load("modern/sglang_decode/sglang_Qwen3-8B_decode.json.gz")
    r = critical_path(trace)
    b = r.to_pandas("breakdown").sort_values("duration")
    top = b.iloc[-1]
    assert top.bound_by == "gpu_unrecorded_work" and top.duration > 460_000_000
    assert top["name"].startswith("void (anonymous namespace)::resolve_future_token_ids_kernel")
    summary = r.to_pandas()
    assert summary.gpu_kernel_launch_overhead[0] < 1.0 and summary.cpu_bound[0] < 1.0
