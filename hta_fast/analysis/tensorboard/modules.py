"""Time per nn.Module, nested as the modules are: the TensorBoard plugin's module view.

A module call is a `nn.Module: <class>_<n>` Python frame (the profiler's with_stack or
with_modules records one around each forward). Its forward host time is the frame's span;
its forward GPU time the GPU work launched under it (a graph replay's work counts where its
capture was made, as everywhere: frame.graph_attribution). Backward: each autograd node
(`autograd::engine::evaluate_function: XBackward0`) carries the sequence number of the
forward operator that made it (and that operator's thread); the node, its host time and the
GPU work launched under it belong to the innermost module around that forward operator.
Every figure is inclusive: a module's time holds its submodules'. Calls of one module at
one place in the tree (its path from the outermost module: "Model_0/Layer_3/Linear_1") add
up, over the steps of the selection.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of
from ...costs.op_args import op_arg_positions
from ...frame import derived, select
from ...frame.fields import NS
from ...frame.graph_attribution import operator_launch_pairs
from ...frame.launches import ancestor_pairs, enclosing
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...schema import EventKind
from ...trace import Trace
from ...traceset import TraceSet

__all__ = ["modules", "MODULE_FRAME"]

MODULE_FRAME = r"^nn\.Module: "
BACKWARD_NODE = r"^autograd::engine::evaluate_function: "
SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("path", pa.string(), metadata={"description": "outermost/.../this module"}),
        pa.field("module", pa.string(), metadata={"description": "its class and instance"}),
        pa.field("depth", pa.int64(), metadata={"description": "0: an outermost module"}),
        pa.field("calls", pa.int64()),
        pa.field("forward_host", pa.int64(), metadata=NS),
        pa.field("forward_gpu", pa.int64(), metadata=NS),
        pa.field("backward_host", pa.int64(), metadata=NS),
        pa.field("backward_gpu", pa.int64(), metadata=NS),
    ]
)


def modules(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """One row per (rank, module path), in the tree's order (a module before its
    submodules, siblings by first call): calls, forward and backward host and GPU time (ns,
    inclusive; see the module doc)."""
    sel = select.selection_of(selection, ranks, steps)
    parts, notes = [], []
    for rank, trace, mask in select.each_rank(traces, sel):
        table = _rank_table(rank, trace, mask)
        if table.num_rows == 0:
            notes.append(
                f"rank {rank}: no nn.Module frames (profile with with_stack=True or "
                "with_modules=True)"
            )
        parts.append(table)
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    return Result("modules", table, notes=notes, params={"selection": sel})


def _rank_table(rank: int, trace: Trace, mask: Optional[np.ndarray]) -> pa.Table:
    n = trace.num_rows("events")
    kind = trace.column("events", "kind")
    is_module = _mask(trace, MODULE_FRAME, EventKind.python_function)
    if mask is not None:
        is_module &= mask
    rows = np.flatnonzero(is_module)
    if not len(rows):
        return SCHEMA.empty_table()
    ts = trace.column("events", "ts")
    dur = np.maximum(trace.column("events", "dur"), 0)
    path = _paths(trace, rows, is_module)
    # forward GPU time: every module around each GPU event's launch
    _, gpu, by = operator_launch_pairs(trace, mask, include_memory_events=True)
    gpu_dur = dur[gpu].astype(np.int64)
    fwd_gpu = np.zeros(n, np.int64)
    i, anc = ancestor_pairs(trace, by, is_module)
    np.add.at(fwd_gpu, anc, gpu_dur[i])
    # backward: each autograd node to the innermost module around its forward operator
    bwd_host, bwd_gpu = _backward(trace, mask, is_module, kind, dur, gpu, by, gpu_dur)
    # inclusive backward: a module's own plus its submodules'
    inc_host, inc_gpu = bwd_host.copy(), bwd_gpu.copy()
    own = np.flatnonzero((bwd_host > 0) | (bwd_gpu > 0))
    if len(own):
        j, up = ancestor_pairs(trace, own, is_module)
        np.add.at(inc_host, up, bwd_host[own[j]])
        np.add.at(inc_gpu, up, bwd_gpu[own[j]])
    keys, first, inverse = np.unique(path, return_index=True, return_inverse=True)
    m = len(keys)

    def summed(values: np.ndarray) -> np.ndarray:
        out = np.zeros(m, np.int64)
        np.add.at(out, inverse, values[rows])
        return out

    order = _tree_order(keys, ts[rows][first])
    names = trace.strings_at(trace.column("events", "name")[rows[first]]).to_pylist()
    return pa.table(
        [
            np.full(m, rank, np.int64),
            array_of(keys[order].tolist(), pa.string()),
            array_of([names[k][len("nn.Module: ") :] for k in order], pa.string()),
            np.array([keys[k].count("/") for k in order], np.int64),
            np.bincount(inverse, minlength=m)[order].astype(np.int64),
            summed(dur.astype(np.int64))[order],
            summed(fwd_gpu)[order],
            summed(inc_host)[order],
            summed(inc_gpu)[order],
        ],
        schema=SCHEMA,
    )


def _mask(trace: Trace, pattern: str, kind: EventKind) -> np.ndarray:
    out = np.zeros(trace.num_rows("events"), bool)
    out[derived.rows_named(trace, pattern, (kind,))] = True
    return out


def _paths(trace: Trace, rows: np.ndarray, is_module: np.ndarray) -> np.ndarray:
    """Per module row: its path, the module names from the outermost down, "/"-joined."""
    name = trace.strings_at(trace.column("events", "name")[rows]).to_pylist()
    short = {int(r): s[len("nn.Module: ") :] for r, s in zip(rows.tolist(), name)}
    up = enclosing(trace, rows, is_module)
    parent = {int(r): int(p) for r, p in zip(rows.tolist(), up.tolist())}
    memo: dict[int, str] = {}

    def path_of(r: int) -> str:
        chain = []
        while r >= 0 and r not in memo:
            chain.append(r)
            r = parent.get(r, -1)
        prefix = memo.get(r, "")
        for c in reversed(chain):
            prefix = f"{prefix}/{short[c]}" if prefix else short[c]
            memo[c] = prefix
        return memo[chain[0]] if chain else prefix

    return np.array([path_of(int(r)) for r in rows.tolist()], dtype=object)


def _tree_order(keys: np.ndarray, first_ts: np.ndarray) -> np.ndarray:
    """Indices of keys in tree order: each module right after its parent's earlier-called
    siblings' subtrees, siblings by their first call."""
    start = {k: int(t) for k, t in zip(keys.tolist(), first_ts.tolist())}

    def sort_key(k: str) -> list:
        parts = k.split("/")
        return [(start.get("/".join(parts[: i + 1]), 0), parts[i]) for i in range(len(parts))]

    ranked = sorted(range(len(keys)), key=lambda i: sort_key(str(keys[i])))
    return np.asarray(ranked, np.int64)


