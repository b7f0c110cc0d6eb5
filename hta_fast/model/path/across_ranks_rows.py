"""Tables of the critical path across ranks (hta_fast.model.path.across_ranks): one summary row
per step and the path's breakdown rows, each on the rank it runs on.

A jump is one breakdown row of type and bound_by "cross_rank": the collective's time on the
held rank from the moment the last rank reached it (its after_last wait), charged to that
rank's collective kernel; from_rank names the rank that arrived last. The summary's shares
(BOUND_BY and cross_rank) add up to 100 % of the path.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..._arrow import array_of
from ...frame.fields import NS, PCT
from ...trace import Trace
from ..replay.cross_rank import LinkedWindow
from .across_ranks import Jump, PathAcrossRanks, Stretch
from .bounds import BOUND_BY
from .rows import BREAKDOWN, breakdown_rows, event_columns

CROSS_RANK = "cross_rank"
SHARES = BOUND_BY + [CROSS_RANK]

SUMMARY = pa.schema(
    [
        pa.field("step", pa.int64()),
        pa.field("critical_path_length", pa.int64(), metadata=NS),
        pa.field("replayed_step", pa.int64(), metadata=NS),
        pa.field("measured_step", pa.int64(), metadata=NS),
        pa.field("end_rank", pa.int64()),
        pa.field("start_rank", pa.int64()),
        pa.field("jumps", pa.int64()),
    ]
    + [pa.field(b, pa.float64(), metadata=PCT) for b in SHARES]
)

BREAKDOWN_ACROSS = BREAKDOWN.append(pa.field("from_rank", pa.int64()))


def _jump_row(
    step: Optional[int], held: LinkedWindow, trace: Trace, jump: Jump, from_rank: int
) -> pa.Table:
    event = held.graph.rows[held.comm[[jump.collective]]]
    return pa.table(
        {
            "rank": array_of([held.rank], pa.int64()),
            "step": array_of([step], pa.int64()),
            "duration": array_of([jump.wait], pa.int64()),
            "type": array_of([CROSS_RANK]),
            **event_columns(trace, event, np.ones(1, bool)),
            "bound_by": array_of([CROSS_RANK]),
            "from_rank": array_of([from_rank], pa.int64()),
        },
        schema=BREAKDOWN_ACROSS,
    )


def path_tables(
    step: Optional[int],
    windows: Sequence[LinkedWindow],
    traces: Sequence[Trace],
    weights: Sequence[np.ndarray],
    replayed: Sequence[int],
    path: PathAcrossRanks,
    measured: Optional[Sequence[int]] = None,
) -> tuple[dict[str, Any], pa.Table]:
    """The step's SUMMARY row and its BREAKDOWN_ACROSS rows. replayed (and measured, default:
    each window's measured end): each window's replayed step (ns since its own start, or a
    chained step's span); replayed_step and measured_step are those of the rank that ends
    last."""
    parts, bounds, durations = [], [], []
    jumps = 0
    for piece in path.pieces:
        if isinstance(piece, Stretch):
            w = windows[piece.window]
            rows, bound = breakdown_rows(
                w.rank,
                step,
                w.graph,
                traces[piece.window],
                piece.edges,
                weights[piece.window],
                piece.durations,
            )
            parts.append(rows.append_column("from_rank", pa.nulls(rows.num_rows, pa.int64())))
            bounds.append(np.asarray(BOUND_BY, object)[bound])  # names, beside cross_rank
            durations.append(piece.durations)
        else:
            last = windows[piece.last].rank
            parts.append(_jump_row(step, windows[piece.held], traces[piece.held], piece, last))
            bounds.append(np.array([CROSS_RANK]))
            durations.append(np.array([piece.wait], np.int64))
            jumps += last != windows[piece.held].rank
    bound_all = np.concatenate(bounds)
    duration = np.concatenate(durations)
    total = int(duration.sum())
    row: dict[str, Any] = {
        "step": step,
        "critical_path_length": path.length,
        "replayed_step": replayed[path.end_window],
        "measured_step": windows[path.end_window].graph.measured_end
        if measured is None
        else measured[path.end_window],
        "end_rank": windows[path.end_window].rank,
        "start_rank": windows[path.start_window].rank,
        "jumps": jumps,
    }
    row.update(
        {
            b: (100.0 * float(duration[bound_all == b].sum()) / total if total else None)
            for b in SHARES
        }
    )
    return row, pa.concat_tables(parts)


def summary_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {f.name: array_of([r[f.name] for r in rows], f.type) for f in SUMMARY}, schema=SUMMARY
    )


def breakdown_table(parts: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(parts) if parts else BREAKDOWN_ACROSS.empty_table()
