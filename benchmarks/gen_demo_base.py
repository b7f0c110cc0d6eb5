#!/usr/bin/env python3
"""Write the small base trace that `hta-fast demo` builds from where the project's sample
trace (../shared/traces) is not there, as in an installed wheel:
hta_fast/cli/commands/demo_base.json.gz. The program is made up here, not recorded: a training step on
one GPU of a 4-rank data-parallel job, in Kineto's Chrome-trace form (the form
hta_fast.synth repeats, with each rank's clock and, for the demo, one straggler).

    python benchmarks/gen_demo_base.py [--out hta_fast/cli/commands/demo_base.json.gz]

One step: the host reads a batch, then runs forward operators (one kernel each), backward
operators (a larger kernel each, an NCCL all-reduce of the gradients after every tenth,
overlapping the rest on its own stream), the optimizer, and reads the loss back (a copy to
pageable memory, which returns when the GPU has done everything before it: where a host
waits for its GPU, and for the collectives that wait for a straggler). The GPU is busy most
of the step, so a rank whose compute is slower makes the others wait in their all-reduces.

The output is the same bytes on every run (fixed seed, gzip without a time stamp).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "hta_fast" / "cli" / "commands" / "demo_base.json.gz"
EPOCH_US = 1_700_000_000_000_000  # absolute microseconds, as older Kineto traces write them
HOST_PID, HOST_TID = 1234, 1234
GPU_PID, COMPUTE_STREAM, COMM_STREAM = 0, 7, 20
STEPS = 2
FORWARD, BACKWARD, OPTIMIZER = 30, 30, 10
GRAD_BUCKET = 10  # backward operators per all-reduce
GRAD_BUCKET_BYTES = 25 * 2**20
SEED = 7

DEVICE = {
    "id": 0,
    "name": "NVIDIA A100-SXM4-80GB",
    "totalGlobalMem": 85_100_000_000,
    "computeMajor": 8,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 108,
}
FORWARD_OPS = (
    ("aten::linear", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"),
    ("aten::layer_norm", "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel"),
    ("aten::gelu", "void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>"),
)
BACKWARD_OPS = (
    ("LinearBackward0", "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_nn"),
    ("NativeLayerNormBackward0", "void at::native::layer_norm_grad_input_kernel"),
    ("GeluBackward0", "void at::native::vectorized_elementwise_kernel<4, GeluBackward>"),
)
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


class Program:
    """Events of one rank's steps, host and GPU, with the links Kineto writes."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.rng = random.Random(SEED)
        self.correlation = 100
        self.external = 1
        self.host = 0  # µs from the start
        self.stream_free = {COMPUTE_STREAM: 0, COMM_STREAM: 0}

    def _x(self, cat: str, name: str, ts: int, dur: int, pid: int, tid: int, args: dict) -> None:
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": pid,
                "tid": tid,
                "ts": EPOCH_US + ts,
                "dur": dur,
                "args": args,
            }
        )

    def _ext(self) -> int:
        self.external += 1
        return self.external

    def annotation(self, name: str, ts: int, dur: int) -> None:
        self._x("user_annotation", name, ts, dur, HOST_PID, HOST_TID, {"External id": self._ext()})

    def launch(
        self,
        op: str,
        kernel: str,
        gpu_us: int,
        *,
        stream: int = COMPUTE_STREAM,
        after: int = 0,
        cat: str = "kernel",
        api: str = "cudaLaunchKernel",
        extra: dict | None = None,
        host_us: int = 0,
    ) -> int:
        """An operator at the host's time that launches one GPU event; returns its end."""
        op_us = host_us or self.rng.randint(18, 30)
        start = self.host
        ext = self._ext()
        self._x("cpu_op", op, start, op_us, HOST_PID, HOST_TID, {"External id": ext})
        call_ts = start + 4
        corr = self.correlation
        self.correlation += 1
        gpu_ts = max(call_ts + 6, self.stream_free[stream] + 2, after)
        gpu_end = gpu_ts + gpu_us
        call_dur = 6 if cat == "kernel" else gpu_end + 3 - call_ts  # a pageable copy waits
        args = {"External id": ext, "cbid": 211, "correlation": corr}
        self._x("cuda_runtime", api, call_ts, call_dur, HOST_PID, HOST_TID, args)
        gpu_args: dict[str, Any] = {
            "External id": ext,
            "device": 0,
            "context": 1,
            "stream": stream,
            "correlation": corr,
        }
        if cat == "kernel":
            gpu_args.update(
                {
                    "registers per thread": 64,
                    "shared memory": 16384,
                    "grid": [432, 1, 1],
                    "block": [256, 1, 1],
                    "est. achieved occupancy %": 48,
                }
            )
        gpu_args.update(extra or {})
        self._x(cat, kernel, gpu_ts, gpu_us, GPU_PID, stream, gpu_args)
        for ph, ts, pid, tid in (
            ("s", call_ts, HOST_PID, HOST_TID),
            ("f", gpu_ts, GPU_PID, stream),
        ):
            flow = {"ph": ph, "id": corr, "pid": pid, "tid": tid, "ts": EPOCH_US + ts}
            flow.update({"cat": "ac2g", "name": "ac2g"})
            if ph == "f":
                flow["bp"] = "e"
            self.events.append(flow)
        self.stream_free[stream] = gpu_end
        self.host = max(start + op_us, call_ts + call_dur) + self.rng.randint(2, 6)
        return gpu_end

    def step(self, n: int) -> None:
        first = len(self.events)
        start = self.host
        loader = self.rng.randint(80, 120)
        self.annotation(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", start, loader
        )
        self.host += loader + 5
        for i in range(FORWARD):
            op, kernel = FORWARD_OPS[i % len(FORWARD_OPS)]
            self.launch(op, kernel, self.rng.randint(50, 90))
        buckets = 0
        for i in range(BACKWARD):
            op, kernel = BACKWARD_OPS[i % len(BACKWARD_OPS)]
            done = self.launch(op, kernel, self.rng.randint(90, 150))
            if (i + 1) % GRAD_BUCKET == 0:
                self.launch(
                    "nccl:all_reduce",
                    ALL_REDUCE,
                    self.rng.randint(280, 340),
                    stream=COMM_STREAM,
                    after=done,
                    extra={
                        "Collective name": "allreduce",
                        "In msg nelems": GRAD_BUCKET_BYTES // 2,
                        "Out msg nelems": GRAD_BUCKET_BYTES // 2,
                        "dtype": "BFloat16",
                        "Group size": 4,
                    },
                )
                buckets += 1
        for _ in range(OPTIMIZER):
            self.launch(
                "Optimizer.step#AdamW.step",
                "void at::native::(anonymous namespace)::multi_tensor_apply_kernel",
                self.rng.randint(25, 40),
                after=self.stream_free[COMM_STREAM],  # the optimizer needs the reduced grads
            )
        self.launch(
            "aten::item",
            "Memcpy DtoH (Device -> Pageable)",
            2,
            cat="gpu_memcpy",
            api="cudaMemcpyAsync",
            extra={"bytes": 4, "memory bandwidth (GB/s)": 0.002},
            after=max(self.stream_free.values()),
        )
        self.host += 10
        step = {
            "ph": "X",
            "cat": "user_annotation",
            "name": f"ProfilerStep#{n}",
            "pid": HOST_PID,
            "tid": HOST_TID,
            "ts": EPOCH_US + start,
            "dur": self.host - start,
            "args": {"External id": self._ext()},
        }
        self.events.insert(first, step)


def trace() -> dict[str, Any]:
    p = Program()
    for n in range(STEPS):
        p.step(n)
    names = [
        {"ph": "M", "name": "process_name", "pid": HOST_PID, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "pid": GPU_PID, "tid": 0, "args": {"name": "GPU 0"}},
        {
            "ph": "M",
            "name": "thread_name",
            "pid": HOST_PID,
            "tid": HOST_TID,
            "args": {"name": "main"},
        },
    ] + [
        {
            "ph": "M",
            "name": "thread_name",
            "pid": GPU_PID,
            "tid": s,
            "args": {"name": f"stream {s}"},
        }
        for s in (COMPUTE_STREAM, COMM_STREAM)
    ]
    return {
        "schemaVersion": 1,
        "deviceProperties": [DEVICE],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 4},
        "traceEvents": names + p.events,
        "traceName": "hta_fast demo base (a made-up program)",
        "displayTimeUnit": "ms",
    }


def write(out: Path) -> int:
    """Writes the base to out (gzip); returns the bytes of its JSON."""
    text = json.dumps(trace(), separators=(",", ":")).encode()
    out.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    return len(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    size = write(args.out)
    print(f"{args.out}: {size / 1e3:.0f} KB of JSON, {args.out.stat().st_size / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
