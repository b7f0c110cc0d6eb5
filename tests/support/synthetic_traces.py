"""Synthetic traces that show one cause of lost GPU time each, by construction (for the
doctor's tests), built with tests/support/kineto_builder.py.
"""

from __future__ import annotations

from typing import Optional

from hta_fast import TraceSet
from tests.support.kineto_builder import KinetoBuilder, traceset

STEPS = 5
STEP_US = 10_000.0


def cpu_only() -> KinetoBuilder:
    """Steps of host work and no device at all: a CPU-only trace."""
    b = KinetoBuilder(num_sms=None)
    b.devices = []
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        b.cpu_op("aten::add", t0 + 10, 500)
    return b


# --- one trace per cause ---------------------------------------------------------------
def healthy_builder() -> KinetoBuilder:
    """The CPU runs ahead; each step's 20 big kernels of 499 µs keep the GPU busy back to back
    (1 µs apart); the data loader runs while the GPU works."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        b.dataloader(t0 + 1, 50)
        for j in range(20):
            b.kernel(
                "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
                t0 + 60 + j * 20,
                t0 + 100 + j * 500,
                499,
            )
    return b


def healthy() -> TraceSet:
    return traceset([healthy_builder()])


def parallelism() -> TraceSet:
    """1000 kernels of 8 µs per step, grids of 16 blocks on a 108-SM device, 2 µs apart and
    always queued ahead of the GPU."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(1000):
            b.kernel(
                "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>",
                t0 + j * 5,
                t0 + 100 + j * 10,
                8,
                grid=(16, 1, 1),
                launch_dur=4,
            )
    return traceset([b])


def input_pipeline() -> TraceSet:
    """Each step waits 4 ms in the data loader with the GPU idle, then runs 6 ms of kernels."""
    return traceset([input_pipeline_builder()])


def input_pipeline_builder() -> KinetoBuilder:
    """input_pipeline's one rank, to write as a file."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        b.dataloader(t0, 4000)
        for j in range(10):
            b.kernel(
                "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
                t0 + 4000 + j * 10,
                t0 + 4010 + j * 599,
                598,
            )
    return b


def launch_bound() -> TraceSet:
    """Each kernel (30 µs) is launched from a 100 µs CPU op: the GPU runs it at once and waits
    ~70 µs for the next one."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(100):
            ts = t0 + j * 100
            b.cpu_op("aten::add", ts, 95)
            b.kernel(
                "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>",
                ts + 80,
                ts + 90,
                30,
            )
    return traceset([b])


