"""Fused mixture-of-experts layers and their routing kernels, as serving stacks launch them.

Sources of shapes: the ops' signatures, whose first five arguments are the same in vLLM
(`vllm::inplace_fused_experts`, `vllm::outplace_fused_experts`) and aiter
(`aiter::fused_moe_`): hidden_states [M, K], w1 [E, N1, K] (gate and up projections:
N1 = 2 N when gated), w2 [E, K, N], topk_weights and topk_ids [M, topk]. The model checks
that the shapes fit (w1's and w2's K equal the hidden size, N1 is N or 2 N); weights packed
below a byte (int4: K/2 or K/8 columns) do not fit and have no model.

A grouped GEMM: every token meets topk experts, so FLOPs = 2 M topk K N1 (gate/up) +
2 M topk N K (down). Bytes: the hidden states read and the output (M x K, their dtype)
written, the routing tensors read, and the weights of the experts the tokens reach: all E
when M x topk >= E, else at most M x topk of them (which ones is in topk_ids' values, not
recorded: min(E, M topk) experts are counted). Scales (quantized experts) are read too.
The intermediate activations go through memory in real kernels; as everywhere here, bytes
are the least traffic.

Routing (vLLM's `_moe_C::` and aiter's ops of the same names): `topk_softmax` (topk_weights,
topk_ids, token_expert_indices, gating_output [M, E]): a softmax over the gating logits,
5 FLOPs per logit; `moe_sum` (input [M, topk, K], output [M, K]): one add per input element;
`moe_align_block_size` (topk_ids, num_experts, block_size, sorted_token_ids, expert_ids,
num_tokens_post_pad): no FLOPs. Bytes for the three: every tensor argument once (the
outputs are the recorded buffers).
"""

from __future__ import annotations

import math

from .. import dtypes
from ..cost import Cost, model, precision_of
from ..op_call import NoModel, OpCall


@model("vllm::inplace_fused_experts", "vllm::outplace_fused_experts", "aiter::fused_moe_")
def fused_moe(call: OpCall) -> Cost:
    h, w1, w2, ids = call.shape(0), call.shape(1), call.shape(2), call.shape(4)
    if len(h) != 2 or len(w1) != 3 or len(w2) != 3 or len(ids) != 2 or ids[0] != h[0]:
        raise NoModel(f"fused MoE of shapes {h}, {w1}, {w2}, topk_ids {ids}")
    m, k = h
    e, n1, k1 = w1
    e2, k2, n = w2
    if e != e2 or k1 != k or k2 != k or n1 not in (n, 2 * n):
        raise NoModel(
            f"fused MoE weights {w1} and {w2} do not fit hidden size {k} (packed weights?)"
        )
    topk = ids[1]
    rows = m * topk
    flops = 2.0 * rows * k * n1 + 2.0 * rows * n * k
    touched = min(e, rows) / e if e else 0.0
    weights = touched * (call.nbytes(1) + call.nbytes(2))
    scales = sum(call.nbytes(i) for i in call.tensor_inputs() if i > 4 and call.shape(i) != h)
    nbytes = 2 * call.nbytes(0) + call.nbytes(3) + call.nbytes(4) + weights + scales
    return Cost("matmul", flops, float(nbytes), precision_of(call, 1), matrix=True)


def _all_tensors(call: OpCall) -> tuple[int, list[int]]:
    tensors = call.tensor_inputs()
    if not tensors:
        raise NoModel("no tensor input with a shape and dtype")
    return sum(call.nbytes(i) for i in tensors), tensors


@model("_moe_C::topk_softmax", "aiter::topk_softmax")
def topk_softmax(call: OpCall) -> Cost:
    nbytes, tensors = _all_tensors(call)
    logits = max(tensors, key=call.numel)
    p = dtypes.precision(call.dtype(logits)) or "fp32"
    return Cost("softmax", float(5 * call.numel(logits)), float(nbytes), p)


@model("_moe_C::moe_sum", "aiter::moe_sum")
def moe_sum(call: OpCall) -> Cost:
    nbytes, tensors = _all_tensors(call)
    big = max(tensors, key=call.numel)
    p = dtypes.precision(call.dtype(big)) or "fp32"
    return Cost("reduction", float(math.prod(call.shape(big))), float(nbytes), p)


@model("_moe_C::moe_align_block_size", "aiter::moe_align_block_size")
def moe_align(call: OpCall) -> Cost:
    nbytes, _ = _all_tensors(call)
    return Cost("sparse", 0.0, float(nbytes), "fp32")
