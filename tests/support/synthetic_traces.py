"""A small builder of Kineto (PyTorch profiler) Chrome-trace JSON, and synthetic traces that
show one cause of lost GPU time each, by construction (for the doctor's tests).

The events are the ones a real trace has (see ../shared/FORMAT.md): ProfilerStep#N
user annotations, CPU ops, cudaLaunchKernel / cudaMemcpyAsync runtime calls with a
correlation id and an ac2g flow pair to their GPU event, kernels with stream, grid, block,
occupancy args, memcpy events with bytes, NCCL kernels with collective args, data-loader
annotations, deviceProperties and distributedInfo. Times are given in microseconds from
the start of the trace.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

import hta_fast
from hta_fast import TraceSet

BASE_US = 1_700_000_000_000_000  # an epoch time in µs, as older traces write it
CPU_PID, CPU_TID = 4242, 4242
BIG_GRID = (1024, 1, 1)


class KinetoBuilder:
    """Collects events of one rank; `to_bytes()` writes the trace file's JSON."""

    def __init__(
        self,
        rank: int = 0,
        world_size: int = 1,
        num_sms: Optional[int] = 108,
        compute_major: int = 8,
    ):
        self.rank, self.world_size = rank, world_size
        self.events: list[dict] = []
        self.correlation = 1000
        self.external = 1
        device = {
            "id": 0,
            "name": "NVIDIA A100-SXM4-80GB",
            "totalGlobalMem": 85_000_000_000,
            "computeMajor": compute_major,
            "computeMinor": 0,
            "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": 2048,
            "warpSize": 32,
        }
        if num_sms is not None:
            device["numSms"] = num_sms
        self.devices = [device]

    # --- CPU side --------------------------------------------------------------------
    def _x(self, cat: str, name: str, ts: float, dur: float, pid, tid, args: dict) -> dict:
        ev = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": pid,
            "tid": tid,
            "ts": round(BASE_US + ts, 3),
            "dur": round(dur, 3),
            "args": args,
        }
        self.events.append(ev)
        return ev

    def step(self, n: int, ts: float, dur: float) -> None:
        self._x(
            "user_annotation",
            f"ProfilerStep#{n}",
            ts,
            dur,
            CPU_PID,
            CPU_TID,
            {"External id": self._ext()},
        )

    def cpu_op(self, name: str, ts: float, dur: float, cat: str = "cpu_op") -> None:
        self._x(cat, name, ts, dur, CPU_PID, CPU_TID, {"External id": self._ext()})

    def dataloader(self, ts: float, dur: float) -> None:
        self.cpu_op(
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
            ts,
            dur,
            cat="user_annotation",
        )

    def runtime(self, name: str, ts: float, dur: float) -> None:
        """A runtime call that queues no GPU work (cudaStreamSynchronize, cudaMalloc, ...)."""
        self._x("cuda_runtime", name, ts, dur, CPU_PID, CPU_TID, {"cbid": 131})

    def event_record(self, ts: float) -> int:
        """cudaEventRecord on stream 7 at ts; returns its correlation id (what a sync waits on)."""
        record = self.correlation
        self.correlation += 1
        self._x(
            "cuda_runtime",
            "cudaEventRecord",
            ts,
            3,
            CPU_PID,
            CPU_TID,
            {"cbid": 135, "correlation": record},
        )
        return record

    def event_synchronize(self, start: float, end: float, record: int) -> None:
        """cudaEventSynchronize from start to end on the event `record`, with its cuda_sync row."""
        corr = self.correlation
        self.correlation += 1
        self._x(
            "cuda_runtime",
            "cudaEventSynchronize",
            start,
            end - start,
            CPU_PID,
            CPU_TID,
            {"cbid": 137, "correlation": corr},
        )
        self._x(
            "cuda_sync",
            "Event Sync",
            start + 1,
            end - start - 1,
            0,
            -1,
            {
                "cuda_sync_kind": "Event Sync",
                "wait_on_stream": 7,
                "stream": -1,
                "wait_on_cuda_event_record_corr_id": record,
                "correlation": corr,
                "device": 0,
                "context": 1,
            },
        )

    def event_query(self, ts: float, dur: float, api: str = "cudaEventQuery") -> None:
        """A query that does not block (cudaEventQuery, cudaStreamQuery): CUPTI records the
        call with its correlation and no cuda_sync row."""
        corr = self.correlation
        self.correlation += 1
        self._x("cuda_runtime", api, ts, dur, CPU_PID, CPU_TID, {"cbid": 136, "correlation": corr})

    # --- launches and GPU work -------------------------------------------------------
    def _launch_call(self, api: str, cpu_ts: float, dur: float, cbid: int = 211) -> tuple[int, int]:
        """The runtime call of a launch, under a new correlation and External id (returned)."""
        corr, ext = self.correlation, self._ext()
        self.correlation += 1
        self._x(
            "cuda_runtime",
            api,
            cpu_ts,
            dur,
            CPU_PID,
            CPU_TID,
            {"External id": ext, "cbid": cbid, "correlation": corr},
        )
        return corr, ext

    def _launch(
        self,
        api: str,
        cpu_ts: float,
        launch_dur: float,
        gpu_cat: str,
        name: str,
        gpu_ts: float,
        dur: float,
        stream: int,
        args: dict,
    ) -> None:
        corr, ext = self._launch_call(api, cpu_ts, launch_dur)
        gpu_args = {
            "External id": ext,
            "device": 0,
            "context": 1,
            "stream": stream,
            "correlation": corr,
        }
        gpu_args.update(args)
        self._x(gpu_cat, name, gpu_ts, dur, 0, stream, gpu_args)
        for ph, ts, pid, tid in (("s", cpu_ts, CPU_PID, CPU_TID), ("f", gpu_ts, 0, stream)):
            flow = {
                "ph": ph,
                "id": corr,
                "pid": pid,
                "tid": tid,
                "ts": round(BASE_US + ts, 3),
                "cat": "ac2g",
                "name": "ac2g",
            }
            if ph == "f":
                flow["bp"] = "e"
            self.events.append(flow)

    def kernel(
        self,
        name: str,
        cpu_ts: float,
        gpu_ts: float,
        dur: float,
        *,
        stream: int = 7,
        grid: Sequence[int] = BIG_GRID,
        block: Sequence[int] = (256, 1, 1),
        occupancy: float = 60.0,
        launch_dur: float = 5.0,
    ) -> None:
        self._launch(
            "cudaLaunchKernel",
            cpu_ts,
            launch_dur,
            "kernel",
            name,
            gpu_ts,
            dur,
            stream,
            {
                "registers per thread": 32,
                "shared memory": 0,
                "blocks per SM": 8.0,
                "warps per SM": 64.0,
                "grid": list(grid),
                "block": list(block),
                "est. achieved occupancy %": occupancy,
                "queued": 0,
            },
        )

    def memcpy(
        self,
        direction: str,
        cpu_ts: float,
        gpu_ts: float,
        dur: float,
        nbytes: int,
        *,
        stream: int = 7,
        pageable: bool = True,
        launch_dur: float = 5.0,
    ) -> None:
        host = "Pageable" if pageable else "Pinned"
        name = (
            f"Memcpy DtoH (Device -> {host})"
            if direction == "DtoH"
            else f"Memcpy HtoD ({host} -> Device)"
        )
        self._launch(
            "cudaMemcpyAsync",
            cpu_ts,
            launch_dur,
            "gpu_memcpy",
            name,
            gpu_ts,
            dur,
            stream,
            {"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / (dur * 1e3)},
        )

    def nccl(
        self,
        collective: str,
        cpu_ts: float,
        gpu_ts: float,
        dur: float,
        *,
        stream: int = 20,
        nelems: int = 50_000_000,
        dtype: str = "Float",
        args: Optional[dict] = None,
    ) -> None:
        """A NCCL kernel and its launch; `args`: more collective arguments (Seq, Comms Id)."""
        kname = {
            "allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
        }
        self._launch(
            "cudaLaunchKernel",
            cpu_ts,
            5.0,
            "kernel",
            kname.get(collective, f"ncclDevKernel_{collective}"),
            gpu_ts,
            dur,
            stream,
            {
                "Collective name": collective,
                "In msg nelems": nelems,
                "Out msg nelems": nelems,
                "dtype": dtype,
                "Group size": self.world_size,
                "Process Group Name": "0",
                "Process Group Ranks": list(range(self.world_size)),
                "grid": [32, 1, 1],
                "block": [640, 1, 1],
                **(args or {}),
            },
        )

    def memory(
        self,
        ts: float,
        size: int,
        addr: int,
        allocated: int,
        reserved: int = 1 << 30,
        device_type: int = 1,
        device_id: int = 0,
        tid: int = CPU_TID,
    ) -> None:
        """An allocator event ([memory], ph i): size > 0 allocates, < 0 frees; allocated is
        the device's Total Allocated after it."""
        self.events.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "s": "t",
                "name": "[memory]",
                "pid": CPU_PID,
                "tid": tid,
                "ts": round(BASE_US + ts, 3),
                "args": {
                    "Total Reserved": reserved,
                    "Total Allocated": allocated,
                    "Bytes": size,
                    "Device Id": device_id,
                    "Device Type": device_type,
                    "Addr": addr,
                },
            }
        )

    # --- graphs and Python frames ------------------------------------------------------
    def python_function(self, name: str, ts: float, dur: float) -> None:
        """A Python frame as the profiler's with_stack records it (cat python_function)."""
        self._x("python_function", name, ts, dur, CPU_PID, CPU_TID, {"Python id": self._ext()})

    def captured_launch(
        self,
        cpu_ts: float,
        api: str = "cudaLaunchKernel",
        dur: float = 5.0,
        kernel: Optional[str] = None,
    ) -> int:
        """A launch made while a stream is being captured into a graph: the runtime call
        with its correlation id and no GPU event (captured work runs only when replayed);
        `kernel` names the launched kernel in its args, as ROCm's launch calls do.
        Returns the correlation id."""
        corr = self._launch_call(api, cpu_ts, dur)[0]
        if kernel is not None:
            self.events[-1]["args"]["kernel"] = kernel
        return corr

    def graph_launch(
        self,
        cpu_ts: float,
        kernels: Sequence[tuple[str, float, float]],
        *,
        api: str = "cudaGraphLaunch",
        stream: int = 7,
        launch_dur: float = 10.0,
    ) -> int:
        """One graph replay: the launch call and its kernels (name, gpu_ts, dur), all under
        the launch's one correlation id as the profiler records them; an item of four
        (name, gpu_ts, dur, cat) is of that category ("gpu_memcpy": a copy). Returns the id."""
        corr, ext = self._launch_call(api, cpu_ts, launch_dur, cbid=311)
        for name, gpu_ts, dur, *cat in kernels:
            self._x(
                cat[0] if cat else "kernel",
                name,
                gpu_ts,
                dur,
                0,
                stream,
                {
                    "External id": ext,
                    "device": 0,
                    "context": 1,
                    "stream": stream,
                    "correlation": corr,
                    "grid": list(BIG_GRID),
                    "block": [256, 1, 1],
                },
            )
        return corr

    def _ext(self) -> int:
        self.external += 1
        return self.external

    def to_bytes(self) -> bytes:
        doc = {
            "schemaVersion": 1,
            "deviceProperties": self.devices,
            "distributedInfo": {
                "backend": "nccl",
                "rank": self.rank,
                "world_size": self.world_size,
            },
            "traceEvents": self.events,
        }
        return json.dumps(doc).encode()

    def load(self) -> hta_fast.Trace:
        return hta_fast.load(self.to_bytes())

    # --- inference phases (added last: the methods above are unchanged) ---------------
    def phase_pass(
        self,
        name: str,
        ts: float,
        dur: float,
        kernels: Sequence[tuple[str, float, float]],
        *,
        cat: str = "user_annotation",
    ) -> None:
        """An inference pass as a serving stack marks it: an annotation (or, with cat
        "python_function", a Python frame) named `name` over [ts, ts + dur], and inside it
        one launch per kernel (name, gpu_ts, dur), the launches 20 µs apart from ts + 10."""
        if cat == "python_function":
            self.python_function(name, ts, dur)
        else:
            self.cpu_op(name, ts, dur, cat=cat)
        for j, (kernel, gpu_ts, kernel_dur) in enumerate(kernels):
            self.kernel(kernel, ts + 10 + 20 * j, gpu_ts, kernel_dur)

    # --- graph captures (kept last: methods above are shared) ----------------------------
    def begin_capture(self, ts: float, api: str = "cudaStreamBeginCapture") -> None:
        """The runtime call that starts capturing a stream into a graph."""
        self._x("cuda_runtime", api, ts, 2.0, CPU_PID, CPU_TID, {"cbid": 317})

    def end_capture(self, ts: float, api: str = "cudaStreamEndCapture") -> None:
        """The runtime call that ends a stream's capture (and returns the graph)."""
        self._x("cuda_runtime", api, ts, 2.0, CPU_PID, CPU_TID, {"cbid": 318})


def traceset(builders: Sequence[KinetoBuilder]) -> TraceSet:
    return TraceSet({b.rank: b.load() for b in builders})


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
