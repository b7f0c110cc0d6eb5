"""The phases of an inference trace: its passes, each timed and its GPU time measured.

The passes come from the source asked for (hta_fast.steps.steps_from's sources, "profiler"
aside), or, without one, from the first of these that finds any on a selected rank: the
serving phases (prefill, decode and denoising passes together), model forwards, the
iterations of repeated launches.

A pass is timed as the TensorBoard plugin times a step (steps/step_windows,
whose rule this reuses over the passes made steps): from its host start, or the end of the
pass before it when that is later, to the end of the GPU work it launched, or of its host
span when that is later; where the trace opens with the GPU busy on work it does not hold
(frame.gpu_work.unrecorded_head: the first recorded GPU event started long after its launch,
nothing recorded before it), no earlier than that event's start, as the doctor times it.
Windows of one rank never overlap, and a pass owns the GPU time
its own work takes even where that runs on after the host moved to the next pass (a
graph replayed while the host queues the next one). Its busy time is the time the GPU ran
any work inside that window; kernels and launches count what the pass launched (a graph
launch is one launch, its replay's kernels each a kernel).
"""

from __future__ import annotations

import re
from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ... import ops
from ..._arrow import array_of, as_numpy
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.gpu_work import gpu_work, unrecorded_head
from ...frame.graph_replays import graph_replays, has_graph_launches
from ...frame.result import Result
from ...schema import EventKind
from ...steps.iterations import iterations
from ...steps.passes import Passes, described, find_passes, may_mark
from ...steps.step_windows import analysed_windows, window_totals
from ...steps.steps_from import SOURCES, rank_windows
from ...trace import Trace
from ...traceset import TraceSet

__all__ = ["phases", "marks_passes", "TIERS"]

# What a source-less call tries, in order: the first that finds passes on any rank wins.
TIERS: tuple[tuple[str, ...], ...] = (
    ("prefill", "decode", "mixed", "denoise"),
    ("forward",),
    ("iterations",),
)

_BUSY = "the time the GPU ran any work inside the pass's window"
# What a vLLM/SGLang step name says (request_counts), in the order it returns them: nulls where
# a name says nothing.
STEP_COUNTS = (
    ("prefill_requests", "context requests a vLLM/SGLang step names (null: none)"),
    ("decode_requests", "generation requests a vLLM/SGLang step names"),
    ("prefill_tokens", "query tokens of the step's context requests"),
    ("decode_tokens", "query tokens of the step's generation requests"),
    (
        "context_tokens",
        "key (KV cache) tokens the step's requests attend to, where the name writes them (sk)",
    ),
)
SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("phase", pa.string()),
        pa.field("index", pa.int64(), metadata={"description": "pass of its phase, from 0"}),
        pa.field("step", pa.int64(), metadata={"description": "pass of the rank, from 0"}),
        pa.field("name", pa.string()),
        pa.field("start", pa.int64(), metadata=NS),
        pa.field("end", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("host_dur", pa.int64(), metadata={**NS, "description": "the host span"}),
        pa.field("gpu_busy", pa.int64(), metadata={**NS, "description": _BUSY}),
        pa.field("busy_share", pa.float64(), metadata={**PCT, "description": "gpu_busy / dur"}),
        pa.field(
            "graph_busy",
            pa.int64(),
            metadata={**NS, "description": "of gpu_busy, the time graph-replayed work ran"},
        ),
        pa.field("kernels", pa.int64()),
        pa.field("launches", pa.int64()),
        *(pa.field(name, pa.int64(), metadata={"description": d}) for name, d in STEP_COUNTS),
    ]
)
# vLLM V1's step names (and SGLang's under the same tooling): execute[_R]_context_M(X)_
# generation_K(Y), X and Y a token count (older) or a layout "sq<q>sk<k>sqsq<..>sqsk<..>"
# with the parts' query (sq) and key (sk) token sums.
STEP_NAME = re.compile(
    r"^execute_(?:[0-9]+_)?context_([0-9]+)\(([a-z0-9]*)\)_generation_([0-9]+)\(([a-z0-9]*)\)$"
)
LAYOUT = re.compile(r"^sq([0-9]+)sk([0-9]+)")
# SGLang's batch annotation: step[<forward mode> bs=<requests>]
SGLANG_STEP = re.compile(r"^step\[(DECODE|EXTEND|PREFILL|SPLIT_PREFILL) bs=([0-9]+)\]")
SUMMARY = pa.schema(
    [
        pa.field("phase", pa.string()),
        pa.field("ranks", pa.int64()),
        pa.field("count", pa.int64()),
        pa.field("mean_dur", pa.float64(), metadata=NS),
        pa.field("median_dur", pa.float64(), metadata=NS),
        pa.field("p90_dur", pa.float64(), metadata=NS),
        pa.field(
            "busy_share",
            pa.float64(),
            metadata={**PCT, "description": "sum of gpu_busy / sum of dur"},
        ),
        pa.field(
            "graph_share",
            pa.float64(),
            metadata={**PCT, "description": "sum of graph_busy / sum of gpu_busy"},
        ),
        pa.field("kernels", pa.int64()),
        pa.field("launches", pa.int64()),
    ]
)


