"""The report's inference section: the passes a serving stack or pipeline marked (prefill,
decode, mixed and denoising steps, model forwards), per phase and one by one, each timed as
the doctor times steps (analysis.inference.phases). One line when the traces mark none: the
repeated launch sequences that phases falls back to are a training loop's, not passes."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import array_of, as_numpy
from ...analysis.inference.phases import marks_passes
from ...frame.fields import NS, PCT
from ..page.context import Context, Section, section
from ..page.figures import bar, figure
from ..page.tables import html_table

PASS_COLUMNS = (
    "rank",
    "phase",
    "index",
    "name",
    "dur",
    "host_dur",
    "gpu_busy",
    "busy_share",
    "graph_busy",
    "kernels",
    "launches",
    "prefill_requests",
    "decode_requests",
    "context_tokens",
)
ABOUT = (
    "Each pass is timed from its host start (or the end of the pass before it) to the end of "
    "the GPU work it launched, as the doctor times steps; busy_share is the GPU's busy share "
    "of that window, the doctor's utilization with --steps-from PHASE; graph_busy (and the "
    "phase's graph_share) the part of it graph replays ran. Requests and tokens are what a "
    "vLLM/SGLang step's name says."
)


NONE_MARKED = "No inference passes marked on the selected ranks."


@section("inference", "phases", "graph_replays")
def inference(ctx: Context) -> Section:
    if not marks_passes(ctx.traces, ctx.selection.ranks):
        return Section(NONE_MARKED)
    res = ctx.result("phases")
    t = res.table
    t = t.filter(pc.not_equal(t["phase"], "iteration")) if t.num_rows else t
    if t.num_rows == 0:
        return Section(NONE_MARKED)
    per_phase = res["summary"]
    per_phase = per_phase.filter(pc.not_equal(per_phase["phase"], "iteration"))
    phases = per_phase.column("phase").to_pylist()
    data = [
        bar(phases, as_numpy(per_phase.column(c)) / 1e6, label, i)
        for i, (c, label) in enumerate((("mean_dur", "mean"), ("p90_dur", "p90")))
    ]
    tables = [
        html_table("passes by phase", per_phase, limit=None),
        html_table("passes (longest first)", _longest(t), PASS_COLUMNS, limit=40),
    ]
    if int(pc.sum(t["graph_busy"]).as_py() or 0):
        tables.append(
            html_table(
                "operators the graph-replayed GPU work counts for",
                replayed_operators(ctx.result("graph_replays")["events"]),
                limit=15,
            )
        )
    return Section(
        ABOUT,
        figures=[figure(data, "Pass time by phase", "", "ms")],
        tables=tables,
        notes=ctx.notes("phases"),
    )


def replayed_operators(events: pa.Table) -> pa.Table:
    """Per operator the replayed GPU events count for (the capture's, or the graph
    launch's where no capture matched): events, GPU time and its share, longest first."""
    if events.num_rows == 0:
        return pa.table({"op_name": array_of([], pa.string())})
    g = events.group_by("op_name").aggregate([("dur", "sum"), ("dur", "count")])
    total = max(int(pc.sum(g["dur_sum"]).as_py() or 0), 1)
    g = g.sort_by([("dur_sum", "descending")])
    return pa.table(
        [
            g["op_name"],
            g["dur_count"].cast(pa.int64()),
            g["dur_sum"].cast(pa.int64()),
            pc.multiply(pc.divide(g["dur_sum"].cast(pa.float64()), total), 100.0),
        ],
        schema=pa.schema(
            [
                pa.field("op_name", pa.string()),
                pa.field("events", pa.int64()),
                pa.field("gpu_time", pa.int64(), metadata=NS),
                pa.field("share", pa.float64(), metadata=PCT),
            ]
        ),
    )


def _longest(t: pa.Table) -> pa.Table:
    return t.take(pc.sort_indices(t, [("dur", "descending"), ("rank", "ascending")]))
