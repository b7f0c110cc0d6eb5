"""The report's inference section: the passes a serving stack or pipeline marked (prefill,
decode, mixed and denoising steps, model forwards), per phase and one by one, each timed as
the doctor times steps (analysis.inference.phases). One line when the traces mark none: the
repeated launch sequences that phases falls back to are a training loop's, not passes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..frame.fields import NS, PCT
from .context import Context, Section
from .figures import bar, figure
from .tables import html_table

ID, TITLE = "inference", "Inference passes"
PASS_COLUMNS = (
    "rank",
    "phase",
    "index",
    "name",
    "dur",
    "host_dur",
    "gpu_busy",
    "busy_share",
    "kernels",
    "launches",
    "prefill_requests",
    "decode_requests",
    "context_tokens",
)
ABOUT = (
    "Each pass is timed from its host start (or the end of the pass before it) to the end of "
    "the GPU work it launched, as the doctor times steps; busy_share is the GPU's busy share "
    "of that window, the doctor's utilization with --steps-from PHASE. Requests and tokens "
    "are what a vLLM/SGLang step's name says."
)


def inference(ctx: Context) -> Section:
    t = ctx.result("phases").table
    t = t.filter(pc.not_equal(t["phase"], "iteration")) if t.num_rows else t
    if t.num_rows == 0:
        return Section(ID, TITLE, "No inference passes marked on the selected ranks.")
    per_phase = phase_table(t)
    phases = per_phase.column("phase").to_pylist()
    data = [
        bar(phases, per_phase.column(c).to_numpy() / 1e6, label, i)
        for i, (c, label) in enumerate((("mean_dur", "mean"), ("p90_dur", "p90")))
    ]
    return Section(
        ID,
        TITLE,
        ABOUT,
        figures=[figure(data, "Pass time by phase", "", "ms")],
        tables=[
            html_table("passes by phase", per_phase, limit=None),
            html_table("passes (longest first)", _longest(t), PASS_COLUMNS, limit=40),
        ],
        notes=ctx.notes("phases"),
    )


def phase_table(t: pa.Table) -> pa.Table:
    """Per phase: ranks, passes, mean / median / p90 time (ns) and the busy share of their
    time together (%)."""
    phase = np.asarray(t.column("phase").to_pylist(), object)
    dur = t.column("dur").to_numpy().astype(np.float64)
    busy = t.column("gpu_busy").to_numpy().astype(np.float64)
    rank = t.column("rank").to_numpy()
    rows = []
    for name in dict.fromkeys(phase.tolist()):
        mine = phase == name
        d = dur[mine]
        rows.append(
            {
                "phase": name,
                "ranks": int(len(np.unique(rank[mine]))),
                "passes": int(mine.sum()),
                "mean_dur": float(d.mean()),
                "median_dur": float(np.median(d)),
                "p90_dur": float(np.percentile(d, 90)),
                "busy_share": 100.0 * float(busy[mine].sum() / d.sum()) if d.sum() else 0.0,
            }
        )
    schema = pa.schema(
        [
            pa.field("phase", pa.string()),
            pa.field("ranks", pa.int64()),
            pa.field("passes", pa.int64()),
            pa.field("mean_dur", pa.float64(), metadata=NS),
            pa.field("median_dur", pa.float64(), metadata=NS),
            pa.field("p90_dur", pa.float64(), metadata=NS),
            pa.field("busy_share", pa.float64(), metadata=PCT),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _longest(t: pa.Table) -> pa.Table:
    return t.take(pc.sort_indices(t, [("dur", "descending"), ("rank", "ascending")]))
