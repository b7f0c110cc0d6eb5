"""The doctor's thresholds: when a cause counts as a problem, and the constants its cost
estimates use. Every one is documented here and in docs/doctor.md, and overridable by
keyword (`Thresholds(min_share=0.1)`) or from a user's file (`Thresholds.from_mapping`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from ...model.graph.one_off_calls import ONE_OFF_MAX_REPEATS, ONE_OFF_MIN_NS, ONE_OFF_RATIO


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """min_share              a cause is above threshold when its estimated cost is at least
                             this fraction of the mean step time (0.05: 5 %)
    kernel_wait_us           GPU gaps shorter than this (µs) behind work that was already
                             queued are launch-machinery gaps between back-to-back kernels
                             (the idle_time analysis' consecutive_kernel_delay)
    tiny_kernel_us           kernels shorter than this (µs) count as tiny (evidence)
    low_occupancy_pct        without the device's SM count, a compute kernel whose estimated
                             achieved occupancy is under this (%) wastes the missing part of it
    fp32_gemm_speedup        assumed speed-up of a tensor-core kernel (TF32/BF16) over an FP32
                             GEMM: such a GEMM costs (1 - 1/speedup) of its time
    low_bus_bandwidth_fraction  a collective whose bus bandwidth is under this fraction of the
                             achievable one is called out
    achievable_bus_bandwidth_gbps  the achievable bus bandwidth (GB/s); 0: the best measured in
                             the trace (90th percentile of the collectives' bus bandwidths)
    one_off_min_us           a host event holding the GPU idle is a one-off stall only from
                             this long (µs)
    one_off_ratio            ... and only when it lasts this many times the median of the
                             other events of its name
    one_off_max_repeats      ... and at most this many events of its name are such outliers
    min_kernels_per_step     under this many GPU events a step, and
    min_gpu_us_per_step      under this much GPU busy time (µs) a step, the doctor says there
                             is too little GPU work to diagnose instead of naming a cause
    """

    min_share: float = 0.05
    kernel_wait_us: float = 30.0
    tiny_kernel_us: float = 10.0
    low_occupancy_pct: float = 10.0
    fp32_gemm_speedup: float = 2.0
    low_bus_bandwidth_fraction: float = 0.25
    achievable_bus_bandwidth_gbps: float = 0.0
    one_off_min_us: float = ONE_OFF_MIN_NS / 1000
    one_off_ratio: float = ONE_OFF_RATIO
    one_off_max_repeats: float = float(ONE_OFF_MAX_REPEATS)
    min_kernels_per_step: float = 10.0
    min_gpu_us_per_step: float = 1000.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"threshold {f.name} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"threshold {f.name} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, f.name, float(value))
        if self.fp32_gemm_speedup < 1:
            raise ValueError(
                f"threshold fp32_gemm_speedup must be >= 1, got {self.fp32_gemm_speedup}"
            )

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Thresholds":
        """Thresholds from a mapping (a user's JSON/TOML/YAML file, read by the caller):
        the keys given replace the defaults; an unknown key is an error naming the known ones."""
        if not isinstance(values, Mapping):
            raise ValueError(
                f"thresholds must be a mapping of name to number, got {type(values).__name__}"
            )
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown threshold(s) {unknown}; known: {sorted(known)}")
        return cls(**dict(values))

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)
