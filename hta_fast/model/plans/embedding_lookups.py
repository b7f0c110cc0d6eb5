"""Embedding lookup kernels of a trace and the work each did, from its operator's args.

A lookup kernel is a GPU kernel whose name says it is an embedding forward: FBGEMM's
table-batched kernels (split_embedding_codegen_forward_*, dense_embedding_codegen_
forward_*, one kernel for all tables of the operator) and PyTorch's embedding_bag
kernels. Its family is the kernel's template name (the part before `<` or `(`), so that
kernels with one code path share a curve.

The work comes from the launching operator's recorded shapes (record_shapes):
- aten::embedding_bag (weight, indices, offsets, ...): dim = weight's second dimension,
  indices = rows touched, bags = offsets' length.
- FBGEMM lookup functions: indices, offsets and D_offsets at the positions the
  split_embedding_codegen_lookup_*_function / dense_embedding_codegen_lookup_function
  signatures put them; tables = D_offsets' length - 1, bags = offsets' length - 1 (one
  per table and sample), batch = bags / tables. FBGEMM records no table's dimension, but
  the output's width total_D (the tables' dimensions summed): dim = total_D / tables, the
  tables' mean dimension. total_D is read from the call's Concrete Inputs where the
  profiler recorded them, else from the lookup's autograd node, whose input is the
  output's gradient [B, total_D] (flops_fbgemm.tbe_widths pairs the two over the rank's
  operators). With neither, bytes stay null and no_model says why; `dim` given by the
  caller overrides both.
bytes = indices x dim x the weights' element size (rows read from the tables);
dim_source says where dim came from: "weight" (embedding_bag's weight shape),
"concrete_inputs", "autograd_node" or "given".
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of
from ...costs.models.fbgemm import optimizer_of, parse_lookup, tbe_widths
from ...costs.op_call import NoModel, OpCall
from ...frame import select
from ...frame.fields import NS
from ...frame.launches import ancestor_pairs, launch_pairs
from ...frame.result import Result
from ...trace import Trace
from ...traceset import TraceSet

_LOOKUP_KERNEL = re.compile(r"embedding_codegen_forward|embedding_bag|EmbeddingBag", re.I)
_NOT_LOOKUP = re.compile(r"backward|grad", re.I)
_LOOKUP_OP = re.compile(r"embedding_codegen_lookup|embedding_bag", re.I)
# (D_offsets, indices, offsets, weights) argument positions of FBGEMM's lookup functions.
_FBGEMM_ARGS = (
    (re.compile(r"split_embedding_codegen_lookup"), (6, 11, 12, 1)),
    (re.compile(r"dense_embedding_codegen_lookup"), (2, 7, 8, 0)),
)

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("row", pa.int64()),
        pa.field("family", pa.string()),
        pa.field("op", pa.string()),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("tables", pa.int64()),
        pa.field("bags", pa.int64()),
        pa.field("indices", pa.int64()),
        pa.field("dim", pa.float64()),
        pa.field("dim_source", pa.string()),
        pa.field("bytes", pa.float64(), metadata={"unit": "B"}),
        pa.field("no_model", pa.string()),
    ]
)


def kernel_family(name: str) -> str:
    """The template name of a kernel: `void f<float, ...>(...)` -> `f`."""
    head = re.split(r"[<(]", name, maxsplit=1)[0].strip()
    return head.split()[-1] if head else name


def _work(op: str, call: OpCall) -> tuple[int, int, int, Optional[float], int]:
    """(tables, bags, indices, dim, element size) of one lookup operator; dim is None for
    an FBGEMM lookup (not in its shapes: _fbgemm_dim)."""
    for pattern, (d_off, idx, off, weights) in _FBGEMM_ARGS:
        if pattern.search(op):
            tables = call.numel(d_off) - 1
            bags = call.numel(off) - 1
            if tables <= 0 or bags < 0:
                raise NoModel(
                    f"{op}: D_offsets {call.shape(d_off)} / offsets "
                    f"{call.shape(off)} do not describe tables"
                )
            return tables, bags, call.numel(idx), None, call.itemsize(weights, 4)
    w = call.shape(0)
    if len(w) != 2:
        raise NoModel(f"{op}: weight of shape {w}")
    idx_shape = call.shape(1)
    # 2-D indices are fixed-size bags (one row each); else offsets mark where bags start
    bags = (
        idx_shape[0]
        if len(idx_shape) == 2
        else max(call.numel(2) - 1, 0)
        if call.has_tensor(2)
        else 0
    )
    return 1, bags, call.numel(1), float(w[1]), call.itemsize(0, 4)


def _fbgemm_dim(
    call: OpCall, tables: int, dim: Optional[float], width: Optional[dict]
) -> tuple[float, str]:
    """The tables' mean dimension of an FBGEMM lookup and its source: `dim` if given, else
    total_D / tables from Concrete Inputs or the paired autograd node; NoModel with the
    reason where neither says."""
    if dim is not None:
        return float(dim), "given"
    try:
        total_d = parse_lookup(call).total_d
    except NoModel:
        total_d = None
    if total_d is not None and total_d > 0:
        return total_d / tables, "concrete_inputs"
    if width is not None and "total_d" in width:
        return width["total_d"] / tables, "autograd_node"
    reason = (width or {}).get(
        "reason",
        "output width total_D not recorded (no Concrete "
        "Inputs) and no autograd node of this lookup",
    )
    raise NoModel(f"table dimension not recorded: {reason} (give dim=)")


def _rank_rows(
    rank: int, trace: Trace, mask: Optional[np.ndarray], dim: Optional[float]
) -> list[dict]:
    name_id = trace.column("events", "name")
    strings = trace.strings.cast(pa.string())
    ids = np.unique(name_id)
    names = dict(zip(ids.tolist(), strings.take(array_of(ids, pa.int32())).to_pylist()))
    dur = trace.column("events", "dur")
    launch, gpu = launch_pairs(trace, mask, include_memory_events=False)
    kname = [names[i] for i in name_id[gpu].tolist()]
    is_lookup = np.array(
        [bool(_LOOKUP_KERNEL.search(n)) and not _NOT_LOOKUP.search(n) for n in kname], bool
    )
    if not is_lookup.any():
        return []
    gpu, launch = gpu[is_lookup], launch[is_lookup]
    kname = [n for n, keep in zip(kname, is_lookup) if keep]
    # The launching lookup operator: the nearest CPU ancestor whose name is a lookup.
    is_op = np.zeros(len(name_id), bool)
    op_names = {i for i in ids.tolist() if _LOOKUP_OP.search(names[i])}
    is_op[np.isin(name_id, np.asarray(sorted(op_names), name_id.dtype))] = True
    i, anc = ancestor_pairs(trace, launch, is_op)
    op_of = np.full(len(gpu), -1, np.int64)
    op_of[i[::-1]] = anc[::-1]  # the first pair per kernel is the nearest ancestor
    args_row = {int(r): j for j, r in enumerate(trace.column("op_args", "row"))}
    has_args = trace.op_args.num_rows > 0
    dims = trace.op_args["input_dims"].to_pylist() if has_args else []
    types = trace.op_args["input_type"].to_pylist() if has_args else []
    concrete = trace.op_args["concrete_inputs"].to_pylist() if has_args else []
    widths = _tbe_widths(trace, names, dims, types, concrete) if dim is None else {}
    out = []
    for k, g in enumerate(gpu):
        row: dict[str, Any] = {
            "rank": rank,
            "row": int(g),
            "family": kernel_family(kname[k]),
            "op": None,
            "dur": int(dur[g]),
            "tables": None,
            "bags": None,
            "indices": None,
            "dim": None,
            "dim_source": None,
            "bytes": None,
            "no_model": None,
        }
        o = int(op_of[k])
        if o < 0:
            row["no_model"] = "no embedding operator above the kernel"
        else:
            op = row["op"] = names[int(name_id[o])]
            j = args_row.get(o)
            if j is None:
                row["no_model"] = "no input shapes recorded (record_shapes off)"
                out.append(row)
                continue
            key = (op, dims[j], types[j], concrete[j])
            try:
                call = OpCall.parse(op, dims[j], types[j], concrete[j])
                tables, bags, indices, d, size = _work(op, call)
                row.update(tables=tables, bags=bags, indices=indices)
                source = "weight"
                if d is None:
                    d, source = _fbgemm_dim(call, tables, dim, widths.get(key))
                row.update(dim=d, dim_source=source, bytes=float(indices * d * size))
            except NoModel as e:
                row["no_model"] = str(e)
        out.append(row)
    return out


def _tbe_widths(
    trace: Trace, names: dict[int, str], dims: list, types: list, concrete: list
) -> dict[tuple, dict]:
    """tbe_widths over the rank's FBGEMM lookups and autograd nodes (all of its trace: a
    node's gradient is recorded in the backward pass, which a selection may leave out),
    keyed by (name, Input Dims, Input type, Concrete Inputs)."""
    if not dims:
        return {}
    name_id = trace.column("events", "name")[trace.column("op_args", "row")]
    tbe = {i for i in np.unique(name_id).tolist() if optimizer_of(names.get(i, "")) is not None}
    if not tbe:
        return {}
    at = np.flatnonzero(np.isin(name_id, np.asarray(sorted(tbe), name_id.dtype)))
    groups = {(names[int(name_id[j])], dims[j], types[j], concrete[j]) for j in at.tolist()}
    return tbe_widths((g, *g) for g in groups)


def lookup_kernels(
    traces: Union[Trace, TraceSet],
    *,
    dim: Optional[float] = None,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """One row per embedding lookup kernel: rank, row, family, op (the launching
    operator), dur, tables, bags, indices (rows touched), dim, dim_source (weight,
    concrete_inputs, autograd_node or given), bytes (rows read: indices x dim x element
    size; null with the reason in no_model when it cannot be told). `dim`: the mean table
    dimension of every FBGEMM lookup, instead of the width the trace records (the module
    doc); embedding_bag's dimension is always its weight's."""
    if dim is not None and not dim > 0:
        raise ValueError(f"dim must be a positive number, got {dim!r}")
    sel = select.selection_of(selection, ranks, steps, window, streams)
    rows = [
        r
        for rank, trace, mask in select.each_rank(traces, sel)
        for r in _rank_rows(rank, trace, mask, dim)
    ]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    notes = [] if rows else ["no embedding lookup kernels in these traces"]
    missing = table["no_model"].drop_null()
    if len(missing):
        notes.append(f"{len(missing)} lookup kernel(s) without a byte count (see no_model)")
    return Result("lookup_kernels", table, notes=notes, params=dict(selection=sel, dim=dim))
