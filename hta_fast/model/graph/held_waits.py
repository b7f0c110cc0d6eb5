"""GPU work held behind work on another stream, read off the measured times.

A stream that waits on another (`cudaStreamWaitEvent`: a DDP copy after its all-reduce, the
embedding concat after DLRM's all-to-all, any op after NCCL's `work.wait()`) records the wait
only in a cuda_sync row, and many traces have none; without rows the calling thread's launch
order names the event's stream only where a `cudaEventRecord` call is in the trace, and
NCCL's record (on its own stream, right after the collective's launch) often is not. What
the trace always shows is the effect: a kernel that was launched and whose own stream was
idle sits still until a kernel on another stream of its device ends, then starts at once.

An event W is held by X when, on the same device (pid):

    ready(W)  = max(end of W's launch call, end of the work before W on its stream)
    W.start - ready(W) >= MIN_HOLD      it sat ready for a while (not a launch's latency)
    0 <= W.start - X.end <= GAP         and started right after X ended, X on another stream
                                        (the latest such end)

Each such pair becomes a cross_stream edge X.end -> W.start in the graph (the core's
`held_by` input), so a what-if that shortens X (a communication kernel: COMM=0.5) starts W
and all that follows it earlier. The rule needs no call in the trace; a pair where one of
the thread's stream-wait calls lies between W's launch and the launch before it on W's
stream is counted as backed by a call (WaitCalls.held_with_call), the others as held by
timing alone (another stream's resources can hold a kernel too, with the same effect).
"""

from __future__ import annotations

import numpy as np

# ns: how soon after X's end W must start (a wait's release is a few microseconds: 1-2 us on
# the DLRM traces' V100s, ~15 us on an MI300X), and how long W must have sat ready (longer
# than an idle GPU's launch latency, a few to a few tens of microseconds, so that an ordinary
# launch is not read as a hold; a shorter hold is left unexplained, as before).
GAP = 25_000
MIN_HOLD = 50_000


def held_by(
    ts: np.ndarray,
    dur: np.ndarray,
    lane: np.ndarray,
    device: np.ndarray,
    is_gpu: np.ndarray,
    call_end: np.ndarray,
) -> np.ndarray:
    """Per graph event, the GPU event on another stream of its device whose end it waited
    for (-1: none), by the module's rule. Arrays are the graph's, per event: device is a
    GPU event's device key (its pid), call_end the end of its launching call in the trace
    (-1: none recorded; a carried event's launch, outside the graph, counts)."""
    n = len(ts)
    out = np.full(n, -1, np.int64)
    gpu = np.flatnonzero(is_gpu)
    if len(gpu) < 2:
        return out
    end = ts + dur
    # Per stream, in start order: the latest end of the work before each event.
    order = gpu[np.lexsort((ts[gpu], lane[gpu]))]
    ends = end[order]
    first = np.r_[True, lane[order][1:] != lane[order][:-1]]
    group = np.cumsum(first) - 1
    run_max = _grouped_running_max(ends, group)
    before = np.where(first, np.iinfo(np.int64).min, np.r_[np.int64(0), run_max[:-1]])
    launched = call_end[order] >= 0
    ready = np.maximum(np.where(launched, call_end[order], np.iinfo(np.int64).max), before)
    held = launched & (ts[order] - ready >= MIN_HOLD)
    waiting, ready_of = order[held], dict(zip(order[held].tolist(), ready[held].tolist()))
    if not len(waiting):
        return out
    for dev in np.unique(device[waiting]):
        on = gpu[device[gpu] == dev]
        by_end = on[np.argsort(end[on], kind="stable")]
        e = end[by_end]
        for w in waiting[device[waiting] == dev]:
            k = int(np.searchsorted(e, ts[w], side="right")) - 1
            while k >= 0 and lane[by_end[k]] == lane[w]:
                k -= 1
            if k < 0:
                continue
            x = by_end[k]
            if ts[w] - end[x] <= GAP and end[x] > ready_of[int(w)]:
                out[w] = x
    return out


def _grouped_running_max(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running maximum of values restarting at each new group (groups contiguous)."""
    if not len(values):
        return values
    # Offset each group above all earlier ones so that one running maximum serves all.
    span = int(values.max()) - int(values.min()) + 1
    lifted = (values - values.min()) + group.astype(np.int64) * span
    return np.maximum.accumulate(lifted) - group.astype(np.int64) * span + values.min()


def backed_by_call(
    held: np.ndarray,
    ts: np.ndarray,
    lane: np.ndarray,
    is_gpu: np.ndarray,
    launch: np.ndarray,
    corr: np.ndarray,
    waits: np.ndarray,
) -> int:
    """How many of the held events (held >= 0) have one of the stream-wait calls `waits` on
    their launching thread after the launch of the work before them on their stream (or
    anywhere before theirs, for a stream's first) and before their own launch."""
    targets = np.flatnonzero((held >= 0) & (launch >= 0))
    if not len(targets) or not len(waits):
        return 0
    gpu = np.flatnonzero(is_gpu)
    order = gpu[np.lexsort((ts[gpu], lane[gpu]))]
    pos = np.empty(len(ts), np.int64)
    pos[order] = np.arange(len(order))
    at = pos[targets]
    prev = order[np.maximum(at - 1, 0)]
    has_prev = (at > 0) & (lane[prev] == lane[targets]) & (launch[prev] >= 0)
    low = np.where(has_prev, corr[np.maximum(launch[prev], 0)], -1)
    high = corr[launch[targets]]
    thread = lane[launch[targets]]
    by = np.lexsort((corr[waits], lane[waits]))
    w_lane, w_corr = lane[waits][by], corr[waits][by]
    # Per target: the waits on its thread with low < corr < high, by two sorted searches
    # over (thread, corr) pairs.
    first = np.searchsorted(w_lane, thread, side="left")
    last = np.searchsorted(w_lane, thread, side="right")
    backed = 0
    for f, l_, lo, hi in zip(first, last, low, high):
        c = w_corr[f:l_]
        k = np.searchsorted(c, lo, side="right")
        backed += bool(k < len(c) and c[k] < hi)
    return backed
