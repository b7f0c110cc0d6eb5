"""FLOPs and bytes of every operator group in an op table.

Each row of an op table (hta_fast.analysis.ops.op_table) is one operator name with one set of
recorded shapes, so each is parsed and costed once, however many calls it stands for. The
family modules register their models (cost.model); an operator without one, or whose
shapes are missing or do not fit its model, gets family null and `no_model` says why: it
is counted, never dropped.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from .._arrow import array_of, as_numpy
from . import models  # noqa: F401  (importing the families registers their models)
from .cost import RANK_EXTRAS, Cost, lookup
from .op_call import NoModel, OpCall

COST_SCHEMA = pa.schema(
    [
        pa.field("family", pa.string()),
        pa.field("flops", pa.float64(), metadata={"unit": "FLOP", "description": "per call"}),
        pa.field("bytes", pa.float64(), metadata={"unit": "B", "description": "per call"}),
        pa.field("precision", pa.string()),
        pa.field("matrix", pa.bool_()),
        pa.field("no_model", pa.string()),
        pa.field(
            "uncertain",
            pa.bool_(),
            metadata={"description": "the model assumed something the trace does not record"},
        ),
        pa.field("uncertain_why", pa.string()),
    ]
)


def cost_of(
    name: str,
    dims: Optional[str],
    types: Optional[str],
    concrete: Optional[str] = None,
    extra: Optional[dict] = None,
    strides: Optional[str] = None,
) -> Cost | str:
    """The Cost of one call, or the reason there is none (a string). `extra`: what other
    operators of the trace tell about this one (op_costs finds it: an FBGEMM lookup's
    output width from its autograd node, see models.fbgemm.tbe_widths); `strides`: the
    Input Strides text (an expanded input is read once)."""
    fn = lookup(name)
    if fn is None:
        return "no model for this operator"
    try:
        call = OpCall.parse(name, dims, types, concrete, strides)
        call.extra = extra
        cost = fn(call)
        if call.assumed:
            cost = dataclasses.replace(cost, assumed=(*cost.assumed, *call.assumed))
        return cost
    except NoModel as e:
        return str(e)
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as e:
        # shapes of an unexpected form: a reason, not a crash
        return f"shapes do not fit the model ({type(e).__name__}: {e})"


@functools.lru_cache(maxsize=1 << 16)
def _shared_cost(
    name: str,
    dims: Optional[str],
    types: Optional[str],
    concrete: Optional[str],
    strides: Optional[str],
) -> Cost | str:
    """cost_of for a call that needs nothing but its own arguments, remembered across ranks
    and calls: the ranks of one job hold the same shape groups (a Cost is immutable)."""
    return cost_of(name, dims, types, concrete, strides=strides)


def op_costs(table: pa.Table, extras: Optional[dict] = None) -> pa.Table:
    """COST_SCHEMA columns for each row of an op table (name, input_dims, input_type,
    concrete_inputs; and rank, when it holds several: what one operator tells about another
    is looked for within its rank). `extras`: what the trace tells about some groups beyond
    their shapes, {(rank, name, dims, types, concrete): extra} (rank 0 without a rank
    column; model.cat_sizes.cat_extras)."""
    cols = [table[c].to_pylist() for c in ("name", "input_dims", "input_type", "concrete_inputs")]
    strides = (
        table["input_strides"].to_pylist()
        if "input_strides" in table.column_names
        else [None] * table.num_rows
    )
    ranks = table["rank"].to_pylist() if "rank" in table.column_names else [0] * table.num_rows
    extras = {**(extras or {}), **_extras(ranks, cols)}
    memo: dict = {}
    out: dict[str, list] = {f.name: [] for f in COST_SCHEMA}
    for rank, key, st in zip(ranks, zip(*cols), strides):
        extra = extras.get((rank, *key))
        mkey = (*key, st) if extra is None else (rank, *key, st)
        c = memo.get(mkey)
        if c is None:
            c = memo[mkey] = (
                _shared_cost(key[0], key[1], key[2], key[3], st)
                if extra is None
                else cost_of(key[0], key[1], key[2], key[3], extra=extra, strides=st)
            )
        values: tuple[Any, ...] = (
            (
                c.family,
                c.flops,
                c.bytes,
                c.precision,
                c.matrix,
                None,
                bool(c.assumed),
                "; ".join(c.assumed) or None,
            )
            if isinstance(c, Cost)
            else (None, None, None, None, None, c, None, None)
        )
        for f, v in zip(COST_SCHEMA.names, values):
            out[f].append(v)
    return pa.table(
        {f.name: array_of(out[f.name], f.type) for f in COST_SCHEMA}, schema=COST_SCHEMA
    )


def _extras(ranks: list, cols: list[list]) -> dict:
    """(rank, name, dims, types, concrete) -> extra, for the operators that need another's
    shapes (FBGEMM lookups and their autograd nodes): each family's rank_extras over the
    rank's distinct groups."""
    per_rank: dict = {}
    for rank, key in zip(ranks, zip(*cols)):
        per_rank.setdefault(rank, {})[(rank, *key)] = key
    out: dict = {}
    for groups in per_rank.values():
        for find in RANK_EXTRAS:
            out.update(find([(k, *v) for k, v in groups.items()]))
    return out


def with_costs(table: pa.Table, extras: Optional[dict] = None) -> pa.Table:
    """An op table with the cost columns appended, and the totals over all calls:
    total_flops = flops * count, total_bytes = bytes * count. `extras` as in op_costs."""
    costs = op_costs(table, extras)
    count = as_numpy(table["count"]).astype(np.float64)
    out = table
    for f in COST_SCHEMA:
        out = out.append_column(f, costs[f.name])
    flops = as_numpy(costs["flops"])
    nbytes = as_numpy(costs["bytes"])
    out = out.append_column(
        pa.field("total_flops", pa.float64(), metadata={"unit": "FLOP"}),
        pa.array(flops * count, pa.float64(), from_pandas=True),
    )
    return out.append_column(
        pa.field("total_bytes", pa.float64(), metadata={"unit": "B"}),
        pa.array(nbytes * count, pa.float64(), from_pandas=True),
    )


def no_model_summary(table: pa.Table) -> pa.Table:
    """Operators without a model: name, reason, groups, calls, their GPU time (ns)."""
    t = table.filter(table["no_model"].is_valid())
    g = t.group_by(["name", "no_model"], use_threads=False).aggregate(
        [("count", "count"), ("count", "sum"), ("gpu_time_sum", "sum")]
    )
    g = g.rename_columns(["name", "reason", "groups", "calls", "gpu_time_sum"])
    at = g.schema.get_field_index("gpu_time_sum")
    g = g.set_column(at, g.schema.field(at).with_metadata({"unit": "ns"}), g.column(at))
    return g.sort_by([("gpu_time_sum", "descending"), ("calls", "descending")])
