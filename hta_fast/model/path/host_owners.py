"""Who owns each nanosecond of a step on each launching thread: the host's side of the one
attribution (model.path.owners holds the GPU's), in the same vocabulary.

Per (rank, step) of the walk (chained) and per thread that launched GPU work in the step, the
step's span from its replayed start to its end is cut into owned intervals that partition
it. Each moment belongs to the innermost recorded event the thread was in then:

* a blocking call (a synchronize, a synchronous copy: hta_fast.sync_calls.BLOCKING), or a
  polling run from its first query to its last (model.graph.poll_runs): the host waited for
  the GPU, so the moment is owned by what owned the GPU then (the GPU's owned intervals:
  compute, communication, the last rank to arrive, unrecorded work, ...);
* any other event: `one_off_stall` for a one-off call (model.graph.one_off_calls),
  `data_loading` inside the data loader, else `cpu_bound`;
* no event: `untraced_host` for a gap of UNTRACED_MIN or more, else `cpu_bound` (the
  interpreter between operators), as the critical path counts them (model.path.bounds).

With the measured weights the replay meets every measured time, so the intervals are the
measured ones.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import sync_calls
from ..._arrow import as_numpy
from ...frame import select
from ...frame.fields import NS
from ...frame.memory_events import innermost_containing
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...schema import CPU_KINDS, GPU_WORK_KINDS
from ...trace import Trace
from ...traceset import TraceSet
from ..graph.one_off_calls import one_off_rows
from ..graph.poll_runs import poll_runs
from .bounds import UNTRACED_MIN, in_data_loading
from .owners import OWNERS, wait_owners

_CODE = {o: i for i, o in enumerate(OWNERS)}

SUMMARY = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("pid", pa.int64()),
        pa.field("tid", pa.int64()),
        pa.field("step_ns", pa.int64(), metadata=NS),
    ]
    + [pa.field(o, pa.int64(), metadata=NS) for o in OWNERS]
)


def host_owners(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
    gpu: Optional[Result] = None,
) -> Result:
    """Per (rank, step, launching thread): the step's length and each owner's time (ns) on
    that thread, the owners partitioning the step (module doc). `gpu`: wait_owners' result
    for the same traces and selection, where the caller has it already."""
    sel = select.selection_of(selection, ranks, steps)
    ts = select.as_traceset(traces)
    if gpu is None:
        gpu = wait_owners(ts, selection=sel)
    iv = gpu["intervals"]
    rows: list[dict] = []
    for rank, trace, _ in select.each_rank(ts, sel):
        windows = _gpu_intervals(iv, rank)
        if not windows:
            continue
        for (pid, tid), timeline in _timelines(trace, windows):
            for step, (gs, ge, go) in windows.items():
                lo, hi = int(gs[0]), int(ge[-1])
                if not timeline.launches_in(lo, hi):
                    continue
                per = timeline.owned(lo, hi, gs, ge, go)
                row = {"rank": rank, "step": step, "pid": pid, "tid": tid, "step_ns": hi - lo}
                row.update({o: int(per[i]) for i, o in enumerate(OWNERS)})
                rows.append(row)
    rows.sort(key=lambda r: (r["rank"], r["step"] is not None, r["step"] or 0, r["pid"], r["tid"]))
    table = pa.table({f.name: [r[f.name] for r in rows] for f in SUMMARY}, schema=SUMMARY)
    return Result("host_owners", table, params={"selection": sel})


def _gpu_intervals(iv: pa.Table, rank: int) -> dict[Optional[int], tuple[np.ndarray, ...]]:
    """Per step: the GPU's owned intervals (starts, ends, owner codes), by start; they tile
    the step's span."""
    t = iv.filter(pc.and_(pc.equal(iv["rank"], rank), pc.is_null(iv["stream"])))
    if not t.num_rows:
        return {}
    # a null step (a trace without steps) reads NaN here, and is the key None
    steps = np.asarray(as_numpy(t["step"]), np.float64)
    start, end = as_numpy(t["start"]), as_numpy(t["end"])
    owners = pc.dictionary_encode(t["owner"]).combine_chunks()
    codes = np.array([_CODE[o] for o in owners.dictionary.to_pylist()], np.int64)
    owner = codes[as_numpy(owners.indices)]
    out: dict[Optional[int], tuple[np.ndarray, ...]] = {}
    for k in np.unique(steps).tolist():
        on = np.flatnonzero(np.isnan(steps) if np.isnan(k) else steps == k)
        on = on[np.argsort(start[on], kind="stable")]
        out[None if np.isnan(k) else int(k)] = (start[on], end[on], owner[on])
    return out


