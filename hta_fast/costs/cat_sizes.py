"""Output sizes of `cat` calls whose list of tensors the profiler did not record, read from
their autograd nodes.

Older profilers write [] for a list of tensors, so a cat's inputs are not in its shapes. A
cat whose output requires grad creates a `CatBackward0` node, which the backward pass
records with the gradient of the cat's output as its input and with the forward call's
sequence number. A cat call whose sequence number no other cat call shares (a call that
creates no node repeats the number the next node will take, so it may share it) is tied to
the CatBackward0 node of that number: its output bytes = the gradient's elements x its dtype
size (the output of a cat is the sum of its inputs). Calls of one operator group (same
name and recorded shapes: with [] for the list, all of one call site's calls and often
more) differ in size, so the group gets the mean over its tied calls, and the number of
calls tied.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow.compute as pc

from .._arrow import array_of, as_numpy
from ..trace import Trace
from . import dtypes
from .op_args import op_arg_positions

CAT_NAMES = ("aten::cat", "aten::_cat")
NODE = "CatBackward0"


def _ids(trace: Trace, names: tuple[str, ...]) -> np.ndarray:
    hit = pc.is_in(trace.strings, value_set=array_of(list(names), trace.strings.type))
    return np.flatnonzero(as_numpy(hit))


def _string(trace: Trace, i: int) -> Any:
    return trace.strings[int(i)].as_py() if i >= 0 else None


def cat_extras(trace: Trace, rows: np.ndarray, rank: int = 0) -> dict[tuple, dict]:
    """For the cat calls among event `rows`: {(rank, name, Input Dims, Input type, Concrete
    Inputs): {"out_bytes": mean output bytes of its tied calls, "tied": n, "calls": m}}."""
    name_col = trace.column("events", "name")
    cat_ids = _ids(trace, CAT_NAMES)
    node_ids = _ids(trace, (NODE,))
    if not len(cat_ids) or not len(node_ids) or not len(rows):
        return {}
    cats = rows[np.isin(name_col[rows], cat_ids)]
    if not len(cats):
        return {}
    seq_col = trace.column("op_args", "sequence_number")
    # every cat call of the trace, to find the sequence numbers more than one call holds
    all_cats = np.flatnonzero(np.isin(name_col, cat_ids))
    pos, found = op_arg_positions(trace, all_cats)
    seq_all = np.where(found, seq_col[pos], -1)
    values, counts = np.unique(seq_all[seq_all >= 0], return_counts=True)
    shared = set(values[counts > 1].tolist())
    nodes = np.flatnonzero(np.isin(name_col, node_ids))
    npos, nfound = op_arg_positions(trace, nodes)
    grad_bytes: dict[int, float] = {}
    node_seq = np.where(nfound, seq_col[npos], -1)
    dims_col, types_col = (
        trace.column("op_args", "input_dims"),
        trace.column("op_args", "input_type"),
    )
    for seq, p, ok in zip(node_seq.tolist(), npos.tolist(), nfound.tolist()):
        if not ok or seq < 0:
            continue
        nbytes = _gradient_bytes(_string(trace, dims_col[p]), _string(trace, types_col[p]))
        if nbytes is not None:
            # two nodes of one number (another thread's): not a tie we can trust
            grad_bytes[seq] = -1.0 if seq in grad_bytes else nbytes
    pos, found = op_arg_positions(trace, cats)
    sizes: dict[tuple, list[float]] = defaultdict(list)
    calls: dict[tuple, int] = defaultdict(int)
    cols = [trace.column("op_args", c) for c in ("input_dims", "input_type", "concrete_inputs")]
    for row, p, ok in zip(cats.tolist(), pos.tolist(), found.tolist()):
        key = (
            rank,
            _string(trace, name_col[row]),
            *[(_string(trace, c[p]) if ok else None) for c in cols],
        )
        calls[key] += 1
        seq = int(seq_col[p]) if ok else -1
        b = grad_bytes.get(seq, -1.0) if seq >= 0 and seq not in shared else -1.0
        if b >= 0:
            sizes[key].append(b)
    return {
        k: {"out_bytes": float(np.mean(v)), "tied": len(v), "calls": calls[k]}
        for k, v in sizes.items()
    }


def _gradient_bytes(dims: Any, types: Any) -> float | None:
    try:
        shape = json.loads(dims)[0]
        dtype = json.loads(types)[0]
    except (TypeError, ValueError, IndexError):
        return None
    if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
        return None
    size = dtypes.itemsize(dtype)
    return float(np.prod(shape, dtype=np.float64) * size) if size else None
