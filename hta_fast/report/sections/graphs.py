"""The report's graph-replays section: how much of each rank's GPU time ran in graph
replays (cudaGraphLaunch, hipGraphLaunch), and whether the operators that captured the
graphs are known (analysis.graphs.graph_replays). One line when no rank launched a graph."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import as_numpy
from ..page.context import Context, Section, section
from ..page.figures import bar, figure
from ..page.tables import html_table

REPLAY_COLUMNS = (
    "rank",
    "replay",
    "launch_name",
    "launch_ts",
    "gpu_events",
    "gpu_time",
    "gpu_time_pct",
    "capture_matched",
    "capturing_ops",
)
ABOUT = (
    "A graph launch replays a captured graph's kernels, copies and fills at once. Its GPU "
    "work counts for the operators that captured the graph when the trace (or a capture "
    "given beside it: --capture FILE) holds the capture; otherwise for the operators "
    "around the graph launch, which seldom say what ran."
)


@section("graph-replays", "graph_replays")
def graph_replays(ctx: Context) -> Section:
    r = ctx.result("graph_replays")
    t = r.table
    if t.num_rows == 0:
        return Section("No graph launches on the selected ranks.")
    per_rank = _per_rank(t)
    ranks = [f"rank {v}" for v in per_rank.column("rank").to_pylist()]
    data = [
        bar(ranks, as_numpy(per_rank.column(c)), label, i)
        for i, (c, label) in enumerate(
            (
                ("matched_pct", "replays with their capture"),
                ("unmatched_pct", "replays with no capture recorded"),
            )
        )
    ]
    return Section(
        ABOUT,
        figures=[figure(data, "GPU time in graph replays", "", "% of GPU time", barmode="stack")],
        tables=[
            html_table("graph replays per rank", per_rank, limit=40),
            html_table("replays (largest GPU time first)", _largest(t), REPLAY_COLUMNS, limit=40),
        ],
        notes=ctx.notes("graph_replays"),
    )


def _per_rank(t: pa.Table) -> pa.Table:
    """Per rank: replays, GPU events, GPU time and its share, split by whether matched."""
    rank = as_numpy(t.column("rank"))
    ranks, code = np.unique(rank, return_inverse=True)
    matched = as_numpy(t.column("capture_matched")).astype(bool)
    pct = as_numpy(t.column("gpu_time_pct"))

    def summed(values: np.ndarray) -> np.ndarray:
        return np.bincount(code, weights=values, minlength=len(ranks))

    fields = {f.name: f for f in t.schema}
    return pa.table(
        {
            "rank": ranks.astype(np.int64),
            "replays": np.bincount(code, minlength=len(ranks)).astype(np.int64),
            "matched": summed(matched.astype(float)).astype(np.int64),
            "gpu_events": summed(as_numpy(t.column("gpu_events"))).astype(np.int64),
            "gpu_time": summed(as_numpy(t.column("gpu_time"))).astype(np.int64),
            "matched_pct": summed(np.where(matched, pct, 0.0)),
            "unmatched_pct": summed(np.where(matched, 0.0, pct)),
        },
        schema=pa.schema(
            [
                fields["rank"],
                pa.field("replays", pa.int64()),
                pa.field("matched", pa.int64()),
                fields["gpu_events"],
                fields["gpu_time"],
                pa.field("matched_pct", pa.float64(), metadata=fields["gpu_time_pct"].metadata),
                pa.field("unmatched_pct", pa.float64(), metadata=fields["gpu_time_pct"].metadata),
            ]
        ),
    )


def _largest(t: pa.Table) -> pa.Table:
    return t.take(pc.sort_indices(t, [("gpu_time", "descending"), ("rank", "ascending")]))
