"""The what-if replay (hta_fast.model.whatif.steps.what_if) of checked edits on selected steps:
the duration changes (hta_fast.model.whatif.changes), each step's graph replayed with and
without them, and the result's tables. The device edit's changes come from the function
given (hta_fast.model.whatif.device_changes.edit_changes, which what_if gives): a caller whose
edits never name a device (the doctor) imports none of the kernel models behind it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Union

import pyarrow as pa

from ..._arrow import array_of
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_links import match_collectives
from ..graph.chain import step_label
from ..graph.walk import walk, walk_groups
from ..path.across_ranks_rows import breakdown_table, summary_table
from ..path.bounds import BOUND_BY
from ..path.ranks import step_paths_across
from .changes import DeviceEdit, duration_changes
from .edits import Edits
from .group import replay_group
from .per_step import per_step_note, per_step_table, step_bands
from .rows import WAITING, chain_totals, group_rows, predicted_spans
from .unmatched import check_edits_match

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("measured", pa.int64(), metadata=NS),
        pa.field("replayed", pa.int64(), metadata=NS),
        pa.field("predicted", pa.int64(), metadata=NS),
        pa.field("change_pct", pa.float64(), metadata=PCT),
        pa.field("bound_before", pa.string()),
        pa.field("bound_after", pa.string()),
    ]
    + [pa.field(b, pa.float64(), metadata=PCT) for b in BOUND_BY]
    + [pa.field(WAITING, pa.float64(), metadata=PCT), pa.field("held_by", pa.int64())]
    # the band of predicted (hta_fast.model.whatif.per_step)
    + [pa.field("predicted_low", pa.int64(), metadata=NS)]
    + [pa.field("predicted_high", pa.int64(), metadata=NS)]
)

TOTALS_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("steps", pa.int64()),
        pa.field("replayed", pa.int64(), metadata=NS),
        pa.field("predicted", pa.int64(), metadata=NS),
    ]
)


def _notes(rows: list[dict[str, Any]], edits: Edits) -> list[str]:
    out = [
        f"rank {row['rank']} {step_label(row['step'])}: the step is now mostly "
        f"{row['bound_after']} (was {row['bound_before']})"
        for row in rows
        if row["bound_before"] != row["bound_after"]
    ]
    held = sorted({int(r["held_by"]) for r in rows if r["held_by"] is not None})
    if "COMM" in (edits.kernel_class or {}) and held:
        out.append(
            "scaling COMM scales each collective's time moving data (its shortest duration "
            "over the ranks); the rest of a communication kernel's time on a rank is waiting "
            f"for the last rank to arrive (held_by: {', '.join(map(str, held))}), which only "
            "that rank's own work moves (--no-cross-rank replays each rank alone, where COMM "
            "scales a kernel's whole duration, its wait included)"
        )
    return out


def _world_note(per_step: dict[str, Any], rows: list[dict[str, Any]], edits: Edits) -> list[str]:
    """With the world-size edit, why a step that did not grow did not."""
    replayed, predicted = per_step["replayed"], per_step["predicted"]
    if not edits.changes_world or replayed is None or predicted is None:
        return []
    if predicted > replayed * 1.001:
        return []
    bounds = [r["bound_before"] for r in rows if r["bound_before"]]
    most = max(set(bounds), key=bounds.count) if bounds else "unknown"
    return [
        f"the time per step moved {100 * (predicted / replayed - 1):+.2f} %: the re-costed "
        f"collectives are mostly off the critical path (the steps were mostly {most}), so "
        "their new time moving data and waiting hides behind other work"
    ]


def replay_run(
    traces: Union[Trace, TraceSet],
    edits: Edits,
    sel: select.Selection,
    *,
    cross_rank: bool = True,
    chained: bool = True,
    allow_unmatched: bool = False,
    device: Optional[DeviceEdit] = None,
) -> Result:
    """what_if's result (hta_fast.model.whatif.steps.what_if, which says what it holds) for
    `edits` on the selection `sel`; a device edit takes its changes from `device` (edits
    with a device and no `device` are a ValueError)."""
    if not allow_unmatched:
        check_edits_match(traces, edits, sel)
    together = cross_rank and len(select.as_traceset(traces)) > 1
    recosts = edits.changes_bandwidth or edits.changes_world
    matched = match_collectives(traces) if together or recosts else None
    changes = duration_changes(traces, edits, matched, sel, device)
    rows: list[dict[str, Any]] = []
    path_rows: list[dict[str, Any]] = []
    path_parts: list[pa.Table] = []
    totals: list[dict[str, Any]] = []
    # with a device edit, the replays with the kernels at their band's ends: rows, totals
    bands: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
        b: ([], []) for b in changes.bands
    }
    groups = (
        walk_groups(traces, sel, chained) if together else ([c] for c in walk(traces, sel, chained))
    )
    for chains in groups:
        group = replay_group(chains, edits, changes, matched if together else None)
        rows += group_rows(group)
        totals += chain_totals(group)
        for band, per_rank in changes.bands.items():
            edge = dataclasses.replace(changes, per_rank=per_rank)
            g = replay_group(chains, edits, edge, matched if together else None)
            bands[band][0].extend(predicted_spans(g))
            bands[band][1].extend(chain_totals(g))
        if group.linked is not None and group.together is not None:
            # The predicted path of each step across its ranks (hta_fast.model.path.ranks).
            for row, part in step_paths_across(
                chains, group.linked, [r.w_edit for r in group.ranks], group.together
            ):
                path_rows.append(row)
                path_parts.append(part)
    if together:
        rows.sort(key=lambda row: (row["step"] is not None, row["step"] or 0, row["rank"]))
    else:
        rows.sort(key=lambda row: (row["rank"], row["step"] is not None, row["step"] or 0))
    by_band = {
        b: (b_rows, b_totals if chained else None) for b, (b_rows, b_totals) in bands.items()
    }
    step_bands(rows, by_band)
    table = pa.table(
        {f.name: array_of([r[f.name] for r in rows], f.type) for f in SCHEMA}, schema=SCHEMA
    )
    paths = (
        {
            "path_across_ranks": summary_table(path_rows),
            "path_across_ranks_breakdown": breakdown_table(path_parts),
        }
        if together
        else {}
    )
    if chained:
        paths["totals"] = pa.table(
            {f.name: array_of([t[f.name] for t in totals], f.type) for f in TOTALS_SCHEMA},
            schema=TOTALS_SCHEMA,
        )
    paths["per_step"] = per_step_table(rows, totals if chained else None, by_band)
    if changes.pairing is not None:
        paths["durations_from"] = changes.pairing
    paths.update(changes.tables)
    per_step = paths["per_step"].to_pylist()[0]
    step_note = per_step_note(per_step, chained) + _world_note(per_step, rows, edits)
    totals_note = (
        [
            "per rank, the steps together (first start to last end), replayed and predicted: "
            "result['totals'] (where an edit lets the host run ahead the steps overlap, and "
            "this, not their sum, is the time they take)"
        ]
        if chained and totals
        else []
    )
    return Result(
        "what_if",
        table,
        tables=paths,
        notes=changes.notes + _notes(rows, edits) + step_note + totals_note,
        params={"selection": sel, **edits.params(), "cross_rank": together, "chained": chained},
    )
