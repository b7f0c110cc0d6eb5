"""Small traces whose TensorBoard-plugin figures are compared with ours
(tests/reference_diff/test_tb_plugin_cases.py).

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


def _py(
    name: str, ts: int, dur: int, pid: int, parent: int = 0, module: Optional[int] = None
) -> Event:
    """A Python function event (with_stack), a module's forward when module is given."""
    args: dict[str, Any] = {"Python id": pid}
    if parent:
        args["Python parent id"] = parent
    if module is not None:
        args["Python module id"] = module
    return {"ph": "X", "cat": "python_function", "name": name, "pid": 1908, "tid": 1908,
            "ts": ts, "dur": dur, "args": args}  # fmt: skip


def step(n: int, ts: int, dur: int, ext: int = 0) -> Event:
    return op(f"ProfilerStep#{n}", ts, dur, ext, cat="cpu_op")


def runtime(name: str, ts: int, dur: int, corr: int, ext: int, tid: int = MAIN) -> Event:
    """A CUDA runtime call that launched the GPU event with correlation corr (category
    "Runtime": the plugin reads no other, not Kineto's "cuda_runtime")."""
    return {"ph": "X", "cat": "Runtime", "name": name, "pid": PID, "tid": tid, "ts": ts,
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

_TC_KERNEL = "volta_fp16_s884cudnn_fp16_128x128_ldg8_splitK_relu_f2f_exp_s"


def _sm(blocks_per_sm: float, occupancy: float) -> dict:
    return {"blocks per SM": blocks_per_sm, "est. achieved occupancy %": occupancy}


_NCCL_COPY = "ncclBroadcastRingLLKernel_copy_i8(ncclColl)"


def _cfg(block_z: int) -> dict:
    """A launch configuration: grid 16x1x1, block 16x16xblock_z, 18 registers, no shared
    memory."""
    return {"grid": [16, 1, 1], "block": [16, 16, block_z], "registers per thread": 18,
            "shared memory": 0}  # fmt: skip


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


def _nccl_steps_rank(late: int) -> list[Event]:
    """Two profiler steps, each an add and an all-reduce launched by recorded runtime calls;
    step 1's all-reduce kernel (late µs later on rank 1) runs past its host step's end."""
    return [
        step(1, 0, 300, 1),
        op("aten::add_", 10, 20, 10, **_ADD),
        *_launch(_ELEMENTWISE, (15, 5), (40, 200), 100, 10),
        op("nccl:all_reduce", 100, 60, 20, **_ALLRED),
        *_launch(_NCCL_ALLRED, (120, 5), (130 + late, 270 - late), 101, 20, stream=16),
        step(2, 300, 200, 2),
        op("aten::add_", 310, 20, 30, **_ADD),
        *_launch(_ELEMENTWISE, (315, 5), (410, 90), 102, 30),
        op("nccl:all_reduce", 350, 30, 40, **_ALLRED),
        *_launch(_NCCL_ALLRED, (360, 5), (500 - late // 5, 60 + late // 5), 103, 40, stream=16),
    ]


_GLOO_0 = dict(bcasts=[(16, 38), (25, 36), (66, 18)], add=(0, 20), allreds=[(110, 18), (120, 36)])
_GLOO_1 = dict(bcasts=[(20, 28), (28, 30), (77, 6)], add=(0, 30), allreds=[(88, 38), (130, 16)])

# --- The overview, operators and kernels: one rank each ----------------------------------

_NLL = "void cunn_ClassNLLCriterion_updateGradInput_kernel<float>"
_GEMM = "void gemmSN_TN_kernel_64addr"
_TO_DIMS = [[2, 8, 5], [], [], [], [], [], [], []]
_NLL_DIMS = [[], [32, 1000], [32], [], [], [], []]
_LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
_HTOD = "Memcpy HtoD (Pageable -> Device)"


def _launch(
    name: str, rt: tuple, work: tuple, corr: int, ext: int, tid: int = MAIN, **kw: Any
) -> list[Event]:
    """A runtime call (rt: ts, dur) and the GPU event it queued (work: ts, dur): a copy, a
    fill or a kernel by its name."""
    cat, api = (
        ("Memcpy", "cudaMemcpyAsync") if name.startswith("Memcpy")
        else ("Memset", "cudaMemsetAsync") if name.startswith("Memset")
        else ("Kernel", "cudaLaunchKernel")
    )  # fmt: skip
    return [runtime(api, *rt, corr, ext, tid), gpu(name, *work, corr, ext, cat=cat, **kw)]


def _steps_case(with_early_kernel: bool) -> list[Event]:
    """Two steps; the first one's copy runs past its host end; optionally a kernel queued
    before the steps runs into the first one."""
    events = [
        step(1, 100, 200, 1),
        op("aten::to", 200, 60, 2, dims=_TO_DIMS),
        step(2, 350, 150, 3),
        op("aten::mm", 360, 50, 4),
        *_launch(_HTOD, (250, 5), (280, 100 if with_early_kernel else 40), 334, 2),
        *_launch(_NLL, (400, 5), (410, 200), 40348, 4),
    ]
    if with_early_kernel:
        events.append(gpu(_NLL, 150, 90, 123, 123))
    return events


CASES: dict[str, list[list[Event]]] = {
    # One step holding each category once.
    "all_categories": [
        [
            op(_LOADER, 100, 180, 2),
            op("aten::to", 200, 60, 3, dims=_TO_DIMS),
            op("aten::nll_loss_backward", 340, 70, 4, 456, dims=_NLL_DIMS),
            step(1, 50, 400, 1),
            *_launch(_HTOD, (360, 20), (405, 10), 334, 4, 456),
            *_launch("Memset (Device)", (390, 10), (420, 5), 40344, 4, 456),
            *_launch(_NLL, (405, 5), (430, 15), 40348, 4, 456),
        ]
    ],
    # Launches whose runtime calls start where their operator starts, or end where it ends.
    "external_id": [
        [
            op("aten::mat_mul", 100, 100, 2, 456),
            op("aten::mm", 120, 70, 4, 456),
            *_launch(_NLL, (120, 0), (130, 5), 334, 4, 456),
            *_launch(_NLL, (120, 0), (130, 6), 335, 2, 456),
            *_launch(_NLL, (190, 0), (130, 7), 336, 4, 456),
            *_launch(_NLL, (190, 0), (130, 8), 337, 2, 456),
        ]
    ],
    # aten::mm nested three deep in itself, the innermost launching a kernel.
    "self_nested": [
        [
            op("aten::mm", 100, 100, 2, 456),
            op("aten::mm", 110, 80, 3, 456),
            op("aten::mm", 120, 60, 4, 456),
            *_launch(_GEMM, (130, 20), (220, 8), 335, 4, 456),
        ]
    ],
    # A launch outside every operator (its own External id).
    "top_level_runtime": [
        [op("aten::mm", 100, 100, 2, 123), *_launch(_GEMM, (130, 20), (220, 8), 335, 335, 456)]
    ],
    # A launch directly inside the profiler step.
    "runtime_in_step": [[step(1, 100, 300, 2), *_launch(_GEMM, (130, 20), (220, 8), 335, 2, 456)]],
    # No ProfilerStep#N: one step over the host events.
    "no_profilerstep": [
        [
            op("aten::to", 100, 60, 3, 123, dims=_TO_DIMS),
            op("aten::nll_loss_backward", 300, 70, 4, 456, dims=_NLL_DIMS),
            *_launch(_NLL, (310, 20), (320, 100), 40348, 4, 456),
        ]
    ],
    "steps_no_overlap": [_steps_case(False)],
    "steps_with_overlap": [_steps_case(True)],
    # An operator's self time: its child and its own launch taken out.
    "self_time": [
        [
            op("aten::mat_mul", 100, 100, 2, 456),
            op("aten::mm", 120, 40, 4, 456),
            *_launch(_NLL, (150, 10), (155, 20), 334, 4, 456),
            *_launch(_NLL, (170, 25), (210, 16), 335, 2, 456),
        ]
    ],
    # The last two steps launch nothing.
    "last_steps_no_kernel": [
        [
            step(1, 100, 200, 1),
            op("aten::to", 120, 10, 2, dims=_TO_DIMS),
            step(2, 300, 100, 3),
            step(3, 400, 50, 4),
            gpu(_NLL, 90, 20, 123, 123),
            runtime("cudaMemcpyAsync", 125, 5, 334, 2),
            gpu(_NLL, 150, 180, 334, 2),
        ]
    ],
    # Steps without GPU work.
    "pure_cpu": [
        [
            step(1, 100, 200, 1),
            op("aten::to", 120, 10, 2, dims=_TO_DIMS),
            step(2, 300, 100, 3),
            op("aten::mm", 350, 40, 4),
        ]
    ],
    # Kernels with blocks per SM and occupancy on two streams; one of zero length.
    "gpu_utilization": [
        [
            op("aten::mat_mul", 100, 100, 2, 456),
            op("aten::mm", 120, 70, 4, 456),
            *_launch(_NLL, (120, 0), (130, 10), 334, 4, 456, extra=_sm(0.5, 0.6)),
            runtime("cudaLaunchKernel", 120, 0, 335, 2, 456),
            gpu(_GEMM, 135, 15, 335, 2, stream=8, extra=_sm(0.6, 0.1)),
            gpu(_GEMM, 150, 0, 335, 2, stream=8, extra=_sm(0.3, 0.2)),
            *_launch(_NLL, (125, 3), (145, 25), 336, 4, 456, extra=_sm(0.3, 1.0)),
            *_launch(_NLL, (195, 1), (200, 20), 337, 2, 456, extra=_sm(10.5, 0.3)),
        ]
    ],
    # A kernel launched before the one step, and one after it.
    "kernel_out_of_step": [
        [
            op("aten::mat_mul", 10, 10, 1, 456),
            op("aten::mm", 120, 70, 3, 456),
            op("aten::mm", 220, 20, 4, 456),
            step(
                2,
                100,
                100,
                2,
            ),
            *_launch(_NLL, (15, 5), (60, 20), 334, 1, 456, extra=_sm(0.5, 0.6)),
            *_launch(_NLL, (230, 10), (240, 25), 337, 4, 456, extra=_sm(10.5, 0.3)),
        ]
    ],
    # Three forward calls of a module holding a Linear, and one call of another module.
    "module_hierarchy": [
        [
            _py("test_root", 1, 19367, 1),
            *[
                e
                for k, (outer, inner, mm) in enumerate(
                    [(2, 5, 10), (1000, 1001, 1002), (2000, 2001, 2002)]
                )
                for e in (
                    _py("nn.Module: MyModule", outer, 211, 2 + 2 * k, 1, module=0),
                    _py("nn.Module: Linear", inner, 62, 3 + 2 * k, 2 + 2 * k, module=1),
                    op("aten::addmm", mm, 31 + k, tid=1908),
                )
            ],  # fmt: skip
            _py("nn.Module: Conv2", 3000, 211, 8, 1, module=100),
        ]
    ],
    # A DataPipe graph's iteration: data loading, no operator of the operator view.
    "datapipe": [[op("enumerate(DataPipe)#ShufflerIterDataPipe", 100, 23, 34)]],
    # Two operators that start at one instant, and two that end at one.
    "same_start": [[op("aten::mat_mul", 100, 100, 2, 456), op("aten::mm", 100, 70, 4, 456)]],
    "same_end": [[op("aten::mat_mul", 100, 100, 2, 456), op("aten::mm", 130, 70, 4, 456)]],
    # One runtime call that queued a kernel on each of two streams (one correlation).
    "launch_two_kernels": [
        [
            op("Broadcast", 100, 300, 2, 456),
            runtime("cudaLaunchCooperativeKernelMultiDevice", 130, 20, 335, 2, 456),
            gpu(_NCCL_COPY, 160, 120318, 335, 2, stream=13),
            gpu(_NCCL_COPY, 170, 132800, 335, 2, stream=22),
        ]
    ],
    # One kernel name from two operators with two block shapes.
    "kernel_launch_configs": [
        [
            op("op1", 200, 60, 3, 123, dims=_TO_DIMS),
            op("op2", 340, 70, 4, 456, dims=_NLL_DIMS),
            *_launch("kernel1", (210, 5), (230, 15), 1000, 3, 456, extra=_cfg(16)),
            *_launch("kernel1", (215, 5), (250, 10), 1001, 3, 456, extra=_cfg(16)),
            *_launch("kernel1", (220, 5), (250, 13), 1002, 3, 456, extra=_cfg(64)),
            *_launch("kernel1", (350, 5), (250, 17), 1003, 4, 456, extra=_cfg(64)),
        ]
    ],
    # A tensor-core eligible operator (conv2d) around an ineligible one and an eligible one
    # that launches a tensor-core kernel.
    "tensor_core": [
        [
            op("aten::conv2d", 200, 100, 3, dims=[[]]),
            op("op_no_tc", 205, 10, 4, dims=[[]]),
            op("aten::cudnn_convolution", 215, 10, 5, dims=[[]]),
            *_launch("kernel_no_tc", (205, 5), (210, 10), 1000, 4),
            *_launch(_TC_KERNEL, (215, 5), (220, 15), 1001, 5),
        ]
    ],
    "distributed_nccl": [
        _nccl_rank((0, 75, 16, 16), (100, 20), (130, 161), (160, 75, 162, 1556)),
        _nccl_rank((0, 20, 8, 31), (25, 20), (30, 161), (160, 75, 562, 1058)),
    ],
    "distributed_nccl_steps": [_nccl_steps_rank(0), _nccl_steps_rank(50)],
    "distributed_gloo_gpu": [
        _gloo_rank(**_GLOO_0, compute=(30, 101), on_gpu=True),  # type: ignore[arg-type]
        _gloo_rank(**_GLOO_1, compute=(70, 70), on_gpu=True),  # type: ignore[arg-type]
    ],
    "distributed_gloo_cpu": [
        _gloo_rank(**_GLOO_0, compute=(30, 101), on_gpu=False),  # type: ignore[arg-type]
        _gloo_rank(**_GLOO_1, compute=(70, 70), on_gpu=False),  # type: ignore[arg-type]
    ],
}
