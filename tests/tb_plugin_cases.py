"""Small traces whose TensorBoard-plugin figures are compared with ours
(tests/test_tb_plugin_cases.py).

Each case is a list of ranks, each rank a list of events built with the helpers below; the
shapes follow the unit cases the plugin ships with (one collective per rank pair, a step with
every category, steps with and without GPU work), with our own numbers where said. Times are
whole microseconds, as Kineto writes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

Event = dict[str, Any]
PID = 23803  # the host process
MAIN = 23803  # the main thread


def op(
    name: str,
    ts: int,
    dur: int,
    ext: int = 0,
    tid: int = MAIN,
    *,
    cat: str = "cpu_op",
    dims: Optional[list] = None,
    types: Optional[list] = None,
) -> Event:
    """A host event: a CPU operator (cat "cpu_op"), a user annotation, a Python function."""
    args: dict[str, Any] = {"External id": ext}
    if dims is not None:
        args["Input Dims"] = dims
    if types is not None:
        args["Input type"] = types
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def step(n: int, ts: int, dur: int, ext: int = 0) -> Event:
    return op(f"ProfilerStep#{n}", ts, dur, ext, cat="cpu_op")


def runtime(name: str, ts: int, dur: int, corr: int, ext: int, tid: int = MAIN) -> Event:
    """A CUDA runtime call that launched the GPU event with correlation corr."""
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": PID, "tid": tid, "ts": ts,
            "dur": dur, "args": {"correlation": corr, "external id": ext}}  # fmt: skip


def gpu(
    name: str,
    ts: int,
    dur: int,
    corr: int,
    ext: int,
    *,
    stream: int = 7,
    cat: str = "kernel",
    extra: Optional[dict] = None,
) -> Event:
    """A GPU event (cat "kernel", "gpu_memcpy" or "gpu_memset") on device 0."""
    args = {"device": 0, "stream": stream, "correlation": corr, "external id": ext}
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": f"stream {stream}", "ts": ts,
            "dur": dur, "args": {**args, **(extra or {})}}  # fmt: skip


def write(events: list[Event], path: Path, rank: int = 0, world: int = 1) -> Path:
    doc = {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "traceEvents": events,
    }
    path.write_text(json.dumps(doc))
    return path


def write_case(name: str, folder: Path) -> list[Path]:
    """The case's ranks as trace files in folder, rank r in NAME_rank_r.json."""
    ranks = CASES[name]
    return [
        write(events, folder / f"{name}_rank_{r}.json", r, len(ranks))
        for r, events in enumerate(ranks)
    ]


# --- The distributed view: a pair of ranks each --------------------------------------------

_BCAST = dict(dims=[[53120]], types=["float"])
_ALLRED = dict(dims=[[2049000]], types=["float"])
_ADD = dict(dims=[[1000], [1000], []], types=["float", "float", "Int"])
_NCCL_BCAST = "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)"
_NCCL_ALLRED = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
_ELEMENTWISE = "void at::native::vectorized_elementwise_kernel"


def _nccl_rank(bcast: tuple, add: tuple, kernel: tuple, allred: tuple) -> list[Event]:
    """A broadcast, an add and an all-reduce; each tuple: (host ts, host dur, GPU ts, GPU
    dur) but add's kernel, which is `kernel` (ts, dur). No runtime calls are recorded: the
    kernels are tied to their operators by External id only."""
    return [
        op("nccl:broadcast", bcast[0], bcast[1], 146, **_BCAST),
        gpu(_NCCL_BCAST, bcast[2], bcast[3], 28506, 146, stream=16),
        op("aten::add_", add[0], add[1], 24504, **_ADD),
        gpu(_ELEMENTWISE, kernel[0], kernel[1], 99765, 24504),
        op("nccl:all_reduce", allred[0], allred[1], 2513, 25166, **_ALLRED),
        gpu(_NCCL_ALLRED, allred[2], allred[3], 33218, 2513, stream=16),
    ]


def _gloo_rank(bcasts: list, add: tuple, compute: tuple, allreds: list, on_gpu: bool) -> list:
    """Three gloo broadcasts and two all-reduces on two host threads beside an add (and a
    kernel, or a host aten::mul, as the computation)."""
    threads = (MAIN, 23805, MAIN)
    ext = iter(range(165, 200))
    events = [
        op("gloo:broadcast", ts, dur, next(ext), tid, **_BCAST)
        for (ts, dur), tid in zip(bcasts, threads)
    ]
    events.append(op("aten::add_", add[0], add[1], 24504, 23800, **_ADD))
    if on_gpu:
        events.append(gpu(_ELEMENTWISE, compute[0], compute[1], 99765, 24504))
    else:
        events.append(op("aten::mul", compute[0], compute[1], 24505, 23800))
    events += [
        op("gloo:all_reduce", ts, dur, 2513 + k, tid, **_ALLRED)
        for k, ((ts, dur), tid) in enumerate(zip(allreds, (23805, MAIN)))
    ]
    return events


_GLOO_0 = dict(bcasts=[(16, 38), (25, 36), (66, 18)], add=(0, 20), allreds=[(110, 18), (120, 36)])
_GLOO_1 = dict(bcasts=[(20, 28), (28, 30), (77, 6)], add=(0, 30), allreds=[(88, 38), (130, 16)])

CASES: dict[str, list[list[Event]]] = {
    "distributed_nccl": [
        _nccl_rank((0, 75, 16, 16), (100, 20), (130, 161), (160, 75, 162, 1556)),
        _nccl_rank((0, 20, 8, 31), (25, 20), (30, 161), (160, 75, 562, 1058)),
    ],
    "distributed_gloo_gpu": [
        _gloo_rank(**_GLOO_0, compute=(30, 101), on_gpu=True),  # type: ignore[arg-type]
        _gloo_rank(**_GLOO_1, compute=(70, 70), on_gpu=True),  # type: ignore[arg-type]
    ],
    "distributed_gloo_cpu": [
        _gloo_rank(**_GLOO_0, compute=(30, 101), on_gpu=False),  # type: ignore[arg-type]
        _gloo_rank(**_GLOO_1, compute=(70, 70), on_gpu=False),  # type: ignore[arg-type]
    ],
}
