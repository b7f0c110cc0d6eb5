"""Synthetic traces with Kineto's hardware counters (CUPTI PM sampling) and cuda_event
rows, whose measured SM-active share and computed busy share are known by construction.

The shapes follow libkineto at 114171df (github.com/pytorch/kineto):
* a counter sample: src/output_json.cpp 679-701 (ChromeTraceLogger::handleCounterEvent, the
  HARDWARE_COUNTERS branch) writes one event per metric of a sample through
  writeCounterEvent (294-316): {"ph": "C", "cat": "hardware_counters", "name": <metric>,
  "pid": "GPU <device> Counters" (a string), "tid": <resource, 0>, "ts": <sample start, us>,
  "args": {"": <value>}} (the empty key: ArgsBuilder::addRaw("", value), 161-164). The
  metric names are CUPTI's, as configured (src/Config.cpp 350-353, CUPTI_PM_SAMPLING_METRICS);
  src/CuptiPMSamplingProfiler.cpp 107-140 stamps each sample with its start and device, and
  samples every 1 ms (31, kSamplingInterval).
* a cuda_event row: src/CuptiActivity.h 222-237 (the device timestamp, duration 1 ns) and
  375-405 (name "cudaEvent", pid the device, tid the stream, args event_id, stream,
  correlation, device, context) written by src/output_json.cpp 837-960 (handleActivity:
  cat "cuda_event" from include/ActivityType.h 98, "External id" first).

The trace: STEPS steps of STEP_US on one GPU; each step runs KERNELS kernels of KERNEL_US, one
per millisecond, on stream 7, so the GPU is busy BUSY_PCT % of every step (the doctor's
utilization). A kernel fills `fill` of the SMs, so each 1 ms sample reads fill x BUSY_PCT %
SM active; the measured share over the steps is that value.
"""

from __future__ import annotations

from typing import Optional, Sequence

from tests.support.kineto_builder import BASE_US, KinetoBuilder

STEPS = 5
STEP_US = 10_000.0
KERNELS = 10  # per step, one per millisecond
KERNEL_US = 400.0
BUSY_PCT = 100.0 * KERNELS * KERNEL_US / STEP_US  # 40 %
SAMPLE_US = 1_000.0  # Kineto's PM sampling interval
SM_ACTIVE = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
DRAM = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = 55.0


def counter_sample(b: KinetoBuilder, ts: float, values: dict[str, float], device: int = 0) -> None:
    """One PM sample at ts (µs): a counter event per metric on "GPU <device> Counters"."""
    for name, value in values.items():
        b.events.append(
            {
                "ph": "C",
                "cat": "hardware_counters",
                "name": name,
                "pid": f"GPU {device} Counters",
                "tid": 0,
                "ts": round(BASE_US + ts, 3),
                "args": {"": value},
            }
        )


def cuda_event(b: KinetoBuilder, cpu_ts: float, gpu_ts: float, event_id: int) -> None:
    """cudaEventRecord on the host and the cuda_event row CUPTI writes for it on stream 7."""
    corr, ext = b.correlation, b._ext()
    b.correlation += 1
    b._x(
        "cuda_runtime",
        "cudaEventRecord",
        cpu_ts,
        3,
        4242,
        4242,
        {"External id": ext, "cbid": 135, "correlation": corr},
    )
    b._x(
        "cuda_event",
        "cudaEvent",
        gpu_ts,
        0.001,
        0,
        7,
        {
            "External id": ext,
            "event_id": event_id,
            "stream": 7,
            "correlation": corr,
            "device": 0,
            "context": 1,
        },
    )


def gpu_steps(with_cuda_events: bool = True) -> KinetoBuilder:
    """The steps and their kernels (and, by default, a cuda_event after each step's work)."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(KERNELS):
            b.kernel(
                "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn",
                t0 + 10 + 20 * j,
                t0 + 100 + j * 1000,
                KERNEL_US,
            )
        if with_cuda_events:
            cuda_event(b, t0 + 300, t0 + 9600, s + 1)
    return b


def with_counters(
    fill: float = 1.0,
    samples: Optional[Sequence[tuple[float, float]]] = None,
    metric: str = SM_ACTIVE,
    name: Optional[str] = None,
) -> KinetoBuilder:
    """gpu_steps with a counter track on GPU 0: by default a sample every SAMPLE_US from
    one before the first step (outside the window, its value 99 never counts) to the last
    step's end, each reading fill x BUSY_PCT % SM active and DRAM_PCT % DRAM throughput;
    `samples` gives (ts µs, SM active %) instead. `name` renames the SM metric (a name
    the analysis does not know, or text to escape)."""
    b = gpu_steps()
    if samples is None:
        n = int(STEPS * STEP_US / SAMPLE_US)
        samples = [(-SAMPLE_US, 99.0)] + [(i * SAMPLE_US, fill * BUSY_PCT) for i in range(n + 1)]
    for ts, pct in samples:
        counter_sample(b, ts, {name or metric: pct, DRAM: DRAM_PCT})
    return b


# Irregular samples: 20 % for 10 ms, 60 % for 30 ms, 40 % for the last 10 ms; the one at the
# window's end holds past it. Time-weighted: (20x10 + 60x30 + 40x10) / 50 = 48 %; the
# samples' plain mean would be 30 %.
IRREGULAR = [(0.0, 20.0), (10_000.0, 60.0), (40_000.0, 40.0), (50_000.0, 0.0)]
IRREGULAR_PCT = 48.0
