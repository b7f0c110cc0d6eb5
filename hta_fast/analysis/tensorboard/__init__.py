"""The metrics the PyTorch TensorBoard profiler plugin shows, by its definitions, one module
each; each returns a Result per rank with per-step side tables.

    gpu_utilization     kernel busy time over the steps' time (the plugin's), beside any GPU
                        work's busy time over its span (the temporal breakdown's)
    sm_efficiency       Est. SM Efficiency: min(blocks / SMs, 1) of the kernels running,
                        over the steps' time; also as a time series
    achieved_occupancy  Est. Achieved Occupancy: the kernels' estimated achieved occupancy,
                        weighted by their time in the steps
    step_breakdown      the overview's step-time split: kernel, memcpy, memset,
                        communication, runtime, dataloader, cpu_exec, other
    operator_memory     the memory view's operator table: allocations, frees, increase and
                        peak per operator, self and inclusive, from the [memory] events;
                        the memory curve and each block's allocation and free
    tensor_cores        the kernel time on tensor cores, and the kernel time launched by
                        the operators that could use them

    from hta_fast.analysis.tensorboard import step_breakdown
    step_breakdown.step_breakdown(traces).to_pandas()

The steps as the plugin times them (each extended to the end of its GPU work) are
hta_fast.steps.step_windows, which the doctor and the model read too.

Where these differ from the plugin, docs/differences.md says so.

The modules resolve on first use (hta_fast._lazy): an analysis that reads one of them (the
step-time breakdown, say) does not import the others.
"""

from ..._lazy import lazy_package

__all__ = [
    "achieved_occupancy",
    "gpu_utilization",
    "operator_memory",
    "sm_efficiency",
    "step_breakdown",
    "tensor_cores",
]

lazy_package(__name__, {}, subpackages=True)
