"""A small model of the reference tool's GPU-time methods, written from how it is known to
compute, and the shared trace folders they are compared on
(tests/reference_diff/test_differential_gpu_time.py, test_differential_idle_time.py)."""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pandas as pd

from hta_fast.compat import TraceAnalysis
from hta_fast.frame.select import GPU_KINDS, GPU_WORK_KINDS, profiler_step_rows
from hta_fast.schema import EventKind, KernelClass
from tests.conftest import TRACES_DIR
from tests.reference.reference_results import reference_results

US = 1000

FOLDERS = [
    "hta/_historical/with_gpu_user_annotation",
    "hta/amd_trace",
    "hta/call_stack",
    "hta/cpu_only",
    "hta/critical_path/alexnet",
    "hta/critical_path/cuda_event_sync",
    "hta/critical_path/cuda_event_sync_multi_stream",
    "hta/critical_path/simple_add",
    "hta/critical_path/end_to_end/simple_add/input",
    "hta/critical_path/end_to_end/simple_add/output",
    "hta/cupti_profiler",
    "hta/df_index_resolver",
    "hta/distributed_info_unavailable",
    "hta/mixed_files",
    "hta/nccl_parser_config",
    "hta/negative_queue_length_values_check",
    "hta/ns_resolution_trace",
    "hta/rank_non_gpu",
    "hta/rank_unavailable",
    "hta/timeline_analysis",
    "hta/trace_compare/base",
    "hta/trace_compare/test",
    "hta/trace_diff/control",
    "hta/trace_diff/test",
    "hta/trace_file_list",
    "hta/trace_filter",
    "hta/triton_example",
    "param_dlrm_8rank",
]
# MTIA accelerator events (category mtia_ccp_events) are not yet classed as GPU work by the
# loader (kind "other"), so we see no GPU work there; the reference does.
MTIA = ["hta/mtia_inference_trace"]


@lru_cache(maxsize=None)
def ref(folder):
    return reference_results(TRACES_DIR / folder)


@lru_cache(maxsize=None)
def ours(folder, include_last_profiler_step=False):
    return TraceAnalysis(
        trace_dir=str(TRACES_DIR / folder), include_last_profiler_step=include_last_profiler_step
    )


# --- the model of the reference ----------------------------------------------------------
COMM_RE = re.compile(r"^(nccl|hip|hccl)|ncclKernel")
MEM_RE = re.compile(r"^(Memcpy|Memset|dma)")
NOT_COMP_RE = re.compile(
    r"^nccl|Memcpy|Memset|dma|Sync|^Stream Wait Event|cuda.*LaunchKernel|"
    r"^runFunction|^hip|^job_exe|^packet|^pe_exe|^cpum_exe_subgraph|"
    r"^hccl|^collective_subgraph_execution"
)
COMP, COMM, MEM, OTHER = 0, 1, 2, 3


def ref_class(name: str) -> int:
    if COMM_RE.search(name):
        return COMM
    if MEM_RE.search(name):
        return MEM
    return OTHER if NOT_COMP_RE.search(name) else COMP


OUR_CLASS = {KernelClass.COMP: COMP, KernelClass.COMM: COMM, KernelClass.MEM: MEM}


class Rows:
    """The rows a side counts as GPU work on one rank: start, end (ns), class, stream, row."""

    def __init__(self, trace, mask, quirks: bool, idle: bool = False):
        col = lambda c: trace.column("events", c)  # noqa: E731
        kind, stream = col("kind"), col("stream")
        if quirks and filters(trace):
            # With two or more profiler steps the reference keeps only GPU rows whose
            # launch it kept, even with include_last_profiler_step=True.
            mask = np.ones(len(kind), bool) if mask is None else mask.copy()
            mask &= ~(np.isin(kind, GPU_KINDS) & (col("partner") < 0))
        if not quirks:
            keep = np.isin(kind, GPU_WORK_KINDS)
        elif idle:  # the reference's idle time: kernel/memcpy/memset categories with a stream
            keep = np.isin(kind, GPU_WORK_KINDS) & (stream != -1)
        else:  # any row with a stream; gpu user annotations never have one
            keep = (stream != -1) & (kind != EventKind.gpu_user_annotation)
            keep[uint32_stream_rows(trace)] = True
        if mask is not None:
            keep &= mask
        self.rows = np.flatnonzero(keep)
        ts, dur = col("ts")[self.rows], col("dur")[self.rows]
        self.starts, self.ends = ts, ts + dur
        if quirks and rounds(trace):
            self.starts, self.ends = ref_rounding(trace, ts, dur)
        self.stream = stream[self.rows]
        names = trace.strings.to_numpy(zero_copy_only=False)[col("name")[self.rows]]
        self.names = names
        if quirks:
            self.cls = np.array([ref_class(n) for n in names], np.int64)
        else:
            kc = col("kernel_class")[self.rows]
            self.cls = np.array([OUR_CLASS.get(KernelClass(k), OTHER) for k in kc], np.int64)


