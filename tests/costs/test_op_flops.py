"""FLOPs and bytes per operator family, against hand-computed values."""

from __future__ import annotations

import json

import hta_fast
from hta_fast.analysis.ops.op_table import op_table
from hta_fast.costs.flops import cost_of, no_model_summary, with_costs
from tests.support._op_cost import cost


# --- matmul family ------------------------------------------------------------------
def test_mm_addmm_bmm_baddbmm():
    c = cost("aten::mm", [[4, 8], [8, 16]])
    assert (c.family, c.flops, c.bytes, c.precision, c.matrix) == (
        "matmul",
        2 * 4 * 8 * 16,
        4 * (32 + 128 + 64),
        "fp32",
        True,
    )
    c = cost("aten::addmm", [[16], [4, 8], [8, 16], [], []], ["float"] * 3 + ["Scalar"] * 2)
    assert c.flops == 2 * 4 * 8 * 16 + 4 * 16 and c.bytes == 4 * (16 + 32 + 128 + 64)
    c = cost("aten::bmm", [[3, 4, 8], [3, 8, 16]], ["c10::BFloat16"] * 2)
    assert c.flops == 3 * 2 * 4 * 8 * 16 and c.bytes == 2 * 3 * (32 + 128 + 64)
    assert c.precision == "bf16"
    c = cost("aten::baddbmm", [[3, 4, 16], [3, 4, 8], [3, 8, 16]], ["c10::Half"] * 3)
    assert c.flops == 3 * (2 * 4 * 8 * 16 + 4 * 16) and c.precision == "fp16"


def test_matmul_broadcasting_and_linear():
    # (2, 3, 4, 8) @ (8, 16): batch 6
    assert cost("aten::matmul", [[2, 3, 4, 8], [8, 16]]).flops == 6 * 2 * 4 * 8 * 16
    # vector @ matrix
    assert cost("aten::matmul", [[8], [8, 16]]).flops == 2 * 8 * 16
    c = cost("aten::linear", [[5, 7, 8], [16, 8], [16]])
    assert c.flops == 2 * 35 * 8 * 16 + 35 * 16
    assert c.bytes == 4 * (35 * 8 + 16 * 8 + 35 * 16 + 16)


def test_scaled_and_grouped_gemm():
    c = cost(
        "aten::_scaled_mm",
        [[64, 32], [32, 128], [], []],
        ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float"],
    )
    assert c.precision == "fp8" and c.flops == 2 * 64 * 32 * 128
    assert c.bytes == 64 * 32 + 32 * 128 + 64 * 128 * 2
    c = cost(
        "aten::_grouped_mm",
        [[100, 32], [4, 32, 64], [4]],
        ["c10::BFloat16", "c10::BFloat16", "int"],
    )
    assert c.flops == 2 * 100 * 32 * 64
    assert c.bytes == 2 * (100 * 32 + 4 * 32 * 64 + 100 * 64)


def test_mismatched_inner_dimension_is_no_model():
    reason = cost_of("aten::mm", "[[4, 8], [9, 16]]", '["float", "float"]')
    assert isinstance(reason, str) and "inner dimensions" in reason


# --- convolution --------------------------------------------------------------------
def test_conv2d_forward_with_stride_and_padding():
    # N=2, C=3, 32x32, K=8, 3x3, stride 2, padding 1 -> 16x16 output
    c = cost(
        "aten::convolution",
        [[2, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], [], [], []],
        ["float"] * 3 + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"],
    )
    out = 2 * 8 * 16 * 16
    assert c.flops == 2 * out * 3 * 9 + out
    assert c.bytes == 4 * (2 * 3 * 32 * 32 + 8 * 3 * 9 + out + 8)


def test_conv_without_concrete_inputs_is_no_model_unless_1x1():
    r = cost_of(
        "aten::convolution",
        json.dumps([[2, 3, 32, 32], [8, 3, 3, 3], [8]]),
        json.dumps(["float"] * 3),
    )
    assert isinstance(r, str) and "stride" in r
    c = cost("aten::convolution", [[2, 3, 32, 32], [8, 3, 1, 1], []])
    assert c.flops == 2 * 2 * 8 * 32 * 32 * 3


