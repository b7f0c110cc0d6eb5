"""The analyses by name, each taking (traces, selection): what `hta-fast analyze -a NAME`
runs and what the report's sections draw from, one registry so that both show the same
numbers. Each runs with every side table one of them shows (idle_time's interval
statistics: the command line prints them, the report draws the main table)."""

from __future__ import annotations

from typing import Callable, Union

from ..frame.result import Result
from ..frame.select import Selection
from ..trace import Trace
from ..traceset import TraceSet
from . import annotations as user_annotations
from . import collectives as cross_rank
from . import (
    cupti_counters,
    idle_time,
    kernel_breakdown,
    launch_stats,
    memory_bw,
    overlap,
    queue_length,
    steps,
    stragglers,
    temporal,
)
from .graphs import graph_replays
from .inference import phases
from .ops import op_kernels, op_table, roofline
from .tensorboard import (
    achieved_occupancy,
    gpu_utilization,
    modules,
    operator_memory,
    sm_efficiency,
    step_breakdown,
    tensor_cores,
)

__all__ = ["ANALYSES", "DEFAULT"]

Runner = Callable[[Union[Trace, TraceSet], Selection], Result]

ANALYSES: dict[str, Runner] = {
    "temporal": lambda t, s: temporal.temporal_breakdown(t, selection=s),
    "idle_time": lambda t, s: idle_time.idle_time_breakdown(t, interval_stats=True, selection=s),
    "kernel_breakdown": lambda t, s: kernel_breakdown.kernel_breakdown(t, selection=s),
    "overlap": lambda t, s: overlap.comm_comp_overlap(t, selection=s),
    "queue_length": lambda t, s: queue_length.queue_length(t, selection=s),
    "memory_bw": lambda t, s: memory_bw.memory_bandwidth(t, selection=s),
    "launch_stats": lambda t, s: launch_stats.launch_stats(t, selection=s),
    "op_kernels": lambda t, s: op_kernels.op_kernels(t, selection=s),
    "kernel_launch_configs": lambda t, s: op_kernels.kernel_launch_configs(t, selection=s),
    "user_annotations": lambda t, s: user_annotations.user_annotation_breakdown(t, selection=s),
    "steps": lambda t, s: steps.profiler_steps(t, selection=s),
    "stragglers": lambda t, s: stragglers.stragglers(t, selection=s),
    "cupti_counters": lambda t, s: cupti_counters.cupti_counters(t, selection=s),
    "op_table": lambda t, s: op_table.op_table(t, costs=True, selection=s),
    "roofline": lambda t, s: roofline.roofline(t, selection=s),
    "collectives": lambda t, s: cross_rank.collectives(t, ranks=s.ranks, steps=s.steps),
    "late_arrivals": lambda t, s: cross_rank.late_arrivals(t, ranks=s.ranks, steps=s.steps),
    "step_spread": lambda t, s: cross_rank.step_spread(t, ranks=s.ranks, steps=s.steps),
    "clock_offsets": lambda t, s: cross_rank.clock_offsets(t, ranks=s.ranks, steps=s.steps),
    # The TensorBoard profiler plugin's metrics, by its definitions.
    "gpu_utilization": lambda t, s: gpu_utilization.gpu_utilization(t, selection=s),
    "sm_efficiency": lambda t, s: sm_efficiency.sm_efficiency(t, selection=s),
    "achieved_occupancy": lambda t, s: achieved_occupancy.achieved_occupancy(t, selection=s),
    "step_breakdown": lambda t, s: step_breakdown.step_breakdown(t, selection=s),
    "operator_memory": lambda t, s: operator_memory.operator_memory(t, selection=s),
    "modules": lambda t, s: modules.modules(t, selection=s),
    "tensor_cores": lambda t, s: tensor_cores.tensor_cores(t, selection=s),
    # Inference: prefill, decode and denoising passes, or repeated iterations.
    "phases": lambda t, s: phases.phases(t, selection=s),
    "graph_replays": lambda t, s: graph_replays.graph_replays(t, selection=s),
}
# What `analyze` runs when no --analysis is given: the questions asked first.
DEFAULT = ("temporal", "idle_time", "kernel_breakdown", "overlap", "steps")
