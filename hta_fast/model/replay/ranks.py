"""Replay of all ranks of each step together (hta_fast.model.replay.cross_rank): does the model with
its cross-rank collective rule reproduce every rank's measured steps? Per (rank, step):

    error_pct = |replayed - measured| / measured × 100

Beside it the ablation no_cross_rank: each rank replayed alone with every collective taking
only its time moving data, as if no rank ever waited for another (what the cross-rank rule
buys).
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_links import match_collectives
from .cross_rank import link_windows, measured_weights, replay_together
from ..graph.chains import chain_groups
from ..graph.windows import step_groups

SCHEMA = pa.schema([
    pa.field("rank", pa.int64()), pa.field("step", pa.int64()),
    pa.field("measured", pa.int64(), metadata=NS), pa.field("replayed", pa.int64(), metadata=NS),
    pa.field("error_pct", pa.float64(), metadata=PCT),
    pa.field("collectives", pa.int64()), pa.field("passes", pa.int64()),
    pa.field("no_cross_rank", pa.int64(), metadata=NS),
    pa.field("no_cross_rank_error_pct", pa.float64(), metadata=PCT),
])


def _error(predicted: int, measured: int) -> Optional[float]:
    return 100.0 * abs(predicted - measured) / measured if measured > 0 else None


def replay_ranks(traces: Union[Trace, TraceSet], *, ranks: Ranks = None, steps: Steps = None,
                 selection: Optional[select.Selection] = None, chained: bool = True) -> Result:
    """One row per (rank, step): measured and replayed step time (all ranks of the step
    replayed together), the error, the collectives tied to other ranks, the fixed point's
    passes, and the no_cross_rank ablation with its error. chained (default): each rank's
    consecutive selected steps are one graph (hta_fast.model.graph.chains), all ranks' chains of
    the same steps replayed together; False: each step's windows together."""
    sel = select.selection_of(selection, ranks, steps)
    matched = match_collectives(traces)
    out: dict[str, list] = {f.name: [] for f in SCHEMA}
    if chained:
        for chains in chain_groups(traces, sel):
            linked = link_windows([(c.rank, c.graph) for c in chains], matched)
            weights = measured_weights(linked)
            together = replay_together(linked, weights)
            for c, lw, t, w in zip(chains, linked, together.times, weights):
                m_span = c.spans(c.measured_times())
                r_span, a_span = c.spans(t), c.spans(c.graph.replay(w))
                # A linked collective counts for the step that launched it.
                step_of = np.full(len(c.graph.rows), -1, np.int64)
                step_of[c.own_gpu] = c.own_gpu_step
                n_comm = np.bincount(step_of[lw.comm][step_of[lw.comm] >= 0],
                                     minlength=len(c.step))
                for i, step in enumerate(c.step.tolist()):
                    crow = {"rank": c.rank, "step": step, "measured": int(m_span[i]),
                           "replayed": int(r_span[i]),
                           "error_pct": _error(int(r_span[i]), int(m_span[i])),
                           "collectives": int(n_comm[i]), "passes": together.passes,
                           "no_cross_rank": int(a_span[i]),
                           "no_cross_rank_error_pct": _error(int(a_span[i]), int(m_span[i]))}
                    for key, v in crow.items():
                        out[key].append(v)
    for group in step_groups(traces, sel, whole_traces_only=chained):
        linked = link_windows([(w.rank, w.graph) for w in group], matched)
        weights = measured_weights(linked)
        together = replay_together(linked, weights)
        times, passes = together.times, together.passes
        for win, lw, t, w in zip(group, linked, times, weights):
            measured = win.graph.measured_end
            alone = int(win.graph.replay(w).max())
            row = {"rank": win.rank, "step": win.step, "measured": measured,
                   "replayed": int(t.max()), "error_pct": _error(int(t.max()), measured),
                   "collectives": len(lw.comm), "passes": passes, "no_cross_rank": alone,
                   "no_cross_rank_error_pct": _error(alone, measured)}
            for k, v in row.items():
                out[k].append(v)
    table = pa.table({f.name: pa.array(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    if chained:  # steps in order, ranks within a step, as the windows come
        order = sorted(range(table.num_rows), key=lambda i: (
            out["step"][i] is not None, out["step"][i] or 0, out["rank"][i]))
        table = table.take(pa.array(order, pa.int64()))
    notes = [] if table.num_rows == 0 or max(out["collectives"]) > 0 else \
        ["no collective is shared by two of the selected ranks in a step: each rank replays alone"]
    return Result("replay_ranks", table, notes=notes, params={"selection": sel})