def test_conv_backward_counts_both_gradients():
    # grad_out (2, 8, 16, 16), input (2, 3, 32, 32), weight (8, 3, 3, 3)
    c = cost(
        "aten::convolution_backward",
        [[2, 8, 16, 16], [2, 3, 32, 32], [8, 3, 3, 3], [], [], [], [], [], [], [], []],
        ["float"] * 3 + [""] * 8,
        [""] * 10 + ["[True, True, False]"],
    )
    assert c.flops == 2 * (2 * 2 * 8 * 16 * 16 * 3 * 9)


# --- attention ----------------------------------------------------------------------
def test_flash_attention_causal_and_gqa():
    B, H, Hk, L, E = 2, 8, 2, 128, 64
    q, k = [B, H, L, E], [B, Hk, L, E]
    c = cost(
        "aten::_scaled_dot_product_flash_attention",
        [q, k, k, [], [], [], []],
        ["c10::BFloat16"] * 3 + ["Scalar", "Scalar", "Scalar", ""],
        ["", "", "", "0.", "True", "False", ""],
    )
    pairs = L * (L + 1) // 2
    assert c.flops == 2 * B * H * pairs * (E + E) and c.precision == "bf16"
    assert c.bytes == 2 * (B * H * L * E + 2 * B * Hk * L * E + B * H * L * E)
    full = cost(
        "aten::_scaled_dot_product_flash_attention",
        [q, k, k, [], [], [], []],
        ["c10::BFloat16"] * 3 + ["Scalar"] * 3 + [""],
        ["", "", "", "0.", "False", "False", ""],
    )
    assert full.flops == 4 * B * H * L * L * E
    bwd = cost(
        "aten::_scaled_dot_product_flash_attention_backward",
        [q, q, k, k, q, [B, H, L]] + [[]] * 9,
        ["c10::BFloat16"] * 5 + ["float"] + [""] * 9,
        [""] * 11 + ["False"] + [""] * 3,
    )
    assert bwd.flops == 2.5 * full.flops


def test_flash_attn_package_layout_is_batch_length_heads():
    q = [2, 128, 8, 64]
    c = cost(
        "flash_attn::_flash_attn_forward",
        [q, q, q, [], [], []],
        ["c10::Half"] * 3 + ["Scalar"] * 3,
        ["", "", "", "0.0", "0.125", "False"],
    )
    assert c.flops == 4 * 2 * 8 * 128 * 128 * 64


# --- memory-bound families ----------------------------------------------------------
def test_elementwise_broadcast_and_inplace():
    c = cost("aten::add", [[4, 1, 8], [3, 1], []], ["float", "float", "Scalar"])
    assert c.family == "elementwise" and c.flops == 4 * 3 * 8
    assert c.bytes == 4 * (32 + 3 + 96)
    c = cost("aten::relu_", [[10, 10]])
    assert c.flops == 100 and c.bytes == 800
    assert cost("aten::addcmul_", [[10], [10], [10], []], ["float"] * 3 + ["Scalar"]).flops == 30


def test_reductions_softmax_norm_dropout():
    c = cost(
        "aten::sum",
        [[1024, 512], [], [], []],
        ["float", "ScalarList", "Scalar", ""],
        ["", "[0]", "False", ""],
    )
    assert c.flops == 1024 * 512 and c.bytes == 4 * (1024 * 512 + 512)
    c = cost(
        "aten::_softmax", [[8, 100], [], []], ["c10::Half", "Scalar", "Scalar"], ["", "-1", "False"]
    )
    assert c.family == "softmax" and c.flops == 5 * 800 and c.bytes == 2 * 800 * 2
    c = cost(
        "aten::native_layer_norm",
        [[16, 512], [], [512], [512], []],
        ["float", "ScalarList", "float", "float", "Scalar"],
    )
    assert c.flops == 7 * 16 * 512 and c.bytes == 4 * (2 * 16 * 512 + 2 * 512)
    c = cost("aten::native_dropout", [[1000], [], []], ["c10::BFloat16", "Scalar", "Scalar"])
    assert c.bytes == 2 * 1000 * 2 + 1000 and c.flops == 2000


