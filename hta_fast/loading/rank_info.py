"""What one loaded rank holds, in a line: `hta-fast info`'s row and the report's ranks table."""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from ..costs.devices import trace_device
from ..schema import GPU_WORK_KINDS, EventKind
from ..trace import Trace


def rank_info(trace: Trace) -> dict[str, Any]:
    """One rank: file, sizes, devices, events, kernels, streams, steps, span."""
    kind = trace.column("events", "kind")
    ts = trace.column("events", "ts")
    dur = np.maximum(trace.column("events", "dur"), 0)
    gpu = np.isin(kind, GPU_WORK_KINDS)
    steps = trace.column("steps", "step")
    devices = sorted(
        {str(d.get("name")) for d in trace.meta.devices if isinstance(d, dict) and d.get("name")}
    )
    if not devices:  # unnamed (ROCm builds of vLLM): the device table's entry, if it knows it
        known = trace_device(trace)
        devices = [f"{known.key} (identified)"] if known is not None else []
    path = trace.meta.path
    return {
        "rank": trace.rank,
        "file": path,
        "file_bytes": os.path.getsize(path) if path and os.path.isfile(path) else None,
        "json_bytes": trace.meta.json_bytes,
        "world_size": trace.meta.world_size,
        "devices": ", ".join(devices),
        "events": int(len(kind)),
        "kernels": int(np.count_nonzero(kind == EventKind.kernel)),
        "gpu_events": int(np.count_nonzero(gpu)),
        "streams": _distinct(trace.column("events", "stream")[gpu]),
        "steps": int(len(steps)),
        "first_step": int(steps.min()) if len(steps) else None,
        "last_step": int(steps.max()) if len(steps) else None,
        "span_ms": float((ts + dur).max() - ts.min()) / 1e6 if len(ts) else 0.0,
    }


def _distinct(values: np.ndarray) -> int:
    """How many distinct values, by a sort: np.unique imports numpy.ma the first time (its
    masked-array check), ~30 ms of `hta-fast info` on a small trace."""
    ordered = np.sort(values)
    return int(len(ordered) > 0) + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


# Header keys only ROCm builds of the profiler write.
ROCM_HEADER = ("roctracer_version", "hip_runtime_version", "hip_driver_version")


def stream_source(trace: Trace) -> Optional[str]:
    """What a ROCm trace's GPU streams are, which depends on when Kineto wrote it; None for
    other traces. Before June 2026 (kineto #1424) kernels and copies sat on their HSA
    queue's id: a device has GPU_MAX_HW_QUEUES of them (4 by default), so HIP streams beyond
    that share one and their work interleaves on it. Since then they sit on their HIP
    stream, and args.hsa_queue (kineto #1425) keeps the queue."""
    queues = trace.column("kernel_args", "hsa_queue")
    if np.any(queues >= 0):
        return (
            "ROCm: GPU work on its HIP streams; kernel_args.hsa_queue holds the HSA queue "
            "(Kineto from June 2026)"
        )
    header = trace.meta.header or {}
    if not any(key in header for key in ROCM_HEADER):
        return None
    return (
        "ROCm: GPU work on its HSA queues, as Kineto before June 2026 wrote it: a device has "
        "GPU_MAX_HW_QUEUES (4 by default), so HIP streams beyond that share a queue and show "
        "as one stream, their work interleaved"
    )