def _passes(trace: Trace, tier: tuple[str, ...]) -> tuple[Passes, str]:
    if tier == ("iterations",):
        found, _, note = iterations(trace)
        return found, note
    if len(tier) == 1:
        return rank_windows(trace, tier[0])
    found = find_passes(trace, tier)
    return found, described(found) if len(found.row) else f"no {', '.join(tier)} pass"


def _rank_table(rank: int, trace: Trace, found: Passes) -> pa.Table:
    n = len(found.row)
    made = trace.with_steps(found.row, np.arange(n), found.ts, found.end - found.ts, "phases")
    # one row per pass, in time order: pass k is step k; none before the unrecorded head
    win = analysed_windows(made)
    work = gpu_work(made, None)
    busy = ops.union(work.starts, work.ends)
    busy_t = window_totals(win.ts, win.end, busy.starts, busy.ends)
    graph_t = _graph_busy(made, win.ts, win.end)
    step = made.column("events", "step")
    kind = made.column("events", "kind")
    launched = step[work.rows]
    kernels = np.bincount(
        launched[(launched >= 0) & (kind[work.rows] == EventKind.kernel)], minlength=n
    )
    partner = made.column("events", "partner")[work.rows]
    launch_rows = np.unique(partner[(partner >= 0) & (launched >= 0)])
    launches = np.bincount(step[launch_rows][step[launch_rows] >= 0], minlength=n)
    dur = win.end - win.ts
    index = np.zeros(n, np.int64)
    for phase in np.unique(found.phase):
        mine = found.phase == phase
        index[mine] = np.arange(int(mine.sum()))
    name = trace.strings_at(trace.column("events", "name")[found.row])
    if n and found.phase[0] == "iteration":
        name = pa.nulls(n, pa.string())
    share = np.divide(100.0 * busy_t, dur, out=np.zeros(n), where=dur > 0)
    counts = request_counts(name.to_pylist())
    return pa.table(
        [
            np.full(n, rank, np.int64),
            array_of(found.phase.tolist(), pa.string()),
            index,
            np.arange(n, dtype=np.int64),
            name,
            win.ts,
            win.end,
            dur,
            found.end - found.ts,
            busy_t.astype(np.int64),
            share,
            graph_t,
            kernels[:n].astype(np.int64),
            launches[:n].astype(np.int64),
            *(array_of(c, pa.int64()) for c in counts),
        ],
        schema=SCHEMA,
    )


