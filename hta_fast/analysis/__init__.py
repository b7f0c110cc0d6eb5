"""Analyses: one module per question, each a pure function of a Trace or TraceSet and
parameters that returns a Result (hta_fast.frame). Selection keywords (ranks, steps, window,
streams) are shared by all; `registry.ANALYSES` runs each by name (the command line and the
report read it).

    from hta_fast.analysis import temporal, idle_time
    temporal.temporal_breakdown(traces)

The subpackage `tensorboard` holds the metrics the PyTorch TensorBoard profiler plugin
shows (GPU utilization, Est. SM Efficiency, Est. Achieved Occupancy, the step-time
breakdown), by that plugin's definitions; `inference` the analyses of inference traces
(phases: prefill, decode and denoising passes); `graphs` the analyses of CUDA/HIP graph
replays.

The package names its modules, not their functions: several functions are named like their
module (collectives.collectives, stragglers.stragglers), and a function bound here would hide
the module of the same name."""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from ..frame.result import Result  # noqa: F401 (for old imports)
    from ..frame.select import Selection  # noqa: F401
    from .registry import ANALYSES

# The names and the module each comes from; the analyses' modules resolve on first use too
# (hta_fast._lazy), so that importing one analysis does not import them all. Result and
# Selection live in hta_fast.frame: named here for old imports.
PUBLIC = {
    "ANALYSES": "hta_fast.analysis.registry",
    "Result": "hta_fast.frame.result",
    "Selection": "hta_fast.frame.select",
}

__all__ = [
    "ANALYSES",
    "annotations",
    "collectives",
    "cupti_counters",
    "graphs",
    "idle_time",
    "inference",
    "kernel_breakdown",
    "kernel_sequences",
    "launch_stats",
    "memory_bw",
    "memory_timeline",
    "ops",
    "overlap",
    "queue_length",
    "registry",
    "steps",
    "stragglers",
    "temporal",
    "tensorboard",
    "trace_diff",
]

lazy_package(__name__, PUBLIC, subpackages=True)
