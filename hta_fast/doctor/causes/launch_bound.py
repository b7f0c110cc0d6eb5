"""Cause 3, launch-bound execution: the GPU waits for the CPU to queue work.

Cost per step: the GPU idle time ended by work whose launch call had not returned yet when
the GPU went idle (context.Gaps.host_wait), while the host was busy in recorded work: less
what one-off stalls, the data loader, blocking syncs and allocator calls explain, and the
time the launching threads recorded nothing (gap_causes: launch_bound).

Evidence: the host-wait share of each stream's idle time (analysis.idle_time), CPU time per
step against GPU busy time per step, the mean CUDA queue length (near 0-1 means kernels are
queued one at a time), launch calls per step (a graph launch counts once), graph launches per
step, the share of GPU time that runs in graph replays (from GRAPHS_MOSTLY the advice is about
the work outside them) and the mean CPU time of a launch call. The mean queue length is
analysis.queue_length's time-weighted mean over streams, computed by Little's law from the
same launch/GPU-start pairs (queue_pairs): the time all entries spent queued over the streams'
durations, without building the step functions.
"""

from __future__ import annotations

import numpy as np

from ...analysis.idle_time import idle_time_totals
from ...analysis.queue_length import queue_pairs
from ...frame import derived
from ...frame.fields import duration_text
from ...frame.graph_replays import GRAPH_LAUNCH, has_graph_launches
from ...frame.launches import launch_pairs
from ...frame.memory_events import innermost_containing
from ...model.graph.one_off_calls import one_off_rows
from ...model.whatif.edits import Edits
from ...schema import EventKind
from ...trace import Trace
from ..views.context import RankView, is_amd
from ..views.estimate import Estimate, Tally, per_step
from ..views.gap_causes import split_gaps
from ..views.thresholds import Thresholds
from .record import Cause, CauseDoc

# The part of the idle-gap split charged to it.
GAP_PARTS = ("launch_bound",)

ADVICE = (
    "Cut the CPU time per step: capture the step in CUDA graphs (torch.compile "
    "mode='reduce-overhead', torch.cuda.graphs), let torch.compile fuse small ops, use "
    "larger batches, fused/foreach optimizers, and move per-step Python work (logging, "
    "metrics, checks) out of the hot loop; check the CPU is not oversubscribed."
)

ADVICE_GRAPHS = (
    "Most GPU time already runs in CUDA/HIP graph replays: the launches to cut are the ones "
    "outside them (the top events below). Bring that work into the captured graph (pre- and "
    "post-processing of the step, sampling, input preparation), fuse or batch what stays "
    "eager, and keep per-step Python work out of the hot loop."
)
# From this share of the GPU time in graph replays, the step is already captured.
GRAPHS_MOSTLY = 0.5


def examine(views: list[RankView], th: Thresholds) -> Estimate:
    cost: dict[int, np.ndarray] = {}
    tally = Tally()
    host_wait = idle_all = 0.0
    cpu_step = gpu_busy = 0.0
    launches = graph_launches = 0
    launch_cpu = in_graphs = gpu_time = 0.0
    q_weighted = q_time = 0.0
    delay = int(th.kernel_wait_us * 1000)
    for v in views:
        trace = v.trace
        gaps = split_gaps(v, th).charged(GAP_PARTS)
        cost[v.rank] = per_step(v, v.gaps.step_index, gaps)
        late = (gaps > 0) & (v.gaps.next_row >= 0)
        op = _charged_ops(v, late)
        # A one-off op (the convolution whose first launch loaded the module) is
        # one_off_stall's, whatever of its gap is left here: not a top event of this cause.
        has = op >= 0
        has[has] = ~one_off_rows(trace, op[has])
        tally.add(v, op[has], gaps[late][has])
        if v.span > 0 and len(v.work.rows):
            window = (v.lo, v.hi)
            waited_idle, all_idle = idle_time_totals(
                trace, consecutive_kernel_delay=delay, window=window
            )
            host_wait += float(waited_idle)
            idle_all += float(all_idle)
            waited, lasted = _queue_time(trace, window)
            q_weighted += waited
            q_time += lasted
            # A graph launch is the launch of every event it replays: count each call once.
            # Kernel launches only: a blocking copy's call time is the copy's, not a launch's.
            lrows, grows = launch_pairs(trace, None, include_memory_events=False)
            ts = trace.column("events", "ts")
            calls = np.unique(lrows[(ts[lrows] >= v.lo) & (ts[lrows] < v.hi)])
            launches += len(calls)
            launch_cpu += float(np.maximum(trace.column("events", "dur")[calls], 0).sum())
            if has_graph_launches(trace):
                flags = derived.name_flags(trace, GRAPH_LAUNCH)
                name = trace.column("events", "name")
                graph_launches += int(np.count_nonzero(flags[np.maximum(name[calls], 0)]))
                # The window's GPU time in replays, wherever their launch call lies (a decode
                # pass's replay may be launched before the window opens)
                by_graph = flags[np.maximum(name[lrows], 0)] & (name[lrows] >= 0)
                replayed = np.isin(v.work.rows, grows[by_graph])
                in_graphs += float((v.work.ends - v.work.starts)[replayed].sum())
            gpu_time += float((v.work.ends - v.work.starts).sum())
        cpu_step += v.host_time * v.n_steps
        gpu_busy += v.busy_time
    total_steps = sum(v.n_steps for v in views) or 1
    evidence = {
        "host_wait_share_of_idle": host_wait / idle_all if idle_all else 0.0,
        "cpu_time_ns_per_step": cpu_step / total_steps,
        "gpu_busy_ns_per_step": gpu_busy / total_steps,
        "mean_queue_length": q_weighted / q_time if q_time else 0.0,
        "launches_per_step": launches / total_steps,
        "graph_launches_per_step": graph_launches / total_steps,
        "gpu_time_share_in_graphs": in_graphs / gpu_time if gpu_time else 0.0,
        "mean_launch_cpu_us": launch_cpu / launches / 1e3 if launches else 0.0,
    }
    graphs = evidence["gpu_time_share_in_graphs"] >= GRAPHS_MOSTLY
    title = (
        f"Launch-bound: the GPU waits while the host queues work (host "
        f"{duration_text(evidence['cpu_time_ns_per_step'])} per step, GPU busy "
        f"{duration_text(evidence['gpu_busy_ns_per_step'])}, "
        f"{evidence['launches_per_step']:.0f} launches per step)"
    )
    if graphs:
        title += (
            f"; {100 * evidence['gpu_time_share_in_graphs']:.0f}% of the GPU time already "
            "runs in graph replays"
        )
    advice = ADVICE_GRAPHS if graphs else ADVICE
    if any(is_amd(v.trace) for v in views):
        advice = advice.replace("CUDA graphs", "HIP graphs (torch.cuda.graphs on ROCm)")
        advice = advice.replace("CUDA/HIP graph", "HIP graph")
    return Estimate(cost, evidence, tally.top(), title, advice)


