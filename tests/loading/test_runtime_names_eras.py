"""CUDA runtime and driver calls from both eras of Kineto: the same launches, copies and
waits come out of a trace that names each call as Kineto has since 2026 (CUPTI's callback
name, `_vNNNN` cut: kineto cupti_strings.cpp lookupCbidName) and of one that says
"INVALID" (runtime) or "unknown" (driver) beside the call's `cbid`, as Kineto before 2026
wrote the calls its own tables did not hold (runtimeCbidNames, CuptiCbidRegistry::getName).
The loader names such a call from its cbid (csrc/parse/cbid_names.h) and counts it
(name_from_cbid)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hta_fast
from hta_fast import sync_calls
from hta_fast.frame.graph_captures import api_kinds
from hta_fast.frame.graph_replays import graph_replays
from hta_fast.frame.launches import launch_pairs
from hta_fast.schema import EventKind

BASE_US = 1_700_000_000_000_000
PID, TID = 10, 10
RUNTIME, DRIVER = "cuda_runtime", "cuda_driver"

# (category, name as Kineto writes it since 2026, CUPTI cbid (cupti_runtime_cbid.h,
# cupti_driver_cbid.h), GPU events it queues: kernels, or a memcpy's name)
LAUNCHES = [
    (RUNTIME, "cudaLaunchKernel", 211, 1),
    (RUNTIME, "cudaLaunchKernel_ptsz", 214, 1),
    (RUNTIME, "cudaLaunchKernelExC", 430, 1),
    (RUNTIME, "cudaLaunchKernelExC_ptsz", 431, 1),
    (DRIVER, "cuLaunchKernel", 307, 1),
    (DRIVER, "cuLaunchKernel_ptsz", 442, 1),
    (DRIVER, "cuLaunchKernelEx", 652, 1),
    (DRIVER, "cuLaunchKernelEx_ptsz", 653, 1),
    (RUNTIME, "cudaGraphLaunch", 311, 3),
    (RUNTIME, "cudaGraphLaunch_ptsz", 312, 2),
    (DRIVER, "cuGraphLaunch", 514, 2),
    (RUNTIME, "cudaMemcpyAsync", 41, "Memcpy DtoD (Device -> Device)"),
    (RUNTIME, "cudaMemcpyAsync_ptsz", 225, "Memcpy HtoD (Pinned -> Device)"),
    (DRIVER, "cuMemcpyAsync", 306, "Memcpy DtoD (Device -> Device)"),
    (DRIVER, "cuMemcpyHtoDAsync_v2", 277, "Memcpy HtoD (Pinned -> Device)"),
    (DRIVER, "cuMemcpyDtoHAsync_v2_ptsz", 422, "Memcpy DtoH (Device -> Pinned)"),
]
# (category, name, cbid, the SyncKind its name says)
WAITS = [
    (RUNTIME, "cudaStreamSynchronize", 131, sync_calls.STREAM),
    (RUNTIME, "cudaStreamSynchronize_ptsz", 239, sync_calls.STREAM),
    (DRIVER, "cuStreamSynchronize", 126, sync_calls.STREAM),
    (DRIVER, "cuStreamSynchronize_ptsz", 440, sync_calls.STREAM),
    (RUNTIME, "cudaEventSynchronize", 137, sync_calls.EVENT),
    (DRIVER, "cuEventSynchronize", 121, sync_calls.EVENT),
    (RUNTIME, "cudaDeviceSynchronize", 165, sync_calls.DEVICE),
    (DRIVER, "cuCtxSynchronize", 17, sync_calls.DEVICE),
    (DRIVER, "cuCtxSynchronize_v2", 800, sync_calls.DEVICE),
    (RUNTIME, "cudaMemcpy", 31, sync_calls.OWN_COPY),
    (RUNTIME, "cudaMemcpy_ptds", 215, sync_calls.OWN_COPY),
    (DRIVER, "cuMemcpy", 305, sync_calls.OWN_COPY),
    (DRIVER, "cuMemcpyDtoH_v2", 278, sync_calls.OWN_COPY),
    (DRIVER, "cuMemcpyDtoH_v2_ptds", 398, sync_calls.OWN_COPY),
    (RUNTIME, "cudaStreamWaitEvent_ptsz", 247, sync_calls.STREAM_WAIT),
    (RUNTIME, "cudaEventRecord", 135, sync_calls.NONE),
]
UNNAMED = {RUNTIME: "INVALID", DRIVER: "unknown"}


def event(cat: str, name: str, ts: float, dur: float, pid: int, tid: int, args: dict) -> dict:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": BASE_US + ts,
        "dur": dur,
        "args": args,
    }


def trace_bytes(old: bool) -> bytes:
    """The calls of LAUNCHES then WAITS, 100 µs apart, each launch followed by its GPU work
    on stream 7; with `old`, every call named as Kineto before 2026 named it."""
    events = []
    corr = 100
    for i, (cat, name, cbid, work) in enumerate(LAUNCHES + WAITS):
        ts = i * 100.0
        corr += 1
        args = {"cbid": cbid, "correlation": corr}
        events.append(event(cat, UNNAMED[cat] if old else name, ts, 5, PID, TID, args))
        gpu = {"device": 0, "context": 1, "stream": 7, "correlation": corr}
        if isinstance(work, str):
            events.append(event("gpu_memcpy", work, ts + 10, 20, 0, 7, {**gpu, "bytes": 4096}))
        elif i < len(LAUNCHES):
            for k in range(work):
                events.append(event("kernel", f"k{i}_{k}", ts + 10 + 20 * k, 10, 0, 7, gpu))
    doc = {"schemaVersion": 1, "traceEvents": events}
    return json.dumps(doc).encode()


def call_rows(trace: hta_fast.Trace) -> np.ndarray:
    kind = trace.column("events", "kind")
    rows = np.flatnonzero(np.isin(kind, [EventKind.runtime, EventKind.driver]))
    return rows[np.argsort(trace.column("events", "ts")[rows], kind="stable")]


def names_of(trace: hta_fast.Trace, rows: np.ndarray) -> list[str]:
    return trace.strings_at(trace.column("events", "name")[rows]).to_pylist()


@pytest.fixture(params=["walker", "on_demand"])
def eras(request, monkeypatch) -> dict[str, hta_fast.Trace]:
    """Both layouts, read by either of the loader's event readers."""
    monkeypatch.setenv("HTA_FAST_WALKER", "1" if request.param == "walker" else "0")
    return {"new": hta_fast.load(trace_bytes(False)), "old": hta_fast.load(trace_bytes(True))}


