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

from ..._arrow import array_of
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_links import match_collectives
from ..graph.chain import Chain
from ..graph.walk import walk_groups
from .cross_rank import LinkedWindow, link_windows, measured_weights, replay_together
from .step_rows import error_pct

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("measured", pa.int64(), metadata=NS),
        pa.field("replayed", pa.int64(), metadata=NS),
        pa.field("error_pct", pa.float64(), metadata=PCT),
        pa.field("collectives", pa.int64()),
        pa.field("passes", pa.int64()),
        pa.field("no_cross_rank", pa.int64(), metadata=NS),
        pa.field("no_cross_rank_error_pct", pa.float64(), metadata=PCT),
    ]
)


def _collectives_per_step(chain: Chain, linked: LinkedWindow) -> np.ndarray:
    """Per step, the linked collectives it launched: one carried into a step (launched in the
    step before) counts for the step before, so each collective counts once."""
    step_of = np.full(len(chain.graph.rows), -1, np.int64)
    step_of[chain.own_gpu] = chain.own_gpu_step
    of = step_of[linked.comm]
    return np.bincount(of[of >= 0], minlength=len(chain.steps))


def replay_ranks(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
    chained: bool = True,
) -> Result:
    """One row per (rank, step): measured and replayed step time (all ranks of the step
    replayed together), the error, the collectives tied to other ranks, the fixed point's
    passes, and the no_cross_rank ablation with its error. chained (default): each rank's
    consecutive selected steps are one graph (hta_fast.model.graph.walk), all ranks' chains of
    the same steps replayed together; False: each step's windows together."""
    sel = select.selection_of(selection, ranks, steps)
    matched = match_collectives(traces)
    rows: list[dict] = []
    for chains in walk_groups(traces, sel, chained):
        linked = link_windows([(c.rank, c.graph) for c in chains], matched)
        weights = measured_weights(linked)
        together = replay_together(linked, weights)
        for c, lw, t, w in zip(chains, linked, together.times, weights):
            measured = c.spans(c.measured_times())
            replayed, alone = c.spans(t), c.spans(c.graph.replay(w))
            n_comm = _collectives_per_step(c, lw)
            for k, step in enumerate(c.steps):
                m, r, a = int(measured[k]), int(replayed[k]), int(alone[k])
                rows.append(
                    {
                        "rank": c.rank,
                        "step": step,
                        "measured": m,
                        "replayed": r,
                        "error_pct": error_pct(r, m),
                        "collectives": int(n_comm[k]),
                        "passes": together.passes,
                        "no_cross_rank": a,
                        "no_cross_rank_error_pct": error_pct(a, m),
                    }
                )
    # Steps in order, ranks within a step.
    rows.sort(key=lambda r: (r["step"] is not None, r["step"] or 0, r["rank"]))
    table = pa.table(
        {f.name: array_of([r[f.name] for r in rows], f.type) for f in SCHEMA}, schema=SCHEMA
    )
    notes = (
        []
        if not rows or max(r["collectives"] for r in rows) > 0
        else [
            "no collective is shared by two of the selected ranks in a step: each rank replays alone"
        ]
    )
    return Result("replay_ranks", table, notes=notes, params={"selection": sel})
