"""Embedding lookups: embedding and embedding_bag, forward and backward.

The cost of a lookup is the rows it touches, not the table's size: rows = the index
tensor's elements (for embedding_bag, the bags are given by `offsets`; bags = offsets'
length, less one with include_last_offset). Bytes: indices and offsets read, D-wide rows
read from the table (no more rows than it holds: a row looked up again comes from cache), the output written (a row per index for embedding, a row per bag for
embedding_bag). FLOPs: embedding none; embedding_bag one add per looked-up element (two
with per-sample weights). Backward: the output gradient read and a row per index scattered
(read-modify-write) into the weight gradient.
"""

from __future__ import annotations

import math

from .. import dtypes
from ..cost import Cost, model
from ..op_call import NoModel, OpCall


def _table(call: OpCall, i: int = 0) -> tuple[int, int, int]:
    w = call.shape(i)
    if len(w) != 2:
        raise NoModel(f"embedding table of shape {w}")
    return w[0], w[1], call.itemsize(i)


@model("aten::embedding")
def embedding(call: OpCall) -> Cost:
    n, d, size = _table(call)
    rows = call.numel(1)
    nbytes = call.nbytes(1) + (min(rows, n) + rows) * d * size
    return Cost("embedding", 0.0, float(nbytes), dtypes.precision(call.dtype(0)) or "fp32")


@model("aten::embedding_backward", "aten::embedding_dense_backward")
def embedding_backward(call: OpCall) -> Cost:
    g = call.shape(0)
    d, size = g[-1], call.itemsize(0)
    rows = call.numel(1)
    nbytes = call.nbytes(0) + call.nbytes(1) + 2 * rows * d * size
    return Cost(
        "embedding", float(rows * d), float(nbytes), dtypes.precision(call.dtype(0)) or "fp32"
    )


@model("aten::embedding_bag", "aten::_embedding_bag", "aten::_embedding_bag_forward_only")
def embedding_bag(call: OpCall) -> Cost:
    """(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
    include_last_offset, padding_idx); 2-D indices are fixed-size bags without offsets."""
    n, d, size = _table(call)
    idx = call.shape(1)
    rows = math.prod(idx)
    if len(idx) == 2:
        bags = idx[0]
    else:
        offsets = call.shape(2)
        bags = offsets[0] - (1 if call.value(7) is True else 0) if offsets else 0
    weighted = call.has_tensor(6)
    nbytes = call.nbytes(1) + min(rows, n) * d * size + bags * d * size
    if call.has_tensor(2):
        nbytes += call.nbytes(2)
    if weighted:
        nbytes += call.nbytes(6)
    return Cost(
        "embedding",
        float(rows * d * (2 if weighted else 1)),
        float(nbytes),
        dtypes.precision(call.dtype(0)) or "fp32",
    )


@model(
    "aten::_embedding_bag_backward",
    "aten::_embedding_bag_dense_backward",
    "aten::embedding_bag_backward",
)
def embedding_bag_backward(call: OpCall) -> Cost:
    """(grad, indices, offsets|offset2bag, ...): grad is bags x D."""
    g = call.shape(0)
    if len(g) != 2:
        raise NoModel(f"embedding_bag gradient of shape {g}")
    d, size = g[1], call.itemsize(0)
    rows = call.numel(1)
    nbytes = call.nbytes(0) + call.nbytes(1) + 2 * rows * d * size
    return Cost(
        "embedding", float(rows * d), float(nbytes), dtypes.precision(call.dtype(0)) or "fp32"
    )
