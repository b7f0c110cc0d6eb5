"""A small builder of Kineto (PyTorch profiler) Chrome-trace JSON.

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