class _Timeline:
    """One thread's whole trace cut into pieces, each with its owner code (-1: the host
    waited for the GPU, whose owner then stands for it), and its launch calls' starts."""

    def __init__(self, cut: np.ndarray, code: np.ndarray, launches: np.ndarray):
        self.cut, self.code, self.launches = cut, code, np.sort(launches)

    def launches_in(self, lo: int, hi: int) -> bool:
        i = np.searchsorted(self.launches, lo, "left")
        return bool(i < len(self.launches) and self.launches[i] < hi)

    def owned(self, lo: int, hi: int, gs: np.ndarray, ge: np.ndarray, go: np.ndarray) -> np.ndarray:
        """Each owner's time over [lo, hi), the GPU's intervals (gs, ge, go) standing for
        the waits."""
        i = max(int(np.searchsorted(self.cut, lo, "right")) - 1, 0)
        j = int(np.searchsorted(self.cut, hi, "left"))
        a = np.clip(self.cut[i:j], lo, hi)
        b = np.clip(self.cut[i + 1 : j + 1], lo, hi)
        code = self.code[i:j]
        per = np.zeros(len(OWNERS))
        own = code >= 0
        np.add.at(per, code[own], (b - a)[own])
        wait_a, wait_b = a[~own], b[~own]
        if len(wait_a):
            # the waits cut at the GPU's interval edges: each part owned as the GPU was
            edges = np.unique(np.concatenate([wait_a, wait_b, gs, ge]))
            mid = (edges[:-1] + edges[1:]) // 2
            k = np.searchsorted(wait_a, mid, "right") - 1
            waiting = (k >= 0) & (mid < wait_b[np.maximum(k, 0)])
            g = np.searchsorted(gs, mid, "right") - 1
            covered = waiting & (g >= 0) & (mid < ge[np.maximum(g, 0)])
            length = np.diff(edges)
            np.add.at(per, go[g[covered]], length[covered])
            per[_CODE["cpu_bound"]] += length[waiting & ~covered].sum()
        return per


def _timelines(
    trace: Trace, windows: dict[Optional[int], tuple[np.ndarray, ...]]
) -> list[tuple[tuple[int, int], _Timeline]]:
    """Each thread that launched GPU work, its timeline cut at its events' edges, its
    polling runs' and the steps' (module doc)."""
    col = trace.column
    kind = col("events", "kind")
    rows = np.flatnonzero(np.isin(kind, CPU_KINDS))
    pid, tid = col("events", "pid")[rows], col("events", "tid")[rows]
    partner = col("events", "partner")[rows]
    launches = (partner >= 0) & np.isin(kind[np.maximum(partner, 0)], GPU_WORK_KINDS)
    runs = poll_runs(trace)
    ends = col("events", "ts") + np.maximum(col("events", "dur"), 0)
    step_edges = np.concatenate([np.r_[w[0][0], w[1][-1]] for w in windows.values()])
    out = []
    for p, t in sorted({(int(a), int(b)) for a, b in zip(pid[launches], tid[launches])}):
        on = (pid == p) & (tid == t)
        mine = (col("events", "pid")[runs.last] == p) & (col("events", "tid")[runs.last] == t)
        polls = (runs.start[mine], ends[runs.last[mine]])
        starts = col("events", "ts")[rows[on & launches]]
        out.append(((p, t), _timeline(trace, rows[on], polls, step_edges, starts)))
    return out


def _timeline(
    trace: Trace,
    rows: np.ndarray,
    polls: tuple[np.ndarray, np.ndarray],
    step_edges: np.ndarray,
    launches: np.ndarray,
) -> _Timeline:
    """A thread's pieces and their owner codes (module doc)."""
    col = trace.column
    start = col("events", "ts")[rows]
    end = start + np.maximum(col("events", "dur")[rows], 0)
    cut = np.sort(np.concatenate([start, end, polls[0], polls[1], step_edges]))
    cut = cut[np.r_[True, cut[1:] != cut[:-1]]]  # sorted, not hashed: millions of edges
    mid = (cut[:-1] + cut[1:]) // 2
    pid = np.full(len(mid), col("events", "pid")[rows[0]])
    tid = np.full(len(mid), col("events", "tid")[rows[0]])
    holder = innermost_containing(trace, rows, pid, tid, mid)  # rows are one thread's
    code = np.full(len(mid), -1, np.int64)  # -1: waiting for the GPU
    held = holder >= 0
    code[held] = _event_codes(trace, holder[held])
    # A stretch with no event: untraced host time where it lasts UNTRACED_MIN or more (the
    # stretch, not its pieces: the steps' edges cut it too)
    free = ~held
    run = np.cumsum(np.r_[True, free[1:] != free[:-1]]) - 1
    run_len = np.bincount(run, weights=np.diff(cut))
    code[free] = np.where(
        run_len[run[free]] >= UNTRACED_MIN, _CODE["untraced_host"], _CODE["cpu_bound"]
    )
    for a, b in zip(polls[0].tolist(), polls[1].tolist()):  # a polling run waits
        code[np.searchsorted(cut, a) : np.searchsorted(cut, b)] = -1
    return _Timeline(cut, code, launches)


def _event_codes(trace: Trace, ev: np.ndarray) -> np.ndarray:
    """Per event: its owner code, -1 for a blocking call (the GPU's owner stands for it)."""
    uniq, inv = np.unique(ev, return_inverse=True)
    code = np.where(in_data_loading(trace, uniq), _CODE["data_loading"], _CODE["cpu_bound"]).astype(
        np.int64
    )
    code[one_off_rows(trace, uniq)] = _CODE["one_off_stall"]
    code[np.isin(sync_calls.sync_kinds_of_rows(trace, uniq), sync_calls.BLOCKING)] = -1
    return code[inv.reshape(-1)]