@lru_cache(maxsize=None)
def _uint32_stream_starts(path):
    """Starts (ns, as the loader computes them) of the events whose stream is 4294967295: a
    uint32 -1 (seen on Context Sync). We read it as no stream; the reference as a stream."""
    import gzip
    import json

    with (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    if b"4294967295" not in raw:
        return frozenset()
    doc = json.loads(raw)
    base = int(doc.get("baseTimeNanoseconds", 0))
    return frozenset(
        base + round(e["ts"] * US)
        for e in doc["traceEvents"]
        if isinstance(e.get("args"), dict) and e["args"].get("stream") == 4294967295
    )


def uint32_stream_rows(trace) -> np.ndarray:
    starts = _uint32_stream_starts(trace.meta.path)
    if not starts:
        return np.empty(0, np.int64)
    kind, ts = trace.column("events", "kind"), trace.column("events", "ts")
    return np.flatnonzero((kind == EventKind.sync) & np.isin(ts, np.fromiter(starts, np.int64)))


def file_us(trace, ts, count_ties=False):
    """The float64 µs the trace file held for these starts (ns, as loaded). The file's
    values are doubles; the loader's ns are within half the spacing of doubles at that
    magnitude (times 1000) of them, so the nearest double on that grid is the file's value.
    count_ties: also return how many lay exactly half-way (unsure by one grid step)."""
    rel = ts - trace.meta.base_time_ns
    x = rel / 1000.0
    m = -np.frexp(np.spacing(np.abs(x)))[1] + 1  # spacing = 2**-m µs
    ties = 0
    for i in np.flatnonzero(m <= 9):  # spacing of 2 ns or more: snap (exact integers)
        k = 2 ** int(m[i])
        twice = int(rel[i]) * k * 2
        ties += twice % 2000 == 1000
        x[i] = ((twice + 999) // 2000) / k  # ties: the loader errs upwards more often
    return (x, ties) if count_ties else x


def ref_rounding(trace, ts, dur):
    """(start, end) in ns as the reference rounds them: ts up and ts + dur (a double sum)
    down to whole µs, on the file's time base."""
    x = file_us(trace, ts)
    end = x + dur / 1000.0
    return np.ceil(x).astype(np.int64) * US, np.floor(end).astype(np.int64) * US


def filters(trace) -> bool:
    """Whether the reference's load filter runs: two or more profiler steps (in the whole
    folder; the folders here are one rank or ranks with the same steps)."""
    names = trace.strings.to_numpy(zero_copy_only=False)[
        trace.column("events", "name")[profiler_step_rows(trace)]
    ]
    return len(set(names)) >= 2


def rounds(trace) -> bool:
    """Whether the reference rounds this trace to whole µs (its timestamps are fractional)."""
    return bool(np.any(trace.column("events", "ts") % US))


def merged(starts, ends):
    """Groups of overlapping intervals, the reference's way: sorted by start, a new group
    when a start exceeds every end before it; (group starts, group ends)."""
    if len(starts) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    run = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run[:-1]]
    gid = np.cumsum(new) - 1
    gs = s[new]
    ge = np.full(len(gs), np.iinfo(np.int64).min)
    np.maximum.at(ge, gid, e)
    return gs, ge


def busy(starts, ends) -> int:
    gs, ge = merged(starts, ends)
    return int((ge - gs).sum())


def model_temporal(trace, mask, quirks):
    r = Rows(trace, mask, quirks)
    if len(r.rows) == 0:
        return None
    gs, ge = merged(r.starts, r.ends)
    kernel_time = int(ge[-1] - gs[0])
    idle = kernel_time - int((ge - gs).sum())
    comp = r.cls == COMP
    compute = busy(r.starts[comp], r.ends[comp])
    return np.array([idle, compute, kernel_time - compute - idle, kernel_time]) / US


def tie_slack(trace, mask) -> float:
    """µs by which the reference's result can depend on the order of equal starts: each
    row that its rounding left with a negative duration can start a group of its own (-1 µs)
    or not, as its unstable sort puts it before or after a row with the same start."""
    r = Rows(trace, mask, quirks=True)
    ties = file_us(trace, trace.column("events", "ts")[r.rows], count_ties=True)[1]
    return float(np.count_nonzero(r.ends < r.starts) + ties)


def model_types(trace, mask, quirks, n_types):
    """{label: µs} of the kernel-type sweep over each type's merged intervals."""
    r = Rows(trace, mask, quirks)
    events = []
    for c in range(n_types):
        on = r.cls == c
        gs, ge = merged(r.starts[on], r.ends[on])
        events += [(t, 1 << c) for t in gs] + [(t, -(1 << c)) for t in ge]
    if not events:
        return {}
    t = np.array([e[0] for e in events])
    d = np.array([e[1] for e in events])
    o = np.argsort(t, kind="stable")
    t, run = t[o], np.cumsum(d[o])
    seg = np.diff(t)
    names = ["COMPUTATION", "COMMUNICATION", "MEMORY"]
    out = {}
    for m, length in zip(run[:-1], seg):
        if m > 0 and length > 0:
            label = " overlapping ".join(names[i] for i in range(n_types) if m >> i & 1)
            out[label] = out.get(label, 0) + length / US
    return out


def model_kernels(trace, mask, quirks, n_types):
    """{(type, name): (count, sum, max, min, mean, std)} in µs (std ddof=1, NaN for one)."""
    r = Rows(trace, mask, quirks)
    names = ["COMPUTATION", "COMMUNICATION", "MEMORY"]
    df = pd.DataFrame({"t": r.cls, "name": r.names, "dur": (r.ends - r.starts) / US})
    df = df[df.t < n_types]
    g = df.groupby(["t", "name"])["dur"].agg(["count", "sum", "max", "min", "mean", "std"])
    return {(names[t], n): tuple(v) for (t, n), v in zip(g.index, g.to_numpy())}


def model_overlap(trace, mask, quirks):
    r = Rows(trace, mask, quirks)
    comm = r.cls == COMM
    comp = r.cls == COMP
    cs, ce = merged(r.starts[comm], r.ends[comm])
    comm_len = int((ce - cs).sum())
    ps, pe = merged(r.starts[comp], r.ends[comp])
    t = np.concatenate([cs, ce, ps, pe])
    d = np.concatenate(
        [np.full(len(cs), 1), np.full(len(ce), -1), np.full(len(ps), 2), np.full(len(pe), -2)]
    )
    o = np.argsort(t, kind="stable")
    t, run = t[o], np.cumsum(d[o])
    both = int(np.diff(t)[run[:-1] == 3].sum()) if len(t) else 0
    return comm_len, both


def model_idle(trace, mask, quirks, delay_us=30):
    """{(stream, category): (sum µs, count)} with the reference's previous-row intervals
    (quirks) or ours (intervals from the latest end; overlapping events end none). Kernels
    without a launch are never host_wait here."""
    r = Rows(trace, mask, quirks, idle=True)
    partner = trace.column("events", "partner")[r.rows]
    ts_all = trace.column("events", "ts")
    launch = np.where(partner >= 0, ts_all[np.maximum(partner, 0)], np.iinfo(np.int64).min)
    if quirks and rounds(trace):
        launch = np.where(
            partner >= 0, ref_rounding(trace, launch, np.zeros_like(launch))[0], launch
        )
    out = {}
    for s in np.unique(r.stream):
        on = np.flatnonzero(r.stream == s)
        o = on[np.lexsort((r.rows[on], r.starts[on]))]
        st, en, la = r.starts[o], r.ends[o], launch[o]
        if quirks:
            prev = en[:-1]
            gap, nxt_launch = st[1:] - prev, la[1:]
            ok = np.ones(len(gap), bool)
        else:
            prev = np.maximum.accumulate(np.maximum(en, st))[:-1]
            gap, nxt_launch = st[1:] - prev, la[1:]
            ok = gap >= 0
        host = nxt_launch > prev
        cat = np.where(host, 0, np.where(gap < delay_us * US, 1, 2))
        for c, name in enumerate(("host_wait", "kernel_wait", "other")):
            sel = ok & (cat == c)
            out[(int(s), name)] = (gap[sel].sum() / US, int(sel.sum()))
    return out


def ranks_of(folder):
    return sorted(ours(folder).traces.ranks)


def each_rank(folder, include_last=False):
    a = ours(folder, include_last)
    for rank in ranks_of(folder):
        t = a.traces[rank]
        yield rank, t, a.selection.event_mask(t)
