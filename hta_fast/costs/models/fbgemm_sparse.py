"""FBGEMM's sparse-feature and pooled-embedding plumbing around the TBE lookups: index and
length permutes, bounds checks, bucketizing, offsets from lengths, the pooled output's
permutes, and FP8/HFP8 casts. All move memory and compute next to nothing.

Bytes, per operator (the least traffic: each input read once, each output written once):
* permute_sparse_features / permute_2D_sparse_data (permute [P], lengths [T, B], indices [N],
  weights?): permute, lengths, indices (and weights) read; P x B lengths and the permuted
  indices (and weights) written. The permuted indices are N x P / T (exact for a
  permutation; a selection of features that differ in length only approximately, as the
  lengths' values are not recorded).
* bounds_check_indices (rows_per_table, indices, offsets, mode, warning, weights?): every
  tensor read (it writes only where an index is out of bounds).
* block_bucketize_sparse_features (lengths, indices, bucketize_pos, sequence, block_sizes,
  my_size, weights?): lengths, indices, block sizes (and weights) read; the indices (and
  weights) and the new lengths written; the new lengths are my_size x the old (my_size from
  Concrete Inputs; when not recorded, at least the old: a lower bound).
* asynchronous_complete_cumsum (x [n]): n read, n + 1 written; n adds ("reduction", as
  aten's cumsum).
* permute_pooled_embs(_auto_grad), its autograd node PermutePooledEmbsFunction and
  recat_embedding_grad_output_mixed_D_batch: the [B, D] tensor read and written (and the
  small index lists read).
* FloatToFP8RowwiseQuantized ([R, C] float -> R rows of C bytes rounded up to 4, plus an
  8-byte scale and bias) and FP8RowwiseQuantizedToFloat (back); FloatToHFP8Quantized
  (4 bytes -> 1 per element) and HFP8QuantizedToFloat: casts, family "copy" as _to_copy.
"""

from __future__ import annotations

import math
import re

from ..cost import Cost, model, pattern_model
from ..op_call import NoModel, OpCall

SPARSE = "sparse"


def _tensors_bytes(call: OpCall, first: int = 0) -> int:
    return sum(call.nbytes(i) for i in call.tensor_inputs() if i >= first)


@model("fbgemm::permute_sparse_features", "fbgemm::permute_2D_sparse_data")
def permute_sparse(call: OpCall) -> Cost:
    p = call.numel(0)
    lengths = call.shape(1)
    if len(lengths) != 2 or lengths[0] == 0:
        raise NoModel(f"lengths of shape {lengths}: expected [features, batch]")
    t, b = lengths
    weights = call.nbytes(3) if call.has_tensor(3) else 0
    moved = call.nbytes(2) + weights
    out = p * b * call.itemsize(1) + moved * p / t
    return Cost(SPARSE, 0.0, float(call.nbytes(0) + call.nbytes(1) + moved + out), "fp32")


@model("fbgemm::bounds_check_indices")
def bounds_check(call: OpCall) -> Cost:
    return Cost(SPARSE, 0.0, float(_tensors_bytes(call)), "fp32")


@model("fbgemm::block_bucketize_sparse_features")
def block_bucketize(call: OpCall) -> Cost:
    lengths, indices = call.nbytes(0), call.nbytes(1)
    weights = call.nbytes(6) if call.has_tensor(6) else 0
    my_size = call.value(5)
    factor = (
        my_size if isinstance(my_size, int) and not isinstance(my_size, bool) and my_size > 0 else 1
    )
    blocks = call.nbytes(4) if call.has_tensor(4) else 0
    read = lengths + indices + blocks + weights
    written = lengths * factor + indices + weights
    return Cost(SPARSE, 0.0, float(read + written), "fp32")


@model(
    "fbgemm::asynchronous_complete_cumsum",
    "fbgemm::asynchronous_inclusive_cumsum",
    "fbgemm::asynchronous_exclusive_cumsum",
)
def offsets_cumsum(call: OpCall) -> Cost:
    n, size = call.numel(0), call.itemsize(0)
    extra = 1 if call.name.endswith("complete_cumsum") else 0
    return Cost("reduction", float(n), float(n * size + (n + extra) * size), "fp32")


@model(
    "fbgemm::permute_pooled_embs_auto_grad",
    "fbgemm::permute_pooled_embs",
    "fbgemm::permute_pooled_embs_auto_grad_split",
    "fbgemm::permute_pooled_embs_split",
    "fbgemm::recat_embedding_grad_output_mixed_D_batch",
)
def pooled_permute(call: OpCall) -> Cost:
    x = call.shape(0)
    if len(x) != 2:
        raise NoModel(f"pooled embeddings of shape {x}: expected [batch, dims]")
    return Cost("copy", 0.0, float(2 * call.nbytes(0) + _tensors_bytes(call, 1)), "fp32")


def pooled_permute_node(call: OpCall) -> Cost:
    """The autograd node of permute_pooled_embs: its gradient [B, D] permuted back."""
    return Cost("copy", 0.0, float(2 * call.nbytes(0)), "fp32")


pattern_model(
    re.compile(r"^torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction"),
    pooled_permute_node,
)


@model("fbgemm::FloatToFP8RowwiseQuantized")
def fp8_rowwise_quantize(call: OpCall) -> Cost:
    x = call.shape(0)
    rows, cols = math.prod(x[:-1]), x[-1]
    out = rows * (4 * math.ceil(cols / 4) + 8)
    return Cost("copy", 0.0, float(call.nbytes(0) + out), "fp32")


@model("fbgemm::FP8RowwiseQuantizedToFloat")
def fp8_rowwise_dequantize(call: OpCall) -> Cost:
    x = call.shape(0)
    rows, cols = math.prod(x[:-1]), x[-1] - 8
    if cols <= 0:
        raise NoModel(f"FP8 rowwise input of shape {x}: no room for the 8-byte scale and bias")
    return Cost("copy", 0.0, float(call.nbytes(0) + rows * cols * 4), "fp32")


@model("fbgemm::FloatToHFP8Quantized")
def hfp8_quantize(call: OpCall) -> Cost:
    return Cost("copy", 0.0, float(call.nbytes(0) + call.numel(0)), "fp32")


@model("fbgemm::HFP8QuantizedToFloat")
def hfp8_dequantize(call: OpCall) -> Cost:
    return Cost("copy", 0.0, float(call.nbytes(0) + call.numel(0) * 4), "fp32")
