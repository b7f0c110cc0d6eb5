"""Synthetic traces of CPU operators with recorded shapes, and the kernels they launch."""

from __future__ import annotations

import json
from typing import Optional

from tests.support.kineto_builder import CPU_PID, CPU_TID, KinetoBuilder


class OpTraceBuilder(KinetoBuilder):
    """A KinetoBuilder whose CPU operators carry Input Dims / Input type / Concrete Inputs."""

    def __init__(self, device_name: str = "NVIDIA A100-SXM4-80GB", **kw):
        super().__init__(**kw)
        self.devices[0]["name"] = device_name

    def op(
        self,
        name: str,
        ts: float,
        dur: float,
        dims: Optional[list] = None,
        types: Optional[list] = None,
        concrete: Optional[list] = None,
    ) -> None:
        args: dict = {"External id": self._ext()}
        if dims is not None:
            args["Input Dims"] = dims
            args["Input type"] = types if types is not None else ["float"] * len(dims)
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        self._x("cpu_op", name, ts, dur, CPU_PID, CPU_TID, args)

    def op_with_kernels(
        self,
        name: str,
        ts: float,
        dims: list,
        types: Optional[list],
        kernel_durs: list[float],
        concrete: Optional[list] = None,
        gpu_ts: Optional[float] = None,
        kernel_name: Optional[str] = None,
    ) -> float:
        """An operator at ts (µs) that launches one kernel per duration; returns its end."""
        dur = 10.0 * (len(kernel_durs) + 1)
        self.op(name, ts, dur, dims, types, concrete)
        g = ts + 100.0 if gpu_ts is None else gpu_ts
        for j, d in enumerate(kernel_durs):
            self.kernel(kernel_name or f"{name}_kernel", ts + 2 + 10 * j, g, d, launch_dur=5.0)
            g += d + 1
        return ts + dur


def dumps(x) -> str:
    return json.dumps(x)


def device_table(path, source: dict, target: dict) -> str:
    """A device table file at `path` holding a source GPU ("SRC-TEST", matching the
    builder's "Test GPU") and `target` (key, match, memory_gbps, tflops): for predictions
    onto a device whose ratios to the source are known."""
    src = {"key": "SRC-TEST", "match": "^test gpu$", **source}
    path.write_text(json.dumps({"devices": [src, target]}))
    return str(path)
