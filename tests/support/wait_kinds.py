"""Traces built to show each kind of wait, with the answers known by construction: what
owns the time the GPU did not compute, the doctor's first cause, and what the matching
what-if saves (tests/model/test_wait_kinds.py checks the critical path, the owners, the doctor
and the what-if against them)."""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from tests.support.kineto_builder import KinetoBuilder
from tests.support.synthetic_traces import (
    POLL_KERNEL_US,
    held_by_unrecorded_builder,
    polling_host_builder,
)

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


def unrecorded_at_head() -> KinetoBuilder:
    """The hold at the trace's head: the first kernel, ready from 30 µs, starts at 50 ms with
    nothing recorded running; the host waits for it in a stream sync; then 20 kernels."""
    b = KinetoBuilder()
    b.step(0, 0, 52_200)
    b.kernel(GEMM, 10, 50_000, 100)
    b.runtime("cudaStreamSynchronize", 100, 50_010)
    for i in range(20):
        b.kernel(GEMM, 50_120 + 6 * i, 50_130 + 100 * i, 100)
    return b


DDP_STEPS, DDP_STEP_US, DDP_COMPUTE_US, DDP_ALLREDUCE_US, PROFILER_STOP_US = (
    10,
    20_000,
    8_000,
    11_000,
    37_900,
)


def ddp_device_sync_at_end(steps: int = DDP_STEPS) -> KinetoBuilder:
    """DDP-like steps of 20 ms: 8 ms of compute on stream 7, then an 11 ms all-reduce on
    stream 20 that the compute stream idles behind (the host waits for it in a stream sync);
    the last step ends in a device synchronize (the profiler stopping) that returns 37.9 ms
    after the all-reduce: GPU work the trace did not record."""
    b = KinetoBuilder(world_size=1)
    for s in range(steps):
        t0 = s * DDP_STEP_US
        last = s == steps - 1
        b.step(s, t0, DDP_STEP_US + (PROFILER_STOP_US if last else 0))
        for j in range(16):
            b.kernel(GEMM, t0 + 10 + 20 * j, t0 + 400 + 500 * j, 500)
        b.nccl("allreduce", t0 + 400, t0 + 8_400, DDP_ALLREDUCE_US)
        if last:
            b.runtime("cudaDeviceSynchronize", t0 + 500, 18_900 + PROFILER_STOP_US)
        else:
            b.runtime("cudaStreamSynchronize", t0 + 500, 19_000)
    return b


DECODE_STEP_US, DECODE_GRAPH_US = 5_000, 4_700


def graph_replay_decode(steps: int = 5) -> KinetoBuilder:
    """Decode steps of 5 ms run as CUDA graph replays: 200 µs of eager sampling kernels (4 of
    50 µs, each launched from a 60 µs op), then one graph launch replaying 47 kernels of
    100 µs; the host waits for the tokens in a stream sync."""
    b = KinetoBuilder()
    for s in range(steps):
        t0 = s * DECODE_STEP_US
        b.step(s, t0, DECODE_STEP_US)
        b.graph_launch(t0 + 5, [(GEMM, t0 + 20 + 100 * j, 100) for j in range(47)], launch_dur=10)
        for j in range(4):
            at = t0 + 20 + DECODE_GRAPH_US + 60 * j
            b.cpu_op("aten::argmax", t0 + 20 + 60 * j, 55)
            b.kernel("void sample_kernel<float>(float*)", t0 + 25 + 60 * j, at, 50)
        b.runtime("cudaStreamSynchronize", t0 + 300, DECODE_GRAPH_US + 200 - 280 + 10)
    return b


LATE, LATE_HOST_US, LATE_DATA_US = 3, 4_000, 200
LATE_STEP_US = 100 + 3_000 + 1_000 + LATE_DATA_US + 20


def late_rank(steps: int = 5, ranks: int = 4) -> list[KinetoBuilder]:
    """A 4-rank job, steps back to back: each rank runs 3 ms of kernels, then an all-reduce
    (200 µs of data) and waits for it in a stream sync; rank 3's host first spends 4 ms in
    host_preprocess, so it launches its all-reduce last and the others wait ~1 ms in theirs."""
    builders = []
    for rank in range(ranks):
        b = KinetoBuilder(rank=rank, world_size=ranks)
        for s in range(steps):
            t0 = s * LATE_STEP_US
            b.step(s, t0, LATE_STEP_US)
            for j in range(6):
                b.kernel(GEMM, t0 + 1 + 6 * j, t0 + 100 + 500 * j, 500)
            if rank == LATE:
                b.cpu_op("host_preprocess", t0 + 40, LATE_HOST_US)
                launch = t0 + 40 + LATE_HOST_US + 5
            else:
                launch = t0 + 40
            arrive = max(launch + 10, t0 + 3_100)
            end = t0 + 40 + LATE_HOST_US + 15 + LATE_DATA_US
            b.nccl("allreduce", launch, arrive, end - arrive)
            b.runtime("cudaStreamSynchronize", launch + 6, end + 5 - (launch + 6))
        builders.append(b)
    return builders