def _charged_ops(v: RankView, late: np.ndarray) -> np.ndarray:
    """Per late gap: the host op the GPU waited for. The innermost operator on the launching
    thread holding the gap's middle (the host was busy in it: ten milliseconds of aten::randn
    on the CPU before an aten::copy_ are randn's; an annotation is a region, whose untraced
    time between operators says nothing of which), else the op whose launch arrived late (its
    enclosing op, else the launch call itself)."""
    trace = v.trace
    partner = trace.column("events", "partner")
    parent = trace.column("events", "parent")
    launch = partner[v.gaps.next_row[late]]
    op = np.where(launch >= 0, parent[np.maximum(launch, 0)], -1)
    op = np.where(op >= 0, op, launch)
    on = np.flatnonzero(launch >= 0)
    if not len(on):
        return op
    ops = np.flatnonzero(trace.column("events", "kind") == EventKind.cpu_op)
    middle = (v.gaps.starts[late][on] + v.gaps.ends[late][on]) // 2
    call = launch[on]
    holder = innermost_containing(
        trace, ops, trace.column("events", "pid")[call], trace.column("events", "tid")[call], middle
    )
    op[on] = np.where(holder >= 0, holder, op[on])
    return op


def _queue_time(trace: Trace, window: tuple[int, int]) -> tuple[float, float]:
    """(time all launches spent queued, sum over streams of first-to-last queue change) in
    the window: their ratio is the time-weighted mean queue length over streams."""
    rows, launch_ts, gpu_ts, _ = queue_pairs(trace, None, window)
    if len(rows) == 0:
        return 0.0, 0.0
    stream = trace.column("events", "stream")[rows]
    _, code = np.unique(stream, return_inverse=True)
    code = code.reshape(-1)
    lo = np.full(code.max() + 1, np.iinfo(np.int64).max)
    hi = np.full(code.max() + 1, np.iinfo(np.int64).min)
    np.minimum.at(lo, code, np.minimum(launch_ts, gpu_ts))
    np.maximum.at(hi, code, np.maximum(launch_ts, gpu_ts))
    return float((gpu_ts - launch_ts).sum()), float((hi - lo).sum())


# Its rows in docs/doctor.md (docs/gen_doctor.py writes them).
DOC = CauseDoc(
    means="the GPU waits while the host, busy in recorded work, queues it",
    cost=(
        "idle gaps ended by work whose launch call returned after the gap began (host "
        "wait), less what one-off stalls, the data loader, blocking calls, allocator "
        "calls and untraced host time explain: never where the host is blocked in a copy "
        "or sync, or absent. Evidence: host-wait share of idle (analysis.idle_time), CPU "
        "time vs GPU busy per step, mean queue length (analysis.queue_length; ~0-1: "
        "kernels queued one at a time), kernel launch calls per step (a graph launch "
        "counts once), graph launches per step, `gpu_time_share_in_graphs`, mean CPU "
        "time of a launch call"
    ),
    helps=(
        "CUDA graphs, torch.compile, larger batches, less Python per step; where half "
        "the GPU time or more already runs in graph replays, the advice is about the "
        "work outside them"
    ),
    edit=(
        "launches cost nothing: `zero_launch_overhead` (launch latency and the launch "
        "calls' own CPU time; the framework ops around them stay)"
    ),
)


CAUSE = Cause(
    key="launch_bound",
    name="launch-bound execution",
    thresholds=("min_share", "kernel_wait_us"),
    evidence=(
        "host_wait_share_of_idle",
        "cpu_time_ns_per_step",
        "gpu_busy_ns_per_step",
        "mean_queue_length",
        "launches_per_step",
        "graph_launches_per_step",
        "gpu_time_share_in_graphs",
        "mean_launch_cpu_us",
    ),
    heuristic=lambda ex: examine(ex.views, ex.th),
    edit=lambda ex: Edits(zero_launch_overhead=True),
    edit_text="launches cost nothing (what CUDA graphs approach)",
    edit_limits="it keeps the host's own work between launches (Python, the operators' "
    "CPU time), which the heuristic counts too",
    gap_parts=GAP_PARTS,
    doc=DOC,
)
