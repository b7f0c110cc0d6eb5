"""Scaled-dot-product and flash attention, forward and backward, causal and grouped-query.

With B batch, H query heads, L query and S key positions, E the query/key and Ev the value
head size, the forward is two products: Q K^T (2*B*H*L*S*E) and P V (2*B*H*L*S*Ev). A
causal mask keeps only the (query, key) pairs at or before the diagonal: top-left aligned
for PyTorch's kernels, bottom-right aligned for the flash-attn package when L != S. Keys and
values may have fewer heads than queries (grouped-query attention): FLOPs follow the query
heads, bytes the tensors' own sizes. The backward recomputes Q K^T and adds four products
(dV, dP, dQ, dK): 2.5 times the forward's FLOPs. Bytes: forward reads q, k, v and writes the
output; backward reads q, k, v, out, dout and writes dq, dk, dv.
"""

from __future__ import annotations

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
    flops = 2.0 * b * h * pairs * (e + ev)
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
