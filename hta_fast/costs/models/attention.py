"""Scaled-dot-product and flash attention, forward and backward, causal and grouped-query.

With B batch, H query heads, L query and S key positions, E the query/key and Ev the value
head size, the forward is two products: Q K^T (2*B*H*L*S*E) and P V (2*B*H*L*S*Ev). A
causal mask keeps only the (query, key) pairs at or before the diagonal: top-left aligned
for PyTorch's kernels, bottom-right aligned for the flash-attn package when L != S. Keys and
values may have fewer heads than queries (grouped-query attention): FLOPs follow the query
heads, bytes the tensors' own sizes. The backward recomputes Q K^T and adds four products
(dV, dP, dQ, dK): 2.5 times the forward's FLOPs. Bytes: forward reads q, k, v and writes the
output; backward reads q, k, v, out, dout and writes dq, dk, dv.

aiter's flash attention (mha_fwd, fmha_v3_fwd) takes flash-attn's layout and causal
alignment. aten::_native_multi_head_attention adds its projections to the same attention
formula (attention_flops). Paged, varlen and serving-stack attention have no model: their
work is each sequence's length, a tensor's values, which profilers do not record.
"""

from __future__ import annotations

from typing import Callable

from ..cost import Cost, model, precision_of
from ..op_call import NoModel, OpCall

BACKWARD_FACTOR = 2.5

# name -> (index of query, layout "BHLE" or "BLHE", index of is_causal (or of a mask type
# where `mask_type` is True), backward?, bottom-right causal alignment?, mask_type)
_SIGNATURES = {
    "aten::scaled_dot_product_attention": (0, "BHLE", 5, False, False, False),
    "aten::_scaled_dot_product_flash_attention": (0, "BHLE", 4, False, False, False),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (0, "BHLE", 4, False, False, False),
    "aten::_scaled_dot_product_efficient_attention": (0, "BHLE", 6, False, False, False),
    "aten::_scaled_dot_product_cudnn_attention": (0, "BHLE", 6, False, False, False),
    "aten::_flash_attention_forward": (0, "BLHE", 8, False, False, False),
    "aten::_efficient_attention_forward": (0, "BLHE", 9, False, False, True),
    "aten::_scaled_dot_product_flash_attention_backward": (1, "BHLE", 11, True, False, False),
    "aten::_scaled_dot_product_efficient_attention_backward": (1, "BHLE", 11, True, False, False),
    "aten::_scaled_dot_product_cudnn_attention_backward": (1, "BHLE", 14, True, False, False),
    "aten::_flash_attention_backward": (1, "BLHE", 11, True, False, False),
    "aten::_efficient_attention_backward": (1, "BLHE", 14, True, False, True),
    "flash_attn::_flash_attn_forward": (0, "BLHE", 5, False, True, False),
    "flash_attn::_flash_attn_backward": (1, "BLHE", 11, True, True, False),
    # aiter's CK flash attention (q, k, v, dropout_p, softmax_scale, is_causal, ...), the
    # flash-attn layout and causal alignment (aiter/ops/mha.py)
    "aiter::mha_fwd": (0, "BLHE", 5, False, True, False),
    "aiter::fmha_v3_fwd": (0, "BLHE", 5, False, True, False),
}


def causal_pairs(L: int, S: int, bottom_right: bool) -> int:
    """Number of (query, key) pairs a causal mask keeps. Top-left: query i sees keys 0..i;
    bottom-right: query i sees keys 0..i + S - L."""
    shift = S - L if bottom_right else 0
    total = 0
    # closed form of sum_{i<L} clamp(i + 1 + shift, 0, S)
    lo = max(0, -1 - shift + 1)  # first i with i + 1 + shift >= 1
    hi = min(L, S - shift)  # first i with i + 1 + shift > S
    if hi > lo:
        a, b = lo + 1 + shift, hi + shift  # values at i=lo and i=hi-1
        total += (a + b) * (hi - lo) // 2
    total += max(0, L - max(hi, lo)) * S if hi < L else 0
    return total


def _dims(shape: list[int], layout: str) -> tuple[int, int, int, int]:
    """(batch, heads, length, head size) of a 4-D (or 3-D, heads folded) tensor."""
    if len(shape) == 3:
        return (shape[0], 1, shape[1], shape[2])
    if len(shape) != 4:
        raise NoModel(f"attention input of shape {shape}")
    if layout == "BHLE":
        return shape[0], shape[1], shape[2], shape[3]
    return shape[0], shape[2], shape[1], shape[3]


