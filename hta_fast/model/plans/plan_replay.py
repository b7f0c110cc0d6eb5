"""The step time of an embedding sharding plan, by replay.

embedding_cost.evaluate_plan predicts each rank's lookup time under a plan (table -> rank).
Here those times replace the measured durations of the ranks' lookup kernels in a trace of
the job (a DLRM-like trace), and the steps are replayed (what_if; all ranks of a step
together when there are several, so a rank that looks up longer holds the others at the
next collective). Per (rank, step), the kernels of the replaced family share the planned
time in proportion to their measured durations.

Plan rank i is the traces' i-th rank in sorted order. In plan_step_time the all-to-all
kernels keep their measured times; replay_plan also takes a factor per matched collective on
its time moving data, with which hta_fast.model.plans.shard sets the pooled all-to-all to the
collective model's time at a plan's sizes.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of, as_numpy
from ...frame import select
from ...frame.fields import NS
from ...frame.result import Result
from ...frame.select import Steps, as_traceset
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_links import MatchedCollectives
from ..graph.walk import walk_groups
from ..whatif.changes import DurationChanges
from ..whatif.edits import Edits
from ..whatif.group import replay_group
from ..whatif.rows import group_rows
from ..whatif.steps import what_if
from .embedding_cost import LookupCostModel, TableSpec, evaluate_plan
from .embedding_lookups import lookup_kernels


def _family_name(cost: LookupCostModel, family: Optional[str], kernel_family: Optional[str]) -> str:
    if kernel_family is not None:
        return kernel_family
    if family is not None:
        return family
    if len(cost.fits) == 1:
        return next(iter(cost.fits))
    raise ValueError(f"name the lookup kernel family to replace, one of {sorted(cost.fits)}")


def family_lookups(lookups: pa.Table, name: str) -> pa.Table:
    """The rows of lookup_kernels' table of kernel family `name`; ValueError naming the
    families found where none is."""
    fam = np.asarray(lookups["family"].to_pylist(), dtype=object)
    if not (fam == name).any():
        found = sorted(set(fam.tolist())) or "none"
        raise ValueError(f"no {name!r} lookup kernels in these traces (found: {found})")
    return lookups.filter(array_of(fam == name))


def lookup_changes(
    ts: TraceSet, lookups: pa.Table, planned: np.ndarray
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], dict, dict]:
    """The duration changes that give plan rank i (the traces' i-th rank) planned[i] ns of
    lookup per step, shared among its kernels in `lookups` (one family) in proportion to
    their measured durations (evenly where they measured 0); and per (rank, step) the
    lookup time measured and planned."""
    lk_rank = as_numpy(lookups["rank"])
    changes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    measured_by: dict[tuple[int, int], float] = {}
    planned_by: dict[tuple[int, int], float] = {}
    for i, rank in enumerate(ts.ranks):
        mine = lk_rank == rank
        rows = as_numpy(lookups["row"])[mine]
        dur = as_numpy(lookups["dur"])[mine].astype(np.float64)
        step = ts[rank].column("events", "step")[rows].astype(np.int64)
        keys, code = np.unique(step, return_inverse=True)
        code = code.reshape(-1)
        total = np.bincount(code, dur, minlength=len(keys))
        count = np.bincount(code, minlength=len(keys))
        share = np.where(total[code] > 0, dur / np.maximum(total[code], 1), 1.0 / count[code])
        changes[rank] = (rows, planned[i] * share - dur)
        for k, t in zip(keys.tolist(), total.tolist()):
            measured_by[(rank, k)], planned_by[(rank, k)] = t, float(planned[i])
    return changes, measured_by, planned_by


def replay_plan(
    ts: TraceSet,
    changes: dict[int, tuple[np.ndarray, np.ndarray]],
    factor: Optional[np.ndarray],
    matched: Optional[MatchedCollectives],
    steps: Steps = None,
) -> list[dict[str, Any]]:
    """The what-if rows (rank, step, measured, replayed, predicted, ...) of the steps
    replayed with `changes` (per rank, event rows and ns added) and each matched
    collective's time moving data multiplied by factor[c] (the all-to-all at a plan's
    sizes; None: as measured); the ranks of a step together where `matched` is given."""
    sel = select.selection_of(None, None, steps)
    rows: list[dict[str, Any]] = []
    edits = Edits()
    delta = DurationChanges(changes, factor, [])
    for chains in walk_groups(ts, sel, True):
        rows += group_rows(replay_group(chains, edits, delta, matched))
    return rows


def plan_step_time(
    traces: Union[Trace, TraceSet],
    tables: Sequence[TableSpec],
    plan: Mapping[str, int],
    *,
    cost: LookupCostModel,
    family: Optional[str] = None,
    kernel_family: Optional[str] = None,
    comm: Any = None,
    cross_rank: bool = True,
    steps: Steps = None,
) -> Result:
    """Result "plan_step_time", one row per (rank, step): the what_if columns (measured,
    replayed, predicted step time, change_pct, bounds, shares) and lookup_measured /
    lookup_planned (ns of the replaced lookup kernels in the step, as measured and under the
    plan). `family`: the cost model's curve; `kernel_family`: the trace's kernels to replace
    (default: the same name, or the model's only curve). params: the plan's evaluation
    (max_lookup_ns, a2a_bytes, ...) and step_ns (per step, the slowest rank's predicted
    time)."""
    ts = as_traceset(traces)
    ranks = ts.ranks
    evaluation = evaluate_plan(tables, plan, len(ranks), cost=cost, family=family, comm=comm)
    planned = np.asarray(as_numpy(evaluation.table["lookup_ns"]), np.float64)
    name = _family_name(cost, family, kernel_family)
    lookups = family_lookups(lookup_kernels(ts).table, name)
    changes, measured_by, planned_by = lookup_changes(ts, lookups, planned)
    result = what_if(ts, Edits(duration_change=changes), cross_rank=cross_rank, steps=steps)
    table = result.table
    keys_of = list(zip(table["rank"].to_pylist(), table["step"].to_pylist()))
    table = table.append_column(
        pa.field("lookup_measured", pa.float64(), metadata=NS),
        array_of([measured_by.get(k) for k in keys_of], pa.float64()),
    )
    table = table.append_column(
        pa.field("lookup_planned", pa.float64(), metadata=NS),
        array_of([planned_by.get(k) for k in keys_of], pa.float64()),
    )
    step_ns: dict[Optional[int], int] = {}
    for (_, s), p in zip(keys_of, table["predicted"].to_pylist()):
        step_ns[s] = max(step_ns.get(s, 0), p)
    lk_rank = as_numpy(lookups["rank"])
    missing = sorted(r for r in ranks if not (lk_rank == r).any())
    notes = list(evaluation.notes) + list(result.notes)
    if missing:
        notes.append(
            f"rank(s) {missing} have no {name!r} lookup kernels: their planned "
            "lookup time is not in the replay"
        )
    return Result(
        "plan_step_time",
        table,
        notes=notes,
        params={**evaluation.params, "kernel_family": name, "step_ns": step_ns},
    )


def compare_plans(
    traces: Union[Trace, TraceSet],
    tables: Sequence[TableSpec],
    plans: Mapping[str, Mapping[str, int]],
    *,
    cost: LookupCostModel,
    family: Optional[str] = None,
    kernel_family: Optional[str] = None,
    comm: Any = None,
    steps: Steps = None,
) -> Result:
    """Result "plan_comparison", one row per plan, fastest first: plan, step_ns (the mean over
    steps of the slowest rank's replayed step), max_lookup_ns (the plan's slowest rank's
    lookup time, without replay)."""
    rows = []
    for label, plan in plans.items():
        r = plan_step_time(
            traces,
            tables,
            plan,
            cost=cost,
            family=family,
            kernel_family=kernel_family,
            comm=comm,
            steps=steps,
        )
        per_step = list(r.params["step_ns"].values())
        rows.append(
            {
                "plan": label,
                "step_ns": float(np.mean(per_step)) if per_step else None,
                "max_lookup_ns": r.params["max_lookup_ns"],
            }
        )
    table = pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [
                pa.field("plan", pa.string()),
                pa.field("step_ns", pa.float64(), metadata=NS),
                pa.field("max_lookup_ns", pa.float64(), metadata=NS),
            ]
        ),
    )
    return Result("plan_comparison", table.sort_by("step_ns"))
