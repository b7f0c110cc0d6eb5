"""The FLOP models against brute-force counts on random small shapes (matmul, bmm, conv
with strides, padding, dilation and groups, attention with causal masks and grouped-query
heads, norms), and the byte models fixed for rows that ran above their device's peak, with
hand-computed answers."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hta_fast.costs.cost import Cost
from hta_fast.costs.flops import cost_of

small = st.integers(1, 6)


def _cost(name, dims, types, concrete=None, strides=None) -> Cost:
    c = cost_of(
        name,
        json.dumps(dims),
        json.dumps(types),
        None if concrete is None else json.dumps(concrete),
        strides=None if strides is None else json.dumps(strides),
    )
    assert isinstance(c, Cost), c
    return c


# --- matmul and bmm: a multiply and an add per (i, j, p) ---------------------------------
@settings(max_examples=60, deadline=None)
@given(b=small, m=small, k=small, n=small)
def test_matmul_flops_are_the_multiply_adds_counted(b, m, k, n):
    macs = sum(1 for _ in range(m) for _ in range(n) for _ in range(k))
    assert _cost("aten::mm", [[m, k], [k, n]], ["float", "float"]).flops == 2 * macs
    got = _cost("aten::bmm", [[b, m, k], [b, k, n]], ["c10::BFloat16"] * 2)
    assert got.flops == 2 * b * macs and got.precision == "bf16"


# --- convolution: slide the window over the padded input, count its taps ------------------
def _positions(size: int, k: int, s: int, p: int, d: int) -> int:
    """Window starts over the padded input where the dilated window fits, stepping by s."""
    count, start = 0, -p
    while start + d * (k - 1) <= size + p - 1:
        count += 1
        start += s
    return count


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 2),
    g=st.integers(1, 3),
    c_per=st.integers(1, 3),
    k_per=st.integers(1, 3),
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    kh=st.integers(1, 3),
    kw=st.integers(1, 3),
    stride=st.integers(1, 3),
    pad=st.integers(0, 2),
    dil=st.integers(1, 2),
)
def test_conv_flops_are_the_taps_of_every_window(
    n, g, c_per, k_per, h, w, kh, kw, stride, pad, dil
):
    oh, ow = _positions(h, kh, stride, pad, dil), _positions(w, kw, stride, pad, dil)
    if oh == 0 or ow == 0:
        return  # the window does not fit: no model, checked elsewhere
    c, k = g * c_per, g * k_per
    taps = 0
    for _ in range(n * k * oh * ow):  # each output element: a dot product over its group
        taps += c_per * kh * kw
    concrete = ["", "", "", f"[{stride}, {stride}]", f"[{pad}, {pad}]", f"[{dil}, {dil}]", str(g)]
    got = _cost(
        "aten::conv2d",
        [[n, c, h, w], [k, c_per, kh, kw], [], [], [], [], []],
        ["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Int"],
        concrete,
    )
    assert got.flops == 2 * taps and not got.assumed


def test_a_1x1_convolution_without_its_stride_is_uncertain():
    """ResNet's downsampling 1x1 convolution has stride 2; without Concrete Inputs it is
    costed at stride 1 (4x the work) and says so."""
    c = _cost("aten::cudnn_convolution", [[8, 64, 56, 56], [256, 64, 1, 1]], ["float", "float"])
    assert c.flops == 2 * 8 * 256 * 56 * 56 * 64
    assert any("stride not recorded" in a for a in c.assumed)


# --- attention: count the (query, key) pairs the mask keeps -------------------------------
@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 2),
    h_kv=st.integers(1, 2),
    group=st.integers(1, 3),
    L=st.integers(1, 7),
    S=st.integers(1, 7),
    e=st.sampled_from([4, 8]),
    causal=st.booleans(),
)
def test_attention_flops_are_the_pairs_kept_times_the_head_sizes(b, h_kv, group, L, S, e, causal):
    h = h_kv * group  # grouped-query: each key/value head serves `group` query heads
    if causal:
        pairs = sum(1 for i in range(L) for j in range(S) if j <= i + S - L)  # bottom-right
    else:
        pairs = L * S
    q, kv = [b, L, h, e], [b, S, h_kv, e]  # flash-attn's layout (B, L, H, E)
    concrete = ["", "", "", "0.0", "0.125", "True" if causal else "False"]
    got = _cost(
        "flash_attn::_flash_attn_forward",
        [q, kv, kv, [], [], []],
        ["c10::Half"] * 3 + ["Scalar", "Scalar", "Scalar"],
        concrete,
    )
    assert got.flops == 2 * b * h * pairs * (e + e)
    assert got.bytes == 2 * (b * L * h * e + 2 * b * S * h_kv * e + b * h * L * e)


@settings(max_examples=40, deadline=None)
@given(L=st.integers(1, 7), S=st.integers(1, 7), causal=st.booleans())
def test_sdpa_causal_mask_is_top_left(L, S, causal):
    pairs = sum(1 for i in range(L) for j in range(S) if (j <= i or not causal))
    got = _cost(
        "aten::_scaled_dot_product_flash_attention",
        [[1, 2, L, 8], [1, 2, S, 8], [1, 2, S, 8], [], [], []],
        ["c10::BFloat16"] * 3 + ["Scalar"] * 3,
        ["", "", "", "0.0", "True" if causal else "False", ""],
    )
    assert got.flops == 2 * 2 * pairs * 16


# --- norms: a fixed count per element over every normalised element -----------------------
@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), affine=st.booleans())
def test_layer_norm_counts_every_element(shape, affine):
    elements = 0
    stack = [0]
    for d in shape:  # walk every index of the shape, not the product
        stack = [i * d + j for i in stack for j in range(d)]
    elements = len(stack)
    weight = [shape[-1]] if affine else []
    got = _cost(
        "aten::layer_norm",
        [shape, [], weight, weight, [], []],
        ["float", "ScalarList", "float" if affine else "", "float" if affine else "", "Scalar", ""],
    )
    assert got.flops == elements * (7 if affine else 5)
    assert got.bytes == 2 * elements * 4 + (2 * shape[-1] * 4 if affine else 0)


# --- bytes: rows that ran above the peak for these -----------------------------------------
def test_an_out_tensor_is_written_not_read():
    # aten::mul(self, other=2.0, out): as the profiler records mul.out
    c = _cost("aten::mul", [[1000, 8], [], [1000, 8]], ["float", "double", "float"])
    assert c.bytes == 8000 * 4 * 2  # self read, out written
    # the functional form: both operands read, the output written
    c = _cost("aten::mul", [[1000, 8], [1000, 8]], ["float", "float"])
    assert c.bytes == 8000 * 4 * 3
    # add(self, other, alpha) has three inputs of its own: a fourth, shaped so, is out
    c = _cost(
        "aten::add", [[10, 10], [10, 10], [], [10, 10]], ["float", "float", "Scalar", "float"]
    )
    assert c.bytes == 100 * 4 * 3
    c = _cost("aten::add", [[10, 10], [10, 10], []], ["float", "float", "Scalar"])
    assert c.bytes == 100 * 4 * 3
    # in place: self read and written
    c = _cost("aten::add_", [[10, 10], [10, 10], []], ["float", "float", "Scalar"])
    assert c.bytes == 100 * 4 * 3


def test_fill_only_writes():
    c = _cost("aten::fill_", [[512, 64], []], ["c10::BFloat16", "Scalar"])
    assert c.bytes == 512 * 64 * 2 and c.precision == "bf16"


def test_an_expanded_index_is_read_once_and_a_gather_reads_no_more_than_its_source():
    # FLUX's text encoder: gather(self [49408, 768] bf16, 0, index [77, 768] with strides
    # [1, 0] (a column expanded), ..., out): 77 index values, 77 x 768 elements read/written
    dims = [[49408, 768], [], [77, 768], [], [77, 768]]
    types = ["c10::BFloat16", "Scalar", "long int", "Scalar", "c10::BFloat16"]
    c = _cost(
        "aten::gather",
        dims,
        types,
        ["", "0", "", "False", ""],
        [[768, 1], [], [1, 0], [], [768, 1]],
    )
    assert c.bytes == 77 * 8 + 77 * 768 * 2 * 2 and c.precision == "bf16"
    # the same without strides: the index counts whole
    c = _cost("aten::gather", dims, types, ["", "0", "", "False", ""])
    assert c.bytes == 77 * 768 * 8 + 77 * 768 * 2 * 2
    # a gather of more elements than its source holds reads the source once
    c = _cost("aten::gather", [[4, 8], [], [64, 8]], ["float", "Scalar", "long int"])
    assert c.bytes == 64 * 8 * 8 + 32 * 4 + 64 * 8 * 4


def test_a_copy_takes_its_source_precision():
    c = _cost("aten::copy_", [[4, 8], [4, 8], []], ["float", "c10::BFloat16", "Scalar"])
    assert c.precision == "bf16" and c.bytes == 32 * 4 + 32 * 2


def test_a_masked_native_mha_is_uncertain():
    dims = [[2, 16, 64], [2, 16, 64], [2, 16, 64], [], [], [192, 64], [192], [64, 64], [64]]
    types = ["float"] * 3 + ["Scalar", "Scalar"] + ["float"] * 4
    plain = _cost("aten::_native_multi_head_attention", dims, types)
    masked = _cost("aten::_native_multi_head_attention", dims + [[2, 16]], types + ["bool"])
    assert not plain.assumed and masked.flops == plain.flops
    assert "mask" in masked.assumed[0]


def test_scatters_move_the_places_they_write():
    # scatter_add_(self [100, 8], 0, index [10, 8], src [10, 8]): 80 places read and written,
    # 80 source elements and the index read
    c = _cost(
        "aten::scatter_add_",
        [[100, 8], [], [10, 8], [10, 8]],
        ["float", "Scalar", "long int", "float"],
    )
    assert c.bytes == 80 * 8 + 80 * 4 * 3 and c.flops == 80
    # the out-of-place form copies self first
    c = _cost(
        "aten::scatter", [[100, 8], [], [10, 8], [10, 8]], ["float", "Scalar", "long int", "float"]
    )
    assert c.bytes == 80 * 8 + 80 * 4 * 2 + 2 * 800 * 4 and c.flops == 0
    # index_add_(self [100, 8], 0, index [10], source [10, 8]): 10 rows of 8 accumulated
    c = _cost(
        "aten::index_add_",
        [[100, 8], [], [10], [10, 8], []],
        ["c10::Half", "Scalar", "long int", "c10::Half", "Scalar"],
    )
    assert c.bytes == 10 * 8 + 80 * 2 * 3 and c.precision == "fp16"