def test_embedding_and_embedding_bag():
    c = cost(
        "aten::embedding",
        [[1000, 64], [32, 10], [], [], []],
        ["float", "long int", "Scalar", "Scalar", "Scalar"],
    )
    assert c.flops == 0 and c.bytes == 320 * 8 + 2 * 320 * 64 * 4
    c = cost(
        "aten::_embedding_bag",
        [[1000, 64], [320], [33], [], [], [], [], [], []],
        ["float", "long int", "long int"] + ["Scalar"] * 6,
        [""] * 7 + ["True", ""],
    )
    bags = 32
    assert c.flops == 320 * 64
    assert c.bytes == 320 * 8 + 320 * 64 * 4 + bags * 64 * 4 + 33 * 8


def test_copies_and_casts():
    c = cost("aten::copy_", [[100], [100], []], ["c10::Half", "float", "Scalar"])
    assert c.family == "copy" and c.bytes == 200 + 400
    c = cost(
        "aten::_to_copy",
        [[100], [], [], [], [], [], []],
        ["float"] + ["Scalar"] * 6,
        ["", "15", "", "", "", "", ""],
    )  # to bfloat16
    assert c.bytes == 400 + 200
    assert cost("aten::view", [[4, 4], []]).bytes == 0


def test_missing_shapes_and_unknown_ops_have_reasons():
    assert cost_of("aten::mm", None, None) == "no input shapes recorded (record_shapes off)"
    assert cost_of("my::op", "[[1]]", '["float"]') == "no model for this operator"
    assert "not JSON" in cost_of("aten::mm", "[[4, 8", '["float"]')
    assert "dtype" in cost_of("aten::mm", "[[4, 8], [8, 2]]", '["weird", "weird"]')


# --- real traces --------------------------------------------------------------------
def test_real_trace_addmm_flops_and_no_silent_drop(traces_dir):
    trace = hta_fast.load(traces_dir / "hta/trace_diff/control/control.json.gz")
    table = with_costs(op_table(trace).table)
    df = table.to_pandas()
    row = df[
        (df.name == "aten::addmm") & (df.input_dims == "[[512], [1024, 1705], [1705, 512], [], []]")
    ].iloc[0]
    assert row.flops == 2 * 1024 * 1705 * 512 + 1024 * 512
    assert row.total_flops == row.flops * row["count"]
    # every group has either a family or a reason
    assert (df.family.notna() ^ df.no_model.notna()).all()
    summary = no_model_summary(table).to_pandas()
    assert summary.calls.sum() == df[df.no_model.notna()]["count"].sum()


def test_real_trace_with_concrete_inputs(traces_dir):
    trace = hta_fast.load(traces_dir / "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    df = with_costs(op_table(trace).table).to_pandas()
    mm = df[df.family == "matmul"]
    assert len(mm) > 0 and (mm.flops > 0).all()
    assert (df.family.notna() ^ df.no_model.notna()).all()


def test_every_real_trace_costs_or_explains_every_group(traces_dir, chrome_trace):
    """On every shared trace: the op table, its costs, the roofline and the collective bytes
    run, and every operator group has a family or a reason (nothing dropped)."""
    from hta_fast.analysis.ops.roofline import roofline
    from hta_fast.model.comm.comm_bytes import comm_bytes

    trace = hta_fast.load(traces_dir / chrome_trace)
    table = with_costs(op_table(trace).table)
    fam = table["family"].is_valid().to_pylist()
    reason = table["no_model"].is_valid().to_pylist()
    assert all(f != r for f, r in zip(fam, reason))
    r = roofline(trace)
    cov = r["coverage"].to_pylist()[0] if r["coverage"].num_rows else None
    if cov:
        assert cov["modelled_time"] <= cov["gpu_time"]
    comm_bytes(trace)


def test_op_table_with_costs_option():
    from tests.support.op_traces import OpTraceBuilder

    b = OpTraceBuilder()
    b.op_with_kernels("aten::mm", 0, [[4, 8], [8, 16]], ["float", "float"], [10.0])
    b.op_with_kernels("my::op", 500, [[4]], ["float"], [5.0])
    r = op_table(b.load(), costs=True)
    t = r.to_pandas().set_index("name")
    assert t.loc["aten::mm", "flops"] == 2 * 4 * 8 * 16 and t.loc["aten::mm", "family"] == "matmul"
    nm = r["no_model"].to_pandas()
    assert list(nm.name) == ["my::op"] and nm.gpu_time_sum[0] == 5_000