def test_unnamed_calls_are_named_from_their_cbid(eras):
    expected = [name for _, name, _, _ in LAUNCHES + WAITS]
    for era, trace in eras.items():
        assert names_of(trace, call_rows(trace)) == expected, era
    assert eras["new"].stat("name_from_cbid") == 0
    assert eras["old"].stat("name_from_cbid") == len(expected)
    for era, trace in eras.items():
        kinds = trace.column("events", "kind")[call_rows(trace)].tolist()
        assert kinds == [
            EventKind.driver if cat == DRIVER else EventKind.runtime
            for cat, _, _, _ in LAUNCHES + WAITS
        ], era


def test_the_same_waits_from_both_eras(eras):
    expected = [int(kind) for _, _, _, kind in WAITS]
    waits = []
    for trace in eras.values():
        rows = call_rows(trace)[len(LAUNCHES) :]
        assert sync_calls.sync_kinds_of_rows(trace, rows).tolist() == expected
        held = sync_calls.host_wait_rows(trace)
        waits.append(names_of(trace, held))
    blocking = [name for _, name, _, kind in WAITS if kind in sync_calls.BLOCKING]
    assert waits[0] == waits[1] == blocking


def test_the_same_launches_from_both_eras(eras):
    pairs, graphs, kinds = [], [], []
    for trace in eras.values():
        launch, gpu = launch_pairs(trace, None)
        pairs.append(list(zip(names_of(trace, launch), names_of(trace, gpu))))
        replays = graph_replays(trace)
        graphs.append(
            [
                (names_of(trace, replays.launch[i : i + 1])[0], int(n))
                for i, n in enumerate(np.diff(replays.offsets))
            ]
        )
        rows = call_rows(trace)[: len(LAUNCHES)]
        kinds.append(api_kinds(trace)[trace.column("events", "name")[rows]].tolist())
    assert pairs[0] == pairs[1] and len(pairs[0]) == sum(
        1 if isinstance(w, str) else w for _, _, _, w in LAUNCHES
    )
    assert (
        graphs[0] == graphs[1] == [(name, n) for _, name, _, n in LAUNCHES if "GraphLaunch" in name]
    )
    expected = [
        EventKind.memcpy if isinstance(w, str) else EventKind.kernel
        for _, name, _, w in LAUNCHES
        if "GraphLaunch" not in name
    ]
    for got in kinds:
        assert [k for k, (_, name, _, _) in zip(got, LAUNCHES) if "GraphLaunch" not in name] == (
            expected
        )


