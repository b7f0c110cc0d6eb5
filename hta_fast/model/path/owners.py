"""Who owns each nanosecond of a step on the GPU: one attribution, in the critical path's
vocabulary, that the doctor, the critical path and the what-if can read.

Per (rank, step) of the walk (hta_fast.model.graph.walk, chained), the step's span on the
GPU as a whole, from its replayed start to its end, is cut into owned intervals that
partition it (their lengths add up to the step, none is negative):

* busy, by what ran (several at once: the first that applies): any compute, copy or set
  (`gpu_compute_bound`); else a collective moving data (`gpu_communication_bound`); else a
  collective waiting for the last rank to arrive (`cross_rank`, naming that rank: its first
  `wait` ns, analysis.collectives.kernel_waits: the kernel's duration less the collective's
  data time, whatever the clocks say; a rank alone has none);
* idle, by what the GPU waited for: each idle gap [a, b) is owned by the chain of tight
  edges the replay walks back from what ended it (the start of the GPU event that starts at
  b; for the step's tail, its end node) to a, each edge's part inside the gap taking that
  edge's critical-path category and charged event (model.path.bounds: the host's op that
  launched late, a blocking call, untraced host time, GPU work the trace did not record,
  a launch's latency, ...). What the walk cannot reach (a node nothing tight leads into)
  is `untraced_host`.

With the measured weights the replay meets every measured time, so the intervals are the
measured ones. The table's categories are BOUND_BY's and `cross_rank` (OWNERS).
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of, as_numpy
from ...analysis.collectives import KernelWaits, kernel_waits
from ...frame import select
from ...frame.fields import NS
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...schema import GPU_WORK_KINDS, KernelClass
from ...trace import Trace
from ...traceset import TraceSet
from ..graph.chain import Chain
from ..graph.unrecorded_wait import unrecorded_holds
from ..graph.walk import walk
from .bounds import BOUND_BY, bound_codes, charged_events, names_of

OWNERS = [*BOUND_BY, "cross_rank"]
_CODE = {o: i for i, o in enumerate(OWNERS)}
_IDLE = -1

SUMMARY = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("stream", pa.int64()),
        pa.field("step_ns", pa.int64(), metadata=NS),
    ]
    + [pa.field(o, pa.int64(), metadata=NS) for o in OWNERS]
)
INTERVALS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("stream", pa.int64()),
        pa.field("start", pa.int64(), metadata=NS),
        pa.field("end", pa.int64(), metadata=NS),
        pa.field("owner", pa.string()),
        pa.field("name", pa.string()),
        pa.field("waited_for", pa.int64()),
    ]
)


def wait_owners(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
    by_stream: bool = False,
) -> Result:
    """Per (rank, step): the step's length and each owner's time (ns), the owners
    partitioning the step (module doc); side table "intervals": one row per owned interval
    (start and end on the trace's clock, the owner, the event it is charged to where there
    is one, and for cross_rank the rank waited for). stream is null: the GPU as a whole.
    by_stream: the same per (rank, step, stream) for each stream with work in the step, its
    busy time its own work's and each of its idle gaps walked back from its next event (a
    stream held behind another's collective: that collective's release)."""
    sel = select.selection_of(selection, ranks, steps)
    ts = select.as_traceset(traces)
    waits = kernel_waits(ts, ranks=sel.ranks, steps=sel.steps) if len(ts) > 1 else {}
    rows: list[dict] = []
    parts: list[pa.Table] = []
    for chain in walk(ts, sel, True):
        summary, intervals = _chain_owners(chain, waits.get(chain.rank), by_stream)
        rows += summary
        parts.append(intervals)
    rows.sort(key=lambda r: (r["rank"], r["step"] is not None, r["step"] or 0, r["stream"] or -1))
    table = pa.table({f.name: [r[f.name] for r in rows] for f in SUMMARY}, schema=SUMMARY)
    side = pa.concat_tables(parts) if parts else INTERVALS.empty_table()
    params = {"selection": sel, "by_stream": by_stream}
    return Result("wait_owners", table, tables={"intervals": side}, params=params)


class _Pieces(NamedTuple):
    """Owned intervals of a chain, flat: step index, stream (-1: the GPU as a whole), start,
    end (chain times), owner code, charged event row (-1: none), rank waited for (-1: none)."""

    step: np.ndarray
    stream: np.ndarray
    start: np.ndarray
    end: np.ndarray
    owner: np.ndarray
    event: np.ndarray
    waited_for: np.ndarray


def _chain_owners(
    chain: Chain, waits: Optional[KernelWaits], by_stream: bool
) -> tuple[list[dict], pa.Table]:
    g, trace = chain.graph, chain.trace
    times = g.replay()
    gpu = np.isin(trace.column("events", "kind")[g.rows], np.asarray(GPU_WORK_KINDS, np.uint8))
    kclass = trace.column("events", "kernel_class")[g.rows]
    stream_of = trace.column("events", "stream")[g.rows].astype(np.int64)
    starts, ends = chain.step_starts(times), chain.step_ends(times)
    end_nodes = chain.end_nodes(times)
    busy: list[_Pieces] = []
    gap_step, gap_stream, gap_a, gap_b, gap_from = [], [], [], [], []
    lanes_seen: list[tuple[int, int]] = []
    for k in range(len(chain.steps)):
        lo, hi = int(starts[k]), int(ends[k])
        step_ev = chain.members[(chain.member_step == k) & gpu[chain.members]]
        lanes = sorted(set(stream_of[step_ev].tolist())) if by_stream else [-1]
        for lane in lanes:
            ev = step_ev if lane == -1 else step_ev[stream_of[step_ev] == lane]
            lanes_seen.append((k, lane))
            ev_start = np.clip(times[2 * ev], lo, hi)
            ev_end = np.clip(times[2 * ev + 1], lo, hi)
            layers = _layers(g.rows[ev], kclass[ev], ev_start, ev_end, waits)
            a, b, label = _paint(lo, hi, layers)
            on = label != _IDLE
            none = np.full(int(on.sum()), -1, np.int64)
            busy.append(
                _Pieces(
                    np.full(len(none), k),
                    np.full(len(none), lane),
                    a[on],
                    b[on],
                    _busy_codes(label[on]),
                    none,
                    _waited_for(label[on]),
                )
            )
            idle = ~on
            gap_step.append(np.full(int(idle.sum()), k))
            gap_stream.append(np.full(int(idle.sum()), lane))
            gap_a.append(a[idle])
            gap_b.append(b[idle])
            gap_from.append(_first_start_node(ev, ev_start, b[idle], int(end_nodes[k])))
    gaps = _gap_pieces(
        chain,
        times,
        *(
            np.concatenate(x) if x else np.zeros(0, np.int64)
            for x in (gap_step, gap_stream, gap_a, gap_b, gap_from)
        ),
    )
    allp = _Pieces(*(np.concatenate(x) for x in zip(*busy, gaps)))
    order = np.lexsort((allp.start, allp.stream, allp.step))
    allp = _Pieces(*(x[order] for x in allp))
    steps = np.asarray([-1 if st is None else st for st in chain.steps], np.int64)
    summary = []
    # each piece's (step, stream) lane, summed per lane: one integer key per lane
    seen = np.array(lanes_seen, np.int64).reshape(-1, 2)
    streams, seen_stream = np.unique(seen[:, 1], return_inverse=True)
    seen_key = seen[:, 0] * len(streams) + seen_stream.reshape(-1)
    piece_key = allp.step * len(streams) + np.searchsorted(streams, allp.stream)
    slot = np.searchsorted(seen_key, piece_key)  # lanes_seen is in (step, stream) order
    per_lane = np.zeros((len(lanes_seen), len(OWNERS)))
    np.add.at(per_lane, (slot, allp.owner), allp.end - allp.start)
    for (k, lane), per in zip(lanes_seen, per_lane):
        row = {
            "rank": chain.rank,
            "step": chain.steps[k],
            "stream": None if lane == -1 else lane,
            "step_ns": int(ends[k] - starts[k]),
        }
        row.update({o: int(round(per[i])) for i, o in enumerate(OWNERS)})
        summary.append(row)
    n = len(allp.start)
    has_event = allp.event >= 0
    names = as_numpy(names_of(trace, "name", np.maximum(allp.event, 0)))
    table = pa.table(
        {
            "rank": array_of(np.full(n, chain.rank), pa.int64()),
            "step": array_of(steps[allp.step], pa.int64(), mask=steps[allp.step] < 0),
            "stream": array_of(allp.stream, pa.int64(), mask=allp.stream < 0),
            "start": array_of(allp.start + g.window_start, pa.int64()),
            "end": array_of(allp.end + g.window_start, pa.int64()),
            "owner": array_of(np.asarray(OWNERS, object)[allp.owner], pa.string()),
            "name": array_of(names, pa.string(), mask=~has_event),
            "waited_for": array_of(allp.waited_for, pa.int64(), mask=allp.waited_for < 0),
        },
        schema=INTERVALS,
    )
    return summary, table


def _first_start_node(
    ev: np.ndarray, ev_start: np.ndarray, at: np.ndarray, default: int
) -> np.ndarray:
    """Per time in `at`: the start node of the first GPU event (lowest) starting then, else
    `default` (the step's end node: a tail gap)."""
    out = np.full(len(at), default, np.int64)
    if not len(ev) or not len(at):
        return out
    order = np.lexsort((ev, ev_start))
    s, e = ev_start[order], ev[order]
    pos = np.minimum(np.searchsorted(s, at, "left"), len(s) - 1)
    hit = s[pos] == at
    out[hit] = 2 * e[pos[hit]]
    return out


# Busy layers, in the order they own a moment: compute, data, then one per rank waited for
# (their layer index - 2 + ... is the rank: kept beside them in _LAYER_RANKS).
_COMPUTE, _DATA, _WAIT = 0, 1, 2


def _layers(
    rows: np.ndarray,
    kclass: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    waits: Optional[KernelWaits],
) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(starts, ends, label) per layer: label _COMPUTE, _DATA, or _WAIT + the rank waited
    for; a collective's wait is its first part."""
    comm = kclass == KernelClass.COMM
    wait = np.zeros(len(rows), np.int64)
    waited_for = np.full(len(rows), -1, np.int64)
    if waits is not None and len(waits.rows) and comm.any():
        order = np.argsort(waits.rows)
        pos = np.minimum(np.searchsorted(waits.rows[order], rows), len(order) - 1)
        hit = comm & (waits.rows[order][pos] == rows)
        wait[hit] = waits.wait[order][pos[hit]]
        waited_for[hit] = waits.waited_for[order][pos[hit]]
    waiting = comm & (wait > 0) & (waited_for >= 0)
    split = np.where(waiting, np.minimum(start + wait, end), start)
    layers = [(start[~comm], end[~comm], _COMPUTE), (split[comm], end[comm], _DATA)]
    for r in np.unique(waited_for[waiting]).tolist():
        on = waiting & (waited_for == r)
        layers.append((start[on], split[on], _WAIT + int(r)))
    return layers


def _paint(
    lo: int, hi: int, layers: list[tuple[np.ndarray, np.ndarray, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[lo, hi) cut where any layer's interval begins or ends; each piece labelled with the
    first layer covering it (_IDLE where none does); neighbours with one label merged."""
    cuts = [np.array([lo, hi], np.int64)]
    cuts += [np.clip(s, lo, hi) for s, _, _ in layers] + [np.clip(e, lo, hi) for _, e, _ in layers]
    bounds = np.unique(np.concatenate(cuts))
    if len(bounds) < 2:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    label = np.full(len(bounds) - 1, _IDLE, np.int64)
    for s, e, lab in reversed(layers):  # the first layer paints last, over the others
        ok = e > s
        delta = np.zeros(len(bounds), np.int64)
        np.add.at(delta, np.searchsorted(bounds, np.clip(s[ok], lo, hi)), 1)
        np.add.at(delta, np.searchsorted(bounds, np.clip(e[ok], lo, hi)), -1)
        label[np.cumsum(delta)[:-1] > 0] = lab
    a, b = bounds[:-1], bounds[1:]
    keep = np.r_[True, label[1:] != label[:-1]]
    first = np.flatnonzero(keep)
    return a[first], np.r_[a[first[1:]], b[-1]], label[first]


def _busy_codes(labels: np.ndarray) -> np.ndarray:
    return np.select(
        [labels == _COMPUTE, labels == _DATA],
        [_CODE["gpu_compute_bound"], _CODE["gpu_communication_bound"]],
        _CODE["cross_rank"],
    ).astype(np.int64)


def _waited_for(labels: np.ndarray) -> np.ndarray:
    return np.where(labels >= _WAIT, labels - _WAIT, -1).astype(np.int64)


def _gap_pieces(
    chain: Chain,
    times: np.ndarray,
    step: np.ndarray,
    stream: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    from_node: np.ndarray,
) -> _Pieces:
    """The idle gaps' pieces: each gap [a, b) walked back from what ended it (module doc),
    all in one core call."""
    g, trace = chain.graph, chain.trace
    if not len(a):
        z = np.zeros(0, np.int64)
        return _Pieces(z, z, z, z, z, z, z)
    paths, offsets = g.core.critical_paths(g.weight, times, 0, from_node, a)
    gap = np.repeat(np.arange(len(a)), np.diff(offsets))
    s = np.clip(times[g.src[paths]], a[gap], b[gap])
    e = np.clip(times[g.dst[paths]], a[gap], b[gap])
    # An edge may run back in time (two calls that overlap on a thread): each owns only what
    # the walk had not yet covered, so the pieces tile the gap (a running maximum per gap:
    # each gap's times lifted above every earlier gap's).
    lift = gap.astype(np.int64) * (int((b - a).max()) + 1) - a[gap]
    e = np.maximum.accumulate(e + lift) - lift
    first = np.r_[True, gap[1:] != gap[:-1]] if len(gap) else np.zeros(0, bool)
    s = np.where(first, s, np.r_[0, e[:-1]])
    codes = bound_codes(g, trace, paths).astype(np.int64)
    events = charged_events(g, trace, paths).astype(np.int64)
    # Nothing tight leads further back than the walk reached: untraced host time.
    reached = np.array(b, np.int64)
    reached[gap[first]] = s[first]
    rest = np.flatnonzero(reached > a)
    # A wait behind unrecorded GPU work begins where the hold began (the held event's
    # launch returned): the edge's part before it is the launch's, as the doctor counts it.
    holds = unrecorded_holds(trace)
    order = np.argsort(holds.rows)
    pos = np.minimum(np.searchsorted(holds.rows[order], events), max(len(order) - 1, 0))
    unrec = codes == _CODE["gpu_unrecorded_work"]
    if len(order):
        known = unrec & (holds.rows[order][pos] == events)
        begin = np.where(known, holds.starts[order][pos] - g.window_start, s)
    else:
        known, begin = np.zeros(len(e), bool), s
    cut = known & (s < begin) & (begin < e)
    pieces = _Pieces(
        np.concatenate([step[gap], step[rest], step[gap[cut]]]),
        np.concatenate([stream[gap], stream[rest], stream[gap[cut]]]),
        np.concatenate([np.where(cut, begin, s), a[rest], s[cut]]),
        np.concatenate([e, reached[rest], begin[cut]]),
        np.concatenate(
            [
                codes,
                np.full(len(rest), _CODE["untraced_host"]),
                np.full(int(cut.sum()), _CODE["gpu_kernel_launch_overhead"]),
            ]
        ),
        np.concatenate([events, np.full(len(rest), -1), events[cut]]),
        np.full(len(e) + len(rest) + int(cut.sum()), -1, np.int64),
    )
    keep = pieces.end > pieces.start
    return _Pieces(*(np.asarray(x[keep], np.int64) for x in pieces))