def attention_flops(b: int, h: int, pairs: int, e: int, ev: int) -> float:
    """FLOPs of one forward: Q K^T and P V over the (query, key) pairs of each of b x h
    heads, head sizes e (query/key) and ev (value)."""
    return 2.0 * b * h * pairs * (e + ev)


@model(*_SIGNATURES)
def attention(call: OpCall) -> Cost:
    qi, layout, causal_i, backward, bottom_right, mask_type = _SIGNATURES[call.name]
    b, h, L, e = _dims(call.shape(qi), layout)
    _, _, S, _ = _dims(call.shape(qi + 1), layout)
    _, _, _, ev = _dims(call.shape(qi + 2), layout)
    flag = call.value(causal_i)
    causal = bool(flag) and (flag != 0 if mask_type else flag is True)
    if mask_type and flag == 2:
        bottom_right = True
    pairs = causal_pairs(L, S, bottom_right) if causal else L * S
    flops = attention_flops(b, h, pairs, e, ev)
    size = call.itemsize(qi)
    qkv = call.nbytes(qi) + call.nbytes(qi + 1) + call.nbytes(qi + 2)
    out = b * h * L * ev * size
    if backward:
        return Cost(
            "attention",
            BACKWARD_FACTOR * flops,
            float(2 * qkv + 2 * out),
            precision_of(call, qi),
            matrix=True,
        )
    return Cost("attention", flops, float(qkv + out), precision_of(call, qi), matrix=True)


@model("aten::_native_multi_head_attention")
def native_mha(call: OpCall) -> Cost:
    """(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
    mask, need_weights, average_attn_weights, mask_type): query [B, L, E] (or [L, E]), key
    and value [B, S, E]. Work: the q, k, v projections (2 E^2 per query or key position, plus
    the bias), the attention over L x S pairs with E = H x head size (the heads cancel out),
    and the output projection. Bytes: q, k and v read (each, even when they are one tensor),
    the four parameters read, the output written, and with need_weights the attention
    weights (B x H x L x S, or B x L x S averaged over heads; H from Concrete Inputs)."""
    q, k = call.shape(0), call.shape(1)
    if len(q) == 2:
        q, k = [1] + q, [1] + k
    if len(q) != 3 or len(k) != 3 or q[0] != k[0] or q[2] != k[2]:
        raise NoModel(f"multi-head attention of query {call.shape(0)} and key {call.shape(1)}")
    b, L, e = q
    S = k[1]
    if call.has_tensor(9):
        call.assume(
            "a mask is given: where it pads sequences, the fast path skips the padded "
            "positions, which the FLOPs count as computed (the mask's values are not recorded)"
        )
    flops = 2.0 * e * e * (2 * b * L + 2 * b * S) + b * e * (2 * L + 2 * S)
    flops += attention_flops(b, 1, L * S, e, e)
    size = call.itemsize(0)
    params = sum(call.nbytes(i) for i in (5, 6, 7, 8) if call.has_tensor(i))
    nbytes = call.nbytes(0) + call.nbytes(1) + call.nbytes(2) + params + b * L * e * size
    if call.value(10) is not False:  # need_weights defaults to True
        heads = call.value(4)
        per_head = isinstance(heads, int) and call.value(11) is False
        nbytes += b * L * S * size * (heads if per_head else 1)
    return Cost("attention", flops, float(nbytes), precision_of(call, 0), matrix=True)


def _unknown_lengths(what: str) -> Callable[[OpCall], Cost]:
    def no_model(call: OpCall) -> Cost:
        raise NoModel(
            f"{what}: the work depends on each sequence's length, a tensor's values, "
            "which the profiler does not record"
        )

    return no_model


# Paged, varlen and serving-stack attention: Input Dims give the packed tokens and the KV
# cache's capacity, not how many keys each query attends (seq_lens / cu_seqlens values, or
# the attention metadata of the forward context): their work is not in the trace.
for _name, _what in {
    "_C::paged_attention_v1": "paged attention",
    "_C::paged_attention_v2": "paged attention",
    "_rocm_C::paged_attention": "paged attention",
    "vllm::unified_attention": "vLLM unified attention",
    "vllm::unified_attention_with_output": "vLLM unified attention",
    "flash_attn::_flash_attn_varlen_forward": "varlen flash attention",
    "flash_attn::_flash_attn_varlen_backward": "varlen flash attention",
    "aiter::mha_varlen_fwd": "varlen flash attention",
    "aiter::fmha_v3_varlen_fwd": "varlen flash attention",
}.items():
    model(_name)(_unknown_lengths(_what))
