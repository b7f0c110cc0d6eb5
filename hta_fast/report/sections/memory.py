"""The report's memory section: each device's allocated and reserved memory over time (the
allocator's [memory] events) and the operators that allocate most, as the TensorBoard
profiler plugin's memory view shows them."""

from __future__ import annotations

from typing import Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..page.context import Context, Section, section
from ..page.figures import figure
from ..page.tables import html_table
from .timeline import Tabler, drawn_note, only_ranks, series

# The operator columns a reader compares first, in the plugin's order.
OPERATOR_COLUMNS = (
    "device",
    "name",
    "calls",
    "alloc_count",
    "alloc_bytes",
    "increase",
    "self_alloc_count",
    "self_alloc_bytes",
    "self_increase",
    "peak_increase",
)
_SUMMED = ("calls", "alloc_count", "alloc_bytes", "increase")
_SELF = ("self_alloc_count", "self_alloc_bytes", "self_increase")


@section("memory", "operator_memory")
def memory(
    ctx: Context, ranks: Optional[Sequence[int]] = None, tabler: Tabler = html_table
) -> Section:
    r = ctx.result("operator_memory")
    notes = ctx.notes("operator_memory") + drawn_note(ranks)
    curve = only_ranks(r["curve"], ranks)
    if curve.num_rows == 0:
        return Section(notes=notes)
    figures = []
    for column in ("allocated", "reserved"):
        have = curve.filter(pc.is_valid(curve[column]))
        mib = pc.divide(pc.cast(have[column], pa.float64()), float(2**20))
        table = pa.table(
            {"rank": have["rank"], "device": have["device"], "ts": have["ts"], "mib": mib}
        )
        lines, _ = series(table, "device", "mib", ctx, column)
        if lines:
            figures.append(
                figure(lines, f"memory {column}", "ms since the first memory event", "MiB")
            )
    return Section(
        "What the caching allocator held on each device after every allocation and free "
        "(Total Allocated, Total Reserved), and the operators whose calls allocated most: "
        "inclusive numbers count the operators nested in a call too, self numbers only its "
        "own code; peak increase is the most one call raised the device's allocated memory.",
        figures=figures,
        tables=[
            html_table("operators by bytes allocated", _by_operator(r.table), limit=30),
            *_per_device(r["devices"], tabler),
        ],
        notes=notes,
    )


def _by_operator(table: pa.Table) -> pa.Table:
    """Summed over ranks per (device, operator), most bytes allocated first."""
    if table.num_rows == 0:
        return table.select(list(OPERATOR_COLUMNS))
    grouped = table.group_by(["device", "name"]).aggregate(
        [(c, "sum") for c in (*_SUMMED, *_SELF)] + [("peak_increase", "max")]
    )
    renamed = grouped.rename_columns(
        [n.rsplit("_", 1)[0] if n.endswith(("_sum", "_max")) else n for n in grouped.column_names]
    )
    out = renamed.select(list(OPERATOR_COLUMNS)).sort_by([("alloc_bytes", "descending")])
    # Keep the byte units the analysis gives its columns.
    return pa.Table.from_arrays(
        out.columns, schema=pa.schema([table.schema.field(c) for c in OPERATOR_COLUMNS])
    )


def _per_device(devices: pa.Table, tabler: Tabler) -> list:
    """The devices table; the host's rows and the GPUs' apart, so that a distribution over
    many ranks never mixes the two."""
    host = pc.equal(devices["device"], "CPU")
    return [
        tabler(f"memory per device: {what}", part)
        for what, part in (
            ("GPUs", devices.filter(pc.invert(host))),
            ("host", devices.filter(host)),
        )
        if part.num_rows
    ]