# --- one-off stalls of every kind -----------------------------------------------------
ONE_OFF_STEPS, ONE_OFF_STEP_US = 5, 10_000


def _with_first_call(outer: str, inner: str, first_us: float, usual_us: float, cat: str):
    """Five steps of 20 kernels; each step opens with `outer` (holding `inner`) before its
    launches: the first step's takes first_us, the others usual_us, the GPU idle meanwhile."""
    b = KinetoBuilder()
    t0 = 0.0
    for s in range(ONE_OFF_STEPS):
        call = first_us if s == 0 else usual_us
        b.step(s, t0, ONE_OFF_STEP_US + call)
        b.cpu_op(outer, t0 + 1, call + 2, cat=cat)
        if inner:
            b.cpu_op(inner, t0 + 2, call)
        for j in range(20):
            b.kernel(GEMM, t0 + call + 10 + j * 20, t0 + call + 100 + j * 480, 479)
        t0 += ONE_OFF_STEP_US + call
    return b


def _one_time_sync():
    """A graph-capture warm-up: one 115 ms hipDeviceSynchronize with the GPU idle, the
    trace's other device syncs ~20 µs."""
    b = KinetoBuilder()
    t0 = 0.0
    for s in range(ONE_OFF_STEPS):
        call = 115_000 if s == 0 else 20
        b.step(s, t0, ONE_OFF_STEP_US + call)
        b.runtime("hipDeviceSynchronize", t0 + 1, call)
        for j in range(20):
            b.kernel(GEMM, t0 + call + 10 + j * 20, t0 + call + 100 + j * 480, 479)
        t0 += ONE_OFF_STEP_US + call
    return b, 115_000


ONE_OFFS = {
    # the first Torch-Compiled Region compiles (Inductor) for 400 ms
    "compile": lambda: (
        _with_first_call(
            "Torch-Compiled Region", "compile_fx_inner", 400_000, 50, "user_annotation"
        ),
        400_000,
    ),
    # a TorchScript function's first call profiles and fuses (296 ms)
    "fuser": lambda: (
        _with_first_call("MyModel.forward", "prim::TensorExprGroup", 296_000, 100, "cpu_op"),
        296_000,
    ),
    # the first aten::linear holds lazy CUDA initialisation (1.5 s)
    "lazy_init": lambda: (
        _with_first_call("aten::linear", "", 1_500_000, 60, "cpu_op"),
        1_500_000,
    ),
    "one_time_sync": _one_time_sync,
}


class Kind(NamedTuple):
    """One kind of wait and its answers by construction.

    top_owner  the owner of most of the time the GPU did not compute (model.path.owners),
               and the critical path's largest category besides GPU compute (cross_rank:
               the step's path across ranks starts on the rank waited for)
    cause      the doctor's first finding, above threshold (None: none is)
    edits      the what-if that removes the wait ({}: the doctor's edit for `cause`)
    saved_ns   what it saves per step, within 10 % (None: not removable; the doctor says
               so, and no launch or sync edit makes the step shorter than the wait)
    """

    builders: Callable[[], list[KinetoBuilder]]
    top_owner: str
    cause: Optional[str]
    edits: dict
    saved_ns: Optional[float]


def _one(build: Callable[[], KinetoBuilder]) -> Callable[[], list[KinetoBuilder]]:
    return lambda: [build()]


KINDS = {
    "unrecorded_mid_trace": Kind(
        _one(held_by_unrecorded_builder), "gpu_unrecorded_work", "unrecorded_gpu_work", {}, None
    ),
    # the doctor leaves a head hold out of the step, and says so in a note
    "unrecorded_at_head": Kind(_one(unrecorded_at_head), "gpu_unrecorded_work", None, {}, None),
    "polling_host": Kind(
        _one(polling_host_builder),
        "cpu_bound",  # the host's short ops between steps; the polls are waits
        None,
        {"name": {"gemm": 0.5}},
        POLL_KERNEL_US * 1000 * 10 / 2,
    ),
    # the last step's 37.9 ms tail is unrecorded work, not host time; it ranks below the
    # exposed all-reduce (3.8 ms a step over 10 steps against 11 ms)
    "device_sync_at_end": Kind(
        _one(ddp_device_sync_at_end),
        "gpu_communication_bound",
        "exposed_communication",
        {"kernel_class": {"COMM": 0}},
        DDP_ALLREDUCE_US * 1000,
    ),
    "late_rank": Kind(late_rank, "cross_rank", "rank_imbalance", {}, 955_000),
    **{
        f"one_off_{name}": Kind(
            _one(lambda build=build: build()[0]),
            "one_off_stall",
            "one_off_stall",
            {},
            build()[1] * 1000 / ONE_OFF_STEPS,
        )
        for name, build in ONE_OFFS.items()
    },
    "graph_replay_decode": Kind(
        _one(graph_replay_decode), "cpu_bound", None, {"name": {"gemm": 0.5}}, 47 * 50_000
    ),
}