def memory_sync() -> TraceSet:
    """Each step: 4 ms of kernels, a 1 ms copy to pageable host memory and an .item() that
    blocks the host until the GPU has drained; the host then works 4.8 ms before the next
    step's launches."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(10):
            b.kernel(
                "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
                t0 + j * 10,
                t0 + 200 + j * 400,
                400,
            )
        b.cpu_op("aten::item", t0 + 100, 5110)
        b.cpu_op("aten::_local_scalar_dense", t0 + 101, 5108)
        b.memcpy("DtoH", t0 + 105, t0 + 4200, 1000, 4)
        b.runtime("cudaStreamSynchronize", t0 + 120, 5085)
    return traceset([b])


def exposed_communication(kernel: Optional[str] = None) -> TraceSet:
    """Two identical ranks: 5 ms of compute, then a 4.9 ms all-reduce that nothing overlaps
    (NCCL's, or a kernel of this name: DeepEP, symmetric memory, ...)."""
    builders = []
    for rank in range(2):
        b = KinetoBuilder(rank=rank, world_size=2)
        for s in range(STEPS):
            t0 = s * STEP_US
            b.step(s, t0, STEP_US)
            for j in range(10):
                b.kernel(
                    "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
                    t0 + j * 10,
                    t0 + 100 + j * 500,
                    500,
                )
            if kernel is None:
                b.nccl("allreduce", t0 + 110, t0 + 5100, 4950)
            else:
                b.kernel(kernel, t0 + 110, t0 + 5100, 4950, stream=20)
        builders.append(b)
    return traceset(builders)


def rank_imbalance() -> TraceSet:
    """Rank 0 computes 8 ms per step, rank 1 3 ms; both then all-reduce until 9.95 ms, so
    rank 1 waits 5 ms in the collective every step."""
    builders = []
    for rank, compute_ms in ((0, 8), (1, 3)):
        b = KinetoBuilder(rank=rank, world_size=2)
        n = compute_ms * 2
        for s in range(STEPS):
            t0 = s * STEP_US
            b.step(s, t0, STEP_US)
            for j in range(n):
                b.kernel(
                    "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
                    t0 + j * 10,
                    t0 + 100 + j * 500,
                    500,
                )
            end = 100 + n * 500
            b.nccl("allreduce", t0 + 5 + n * 10, t0 + end, 10_050 - end)
        builders.append(b)
    return traceset(builders)


# A first launch that loads the CUDA module: the host sits in it this long (µs), once.
STALL_US = 8_000.0


def one_off_stall(stall_us: float = STALL_US, at_step: int = 0) -> TraceSet:
    """The healthy trace, except that one step's first cudaLaunchKernel takes 8 ms (or
    stall_us) with the GPU idle (a lazy module load), once: that step is that much longer,
    the others are healthy."""
    b = KinetoBuilder()
    t0 = 0.0
    for s in range(STEPS):
        stall = stall_us if s == at_step else 0.0
        b.step(s, t0, STEP_US + stall)
        b.dataloader(t0 + 1, 50)
        for j in range(20):
            b.kernel(
                "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
                t0 + 60 + j * 20 + (stall if j else 0),
                t0 + stall + 100 + j * 500,
                499,
                launch_dur=stall if stall and j == 0 else 5.0,
            )
        t0 += STEP_US + stall
    return traceset([b])


HELD_FROM_US, HELD_TO_US = 35, 50_000  # the held kernel's launch returns, it starts
HELD_STEP_US = HELD_TO_US + 130 + 100 * 20 + 10  # its last kernel ends 10 µs before


def held_by_unrecorded_builder(blocking: bool = True) -> KinetoBuilder:
    """One step: a 4 µs kernel (a trace's head rule alone misses what follows), then a
    kernel on stream 8, ready from 35 µs, starts at 50 ms with nothing recorded running,
    while the host sits in a cudaStreamSynchronize that returns after it (blocking), or
    launches on (not blocking: the trace cannot tell what held it); then 20 kernels of
    100 µs."""
    b = KinetoBuilder()
    b.step(0, 0, HELD_STEP_US)
    b.kernel("tiny_kernel", 10, 20, 4)
    b.kernel(
        "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
        30,
        HELD_TO_US,
        100,
        stream=8,
    )
    if blocking:
        b.runtime("cudaStreamSynchronize", 100, HELD_TO_US + 10)
        first_launch = HELD_TO_US + 120
    else:
        first_launch = 100  # the host launches on; the GPU idles from 2,110 µs
    for i in range(20):
        b.kernel(
            "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
            first_launch + 6 * i,
            first_launch + 10 + 100 * i,
            100,
        )
    return b


def held_by_unrecorded() -> TraceSet:
    return traceset([held_by_unrecorded_builder()])


POLL_KERNELS, POLL_KERNEL_US, POLL_EVERY_US, POLL_STEP_US = 10, 2_000, 200, 20_300


def polling_host_builder(steps: int = 3, api: str = "cudaEventQuery") -> KinetoBuilder:
    """Each step: 10 kernels of 2 ms launched at once (GPU busy from 100 µs to 20.1 ms), an
    event recorded after them, then the host spins on the event: a 3 µs query every 200 µs
    (DeepEP's dispatch waiting for its kernels), the last one at 20.1 ms seeing it done;
    then three short aten::empty and the next step. The host waits; it does no work."""
    b = KinetoBuilder()
    for s in range(steps):
        t0 = s * POLL_STEP_US
        b.step(s, t0, POLL_STEP_US)
        for j in range(POLL_KERNELS):
            b.kernel(
                "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
                t0 + 10 + 6 * j,
                t0 + 100 + POLL_KERNEL_US * j,
                POLL_KERNEL_US,
            )
        b.event_record(t0 + 80)
        gpu_end = 100 + POLL_KERNEL_US * POLL_KERNELS
        k = 0
        while True:
            at = 100 + POLL_EVERY_US * k
            b.event_query(t0 + at, 3, api)
            if at >= gpu_end:
                break
            k += 1
        for j in range(3):
            b.cpu_op("aten::empty", t0 + gpu_end + 20 + 30 * j, 20)
    return b


SCENARIOS = {
    "unrecorded_gpu_work": held_by_unrecorded,
    "one_off_stall": one_off_stall,
    "parallelism": parallelism,
    "input_pipeline": input_pipeline,
    "launch_bound": launch_bound,
    "memory_sync": memory_sync,
    "exposed_communication": exposed_communication,
    "rank_imbalance": rank_imbalance,
}


# --- other shapes of memory_sync ---------------------------------------------------------
def allocator_churn() -> TraceSet:
    """Each step: 5 ms of kernels, then the host spends 4.9 ms in cudaMalloc/cudaFree calls
    with the GPU idle before it launches the next step's work."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(10):
            b.kernel(
                "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
                t0 + j * 10,
                t0 + 100 + j * 500,
                500,
            )
        for j in range(7):
            b.runtime("cudaMalloc" if j % 2 == 0 else "cudaFree", t0 + 5100 + j * 700, 700)
    return traceset([b])


def fp32_gemm(compute_major: int = 8) -> TraceSet:
    """An A100 (or a GPU of this compute capability) running FP32 GEMMs on the CUDA cores
    back to back: 20 per step of 499 µs."""
    b = KinetoBuilder(compute_major=compute_major)
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(20):
            b.kernel("ampere_sgemm_128x64_nn", t0 + 60 + j * 20, t0 + 100 + j * 500, 499)
    return traceset([b])


def too_little_work() -> TraceSet:
    """Steps of 10 ms whose GPU work is one 20 ns kernel each."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        b.kernel("void tiny_kernel<float>(float*)", t0 + 10, t0 + 20, 0.02)
    return traceset([b])


def graph_replayed_step() -> TraceSet:
    """Each 10 ms step: 20 eager kernels of 20 µs, each launched from a 150 µs op (the GPU
    waits ~130 µs for each), then one graph launch replaying 10 kernels of 500 µs; the host
    then records nothing until the next step (1.9 ms)."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(20):
            ts = t0 + j * 150
            b.cpu_op("aten::index_put_", ts, 145)
            b.kernel("void index_put_kernel<float>(float*)", ts + 100, ts + 110, 20)
        b.graph_launch(
            t0 + 3100,
            [("void decoder_layer<bf16>(bf16*)", t0 + 3120 + k * 500, 500) for k in range(10)],
        )
    return traceset([b])