def test_a_name_is_kept_where_the_cbid_does_not_name_a_call():
    """INVALID for a cbid outside the table (409, cudaStreamGetCaptureInfo_v2, as real
    traces of 2022-2023 hold), without a cbid, or on an event that is not a runtime or
    driver call, stays as written."""
    events = [
        event(RUNTIME, "INVALID", 0, 1, PID, TID, {"cbid": 409, "correlation": 1}),
        event(RUNTIME, "INVALID", 10, 1, PID, TID, {"correlation": 2}),
        event(DRIVER, "unknown", 20, 1, PID, TID, {"cbid": 100_000, "correlation": 3}),
        event("cpu_op", "unknown", 30, 1, PID, TID, {"cbid": 211}),
        event(RUNTIME, "cudaMalloc", 40, 1, PID, TID, {"cbid": 211, "correlation": 4}),
    ]
    trace = hta_fast.load(json.dumps({"traceEvents": events}).encode())
    names = trace.strings_at(trace.column("events", "name")).to_pylist()
    assert names == ["INVALID", "INVALID", "unknown", "unknown", "cudaMalloc"]
    assert trace.stat("name_from_cbid") == 0


def test_real_trace_with_unnamed_calls_keeps_them(traces_dir):
    """A 2022 trace whose INVALID calls are cbid 409 (not a call the package classifies)."""
    trace = hta_fast.load(traces_dir / "hta/trace_diff/control/control.json.gz")
    names = trace.strings_at(trace.column("events", "name")).to_pylist()
    assert names.count("INVALID") == 60
    assert trace.stat("name_from_cbid") == 0


def test_driver_copies_to_pageable_memory_hold_the_host():
    """cuMemcpyAsync (and its _ptsz form) to pageable memory returns once its copy is done,
    as cudaMemcpyAsync and cuMemcpyDtoHAsync_v2 do; the synchronous cuMemcpy always does."""
    calls = ["cuMemcpyAsync", "cuMemcpyAsync_ptsz", "cuMemcpyDtoHAsync_v2", "cudaMemcpyAsync"]
    copies = ["Memcpy DtoH (Device -> Pageable)"] * len(calls)
    done = np.full(len(calls), 100)
    assert sync_calls.pageable_copies(calls, copies, done, done - 10).all()
    assert not sync_calls.pageable_copies(calls, copies, done, done + 10).any()
    kinds = sync_calls.sync_kind_of_names(["cuMemcpy", "cuMemcpy_ptds", "cuMemcpyAsync"])
    assert kinds.tolist() == [sync_calls.OWN_COPY, sync_calls.OWN_COPY, sync_calls.NONE]