def _backward(
    trace: Trace,
    mask: Optional[np.ndarray],
    is_module: np.ndarray,
    kind: np.ndarray,
    dur: np.ndarray,
    gpu: np.ndarray,
    by: np.ndarray,
    gpu_dur: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per event row (of the innermost module a backward node belongs to): the nodes' host
    time and the GPU time launched under them."""
    n = len(kind)
    host, on_gpu = np.zeros(n, np.int64), np.zeros(n, np.int64)
    is_node = _mask(trace, BACKWARD_NODE, EventKind.cpu_op)
    if mask is not None:
        is_node &= mask
    nodes = np.flatnonzero(is_node)
    if not len(nodes):
        return host, on_gpu
    seq_col = trace.column("op_args", "sequence_number")
    thread_col = trace.column("op_args", "fwd_thread_id")
    # forward operators inside modules: (sequence number, thread) -> innermost module
    ops = np.flatnonzero((kind == EventKind.cpu_op) & ~is_node)
    pos, found = op_arg_positions(trace, ops)
    ops, pos = ops[found], pos[found]
    seq = seq_col[pos]
    ops, seq = ops[seq >= 0], seq[seq >= 0]
    module_of_op = enclosing(trace, ops, is_module)
    tids = trace.column("events", "tid")[ops]
    owner: dict[tuple[int, int], int] = {}
    for s, t, mod in zip(seq.tolist(), tids.tolist(), module_of_op.tolist()):
        if mod >= 0:
            owner.setdefault((s, t), mod)
    npos, nfound = op_arg_positions(trace, nodes)
    module_of_node = np.full(len(nodes), -1, np.int64)
    for k in np.flatnonzero(nfound).tolist():
        s = int(seq_col[npos[k]])
        t = int(thread_col[npos[k]])
        mod = owner.get((s, t), -1)
        if mod < 0:  # the forward thread not recorded: the sequence number alone
            mod = next((v for (ss, _), v in owner.items() if ss == s), -1)
        module_of_node[k] = mod
    hit = module_of_node >= 0
    np.add.at(host, module_of_node[hit], dur[nodes[hit]].astype(np.int64))
    node_of_gpu = enclosing(trace, by, is_node)
    at = np.full(n, -1, np.int64)
    at[nodes] = module_of_node
    mod = np.where(node_of_gpu >= 0, at[np.maximum(node_of_gpu, 0)], -1)
    np.add.at(on_gpu, mod[mod >= 0], gpu_dur[mod >= 0])
    return host, on_gpu