def _graph_busy(trace: Trace, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per window, the time the GPU ran work of graph replays inside it (ns)."""
    if not has_graph_launches(trace):
        return np.zeros(len(start), np.int64)
    rows = graph_replays(trace).gpu
    ts = trace.column("events", "ts")[rows]
    busy = ops.union(ts, ts + np.maximum(trace.column("events", "dur")[rows], 0))
    return window_totals(start, end, busy.starts, busy.ends).astype(np.int64)


def request_counts(names: list) -> list[list[Optional[int]]]:
    """Per name, what a vLLM/SGLang step name says (STEP_NAME): prefill and decode requests,
    their query tokens, and the key tokens where the layout writes them; for SGLang's batch
    annotation (SGLANG_STEP) the requests only; None elsewhere."""
    out: list[list[Optional[int]]] = [[], [], [], [], []]
    for name in names:
        m = STEP_NAME.match(name or "")
        row: list[Optional[int]] = [None] * 5
        batch = SGLANG_STEP.match(name or "")
        if batch:
            n = int(batch.group(2))
            row[0], row[1] = (0, n) if batch.group(1) == "DECODE" else (n, 0)
        if m:
            row[0], row[1] = int(m.group(1)), int(m.group(3))
            context, generation = LAYOUT.match(m.group(2)), LAYOUT.match(m.group(4))
            if context and generation:
                row[2], row[3] = int(context.group(1)), int(generation.group(1))
                row[4] = int(context.group(2)) + int(generation.group(2))
            elif m.group(2).isdigit() and m.group(4).isdigit():
                row[2], row[3] = int(m.group(2)), int(m.group(4))
        for column, value in zip(out, row):
            column.append(value)
    return out


def _summary(table: pa.Table) -> pa.Table:
    phase = np.asarray(table.column("phase").to_pylist(), object)
    rank = as_numpy(table.column("rank"))
    dur = as_numpy(table.column("dur"))
    busy = as_numpy(table.column("gpu_busy"))
    graph = as_numpy(table.column("graph_busy"))
    kernels = as_numpy(table.column("kernels"))
    launches = as_numpy(table.column("launches"))
    order = [p for p in (*SOURCES, "iteration") if p in set(phase)]
    rows = []
    for p in order:
        mine = phase == p
        total = int(dur[mine].sum())
        rows.append(
            {
                "phase": p,
                "ranks": len(np.unique(rank[mine])),
                "count": int(mine.sum()),
                "mean_dur": float(dur[mine].mean()),
                "median_dur": float(np.median(dur[mine])),
                "p90_dur": float(np.percentile(dur[mine], 90)),
                "busy_share": 100.0 * float(busy[mine].sum()) / total if total else 0.0,
                "graph_share": _share(graph[mine].sum(), busy[mine].sum()),
                "kernels": int(kernels[mine].sum()),
                "launches": int(launches[mine].sum()),
            }
        )
    return pa.Table.from_pylist(rows, schema=SUMMARY)


def _share(part: float, whole: float) -> float:
    return 100.0 * float(part) / float(whole) if whole else 0.0


def phases(
    traces: Union[Trace, TraceSet],
    *,
    source: Optional[str] = None,
    ranks: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """One row per pass of every selected rank, by rank and time: phase, index (within
    its phase), step (within the rank: the step number it gets from
    `--steps-from <phase>` is its index), name of the event that marks it (null for
    iterations), start, end, dur (its window, module doc), host_dur, gpu_busy,
    busy_share (% of dur), graph_busy (of gpu_busy, in graph replays), kernels, launches.
    Side table "summary": per phase, ranks, count, mean, median and p90 dur, busy share, graph
    share (% of the busy time in graph replays), kernels, launches.

    source   one of hta_fast.frame.SOURCES but "profiler" and "host"; None: the first of TIERS that
             finds passes. Whole ranks are looked at: a selection's steps, window and
             streams are not applied (a note says so)."""
    sel = select.selection_of(selection, ranks)
    passes = [s for s in SOURCES if s not in ("profiler", "host")]
    if source is not None and source not in passes:
        raise ValueError(f"no pass source {source!r}; sources are {', '.join(passes)}")
    chosen = [(r, t) for r, t, _ in select.each_rank(traces, select.Selection(ranks=sel.ranks))]
    tiers = TIERS if source is None else ((source,),)
    notes: list[str] = []
    if sel.steps is not None or sel.window is not None or sel.streams is not None:
        notes.append(
            "phases looks at whole ranks: the selection's steps, window and streams are not applied"
        )
    for tier in tiers:
        found = [(r, t, *_passes(t, tier)) for r, t in chosen]
        if any(len(f[2].row) for f in found):
            break
    parts = [_rank_table(r, t, p) for r, t, p, _ in found if len(p.row)]
    opened = [r for r, t, p, _ in found if len(p.row) and _opens_busy(t)]
    if opened:
        notes.append(
            f"rank(s) {', '.join(map(str, opened[:8]))}{' ...' if len(opened) > 8 else ''}: "
            "the trace opens with the GPU busy on work it does not hold; the first pass is "
            "timed from its first recorded GPU event"
        )
    notes += [f"rank {r}: {note}" for r, _, _, note in found]
    if not any(len(p.row) for _, _, p, _ in found):
        notes.append(
            "no passes found: no annotation or Python frame names a phase "
            "(docs/inference.md lists the names) and no launch sequence repeats"
            if source is None
            else f"no {source} passes found"
        )
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    return Result(
        "phases",
        table,
        tables={"summary": _summary(table)},
        notes=notes,
        params=dict(selection=sel, source=source),
    )


def marks_passes(traces: Union[Trace, TraceSet], ranks: Optional[Sequence[int]] = None) -> bool:
    """Whether a selected rank marks passes by name (a tier of TIERS before repeated launch
    sequences), looked for tier by tier as phases looks, stopping at the first rank that has
    one: what phases finds without finding the sequences rank by rank (find_repeat: 18 of a
    1,024-rank report's seconds), for a caller that leaves those out."""
    chosen = [t for _, t, _ in select.each_rank(traces, select.Selection(ranks=ranks))]
    named = [tier for tier in TIERS if tier != ("iterations",)]
    return any(len(_passes(t, tier)[0].row) for tier in named for t in chosen if may_mark(t, tier))


def _opens_busy(trace: Trace) -> bool:
    return unrecorded_head(trace, gpu_work(trace, None)) is not None
