"""FLOPs and bytes of the inference-side operator models (einsum, native multi-head
attention, convolution backward halves, upsampling, serving stacks' GEMMs, fused MoE,
Triton kernels, group norm, ...), each against values worked out by hand from the shapes;
and the share of GPU time modelled on the real inference traces."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.ops import roofline
from hta_fast.cli import cli
from hta_fast.costs.flops import cost_of, op_costs
from tests.support._op_cost import cost

BF16, F32, FP8, I8 = "c10::BFloat16", "float", "c10::Float8_e4m3fn", "signed char"


def reason(name, dims, types, concrete=None):
    c = cost_of(
        name,
        json.dumps(dims),
        json.dumps(types),
        None if concrete is None else json.dumps(concrete),
    )
    assert isinstance(c, str), c
    return c


def einsum(equation, shapes, path=""):
    return cost("aten::einsum", [[], shapes, []], ["", "TensorList", ""], [equation, "", path])


# --- einsum -------------------------------------------------------------------------
def test_einsum_batched_contraction():
    # b=2, i=3, j=4, k=5: 2 * b*i*j*k multiply-adds; 4-byte elements (list dtypes unknown)
    c = einsum('"bij,bjk->bik"', [[2, 3, 4], [2, 4, 5]])
    assert (c.family, c.flops, c.matrix) == ("matmul", 2 * 2 * 3 * 4 * 5, True)
    assert c.bytes == 4 * (2 * 3 * 4 + 2 * 4 * 5 + 2 * 3 * 5)


def test_einsum_implicit_output_and_ellipsis():
    # "...ij,jk": ellipsis dims 2 x 7 batch the product; the output is ...ik
    c = einsum("...ij,jk", [[2, 7, 3, 4], [4, 5]])
    assert c.flops == 2 * (2 * 7) * 3 * 4 * 5
    assert c.bytes == 4 * (2 * 7 * 3 * 4 + 4 * 5 + 2 * 7 * 3 * 5)


def test_einsum_three_operands_left_to_right_and_along_a_path():
    # i=3, j=4, k=5, l=6. Left to right: (ij,jk)->ik costs 2*i*j*k, then (ik,kl)->il 2*i*k*l
    shapes = [[3, 4], [4, 5], [5, 6]]
    assert einsum("ij,jk,kl->il", shapes).flops == 2 * 3 * 4 * 5 + 2 * 3 * 5 * 6
    # path (1, 2) then (0, 1): (jk,kl)->jl costs 2*j*k*l, then (ij,jl)->il 2*i*j*l
    c = einsum("ij,jk,kl->il", shapes, "[1, 2, 0, 1]")
    assert c.flops == 2 * 4 * 5 * 6 + 2 * 3 * 4 * 6
    assert c.bytes == 4 * (12 + 20 + 30 + 3 * 6)


def test_einsum_outer_product_reduction_and_view():
    c = einsum("i,j->ij", [[3], [4]])  # no label summed: one multiply per output element
    assert (c.family, c.flops, c.matrix) == ("elementwise", 12, False)
    c = einsum("ij->i", [[3, 4]])
    assert (c.family, c.flops, c.bytes) == ("reduction", 12, 4 * (12 + 3))
    c = einsum("ij->ji", [[3, 4]])
    assert (c.family, c.flops, c.bytes) == ("view", 0, 0)


def test_einsum_without_its_equation_says_so():
    r = reason("aten::einsum", [[], [[2, 3], [3, 4]], []], ["", "TensorList", ""], ["", "", ""])
    assert "equation not recorded" in r
    r = reason(
        "aten::einsum", [[], [[2, 3], [4, 4]], []], ["", "TensorList", ""], ["ij,jk", "", ""]
    )
    assert "sizes 3 and 4" in r


# --- attention ----------------------------------------------------------------------
def test_native_multi_head_attention():
    # B=2, L=5 queries, S=7 keys, E=8 (2 heads): projections 2*E*E per q, k, v and output
    # position (q and out: B*L each; k and v: B*S each) plus their biases, and attention
    # 2*B*L*S*(E + E) (the heads cancel)
    dims = [[2, 5, 8], [2, 7, 8], [2, 7, 8], [], [], [24, 8], [24], [8, 8], [8], [], [], [], []]
    types = [F32] * 3 + ["Scalar"] * 2 + [F32] * 4 + ["", "Scalar", "Scalar", ""]
    concrete = ["", "", "", "8", "2", "", "", "", "", "", "False", "True", ""]
    c = cost("aten::_native_multi_head_attention", dims, types, concrete)
    positions = 2 * 5 + 2 * 7 + 2 * 7 + 2 * 5  # q, k, v, out
    proj, bias = 2 * 8 * 8 * positions, 8 * positions
    assert c.family == "attention" and c.matrix
    assert c.flops == proj + bias + 2 * 2 * 5 * 7 * 16
    elems = 2 * 5 * 8 + 2 * 2 * 7 * 8 + (24 * 8 + 24 + 64 + 8) + 2 * 5 * 8
    assert c.bytes == 4 * elems
    # need_weights=True, averaged over heads: B x L x S weights written as well
    concrete[10] = "True"
    c2 = cost("aten::_native_multi_head_attention", dims, types, concrete)
    assert c2.bytes == c.bytes + 4 * 2 * 5 * 7


def test_aiter_flash_attention_is_bottom_right_causal():
    # q [b=1, L=2, H=4, D=16], k/v [1, S=5, 4, 16]: bottom-right causal keeps 4 + 5 pairs
    dims = [[1, 2, 4, 16], [1, 5, 4, 16], [1, 5, 4, 16], [], [], [], [], []]
    types = [BF16] * 3 + ["Scalar"] * 5
    c = cost("aiter::mha_fwd", dims, types, ["", "", "", "0.", "0.25", "True", "-1", "0"])
    assert c.flops == 2 * 1 * 4 * (4 + 5) * (16 + 16)
    assert c.bytes == 2 * (2 * 64 + 5 * 64 * 2 + 2 * 64)
    c = cost("aiter::fmha_v3_fwd", dims, types, ["", "", "", "0.", "0.25", "False", "-1"])
    assert c.flops == 2 * 4 * 2 * 5 * 32


def test_paged_attention_says_what_is_missing():
    r = reason("_C::paged_attention_v1", [[4, 8, 64], [4, 8, 64]], [BF16, BF16])
    assert "sequence's length" in r
    assert "sequence's length" in reason("vllm::unified_attention", [[4, 512]], [BF16])


# --- convolution backward -----------------------------------------------------------
GO, W, X = [2, 8, 16, 16], [8, 4, 3, 3], [2, 4, 32, 32]  # stride 2, padding 1
ONE_PASS = 2 * 2 * 8 * 16 * 16 * 4 * 3 * 3  # N*K*out * (C/g * kernel) multiply-adds


def test_cudnn_backward_halves_with_concrete_sizes():
    concrete = ["[2, 4, 32, 32]", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False"]
    types = ["ScalarList", F32, F32] + ["ScalarList"] * 3 + ["Scalar"] * 3
    c = cost("aten::cudnn_convolution_backward_input", [[], GO, W] + [[]] * 6, types, concrete)
    assert (c.family, c.flops) == ("conv", ONE_PASS)
    assert c.bytes == 4 * (2 * 8 * 256 + 8 * 4 * 9 + 2 * 4 * 1024)
    concrete[0] = "[8, 4, 3, 3]"
    c = cost("aten::cudnn_convolution_backward_weight", [[], GO, X] + [[]] * 6, types, concrete)
    assert c.flops == ONE_PASS
    assert c.bytes == 4 * (2 * 8 * 256 + 2 * 4 * 1024 + 8 * 4 * 9)


def test_cudnn_backward_and_its_halves_without_concrete_inputs():
    # the older signature: (input, grad_output, weight, ...); both gradients by default
    types = [F32] * 3 + [""] * 8
    c = cost("aten::cudnn_convolution_backward", [X, GO, W] + [[]] * 8, types)
    assert c.flops == 2 * ONE_PASS
    assert c.bytes == 4 * ((4096 + 8192 + 288) + 8192 + 288)  # 3 read, 2 gradients written
    # the halves alone do not name the size they write; the enclosing group does
    half_types = json.dumps([""] + [F32] * 2 + [""] * 6)
    table = pa.table(
        {
            "name": [
                "aten::cudnn_convolution_backward",
                "aten::cudnn_convolution_backward_input",
                "aten::cudnn_convolution_backward_weight",
                "aten::miopen_convolution_backward_input",
            ],
            "input_dims": [
                json.dumps([X, GO, W] + [[]] * 8),
                json.dumps([[], GO, W] + [[]] * 6),
                json.dumps([[], GO, X] + [[]] * 6),
                json.dumps([[], GO, W] + [[]] * 6),
            ],
            "input_type": [json.dumps(types), half_types, half_types, half_types],
            "concrete_inputs": [None] * 4,
        }
    )
    out = op_costs(table)
    assert out["flops"].to_pylist()[:3] == [2 * ONE_PASS, ONE_PASS, ONE_PASS]
    assert out["bytes"][1].as_py() == 4 * (4096 + 288 + 8192)
    assert "no enclosing convolution backward" in out["no_model"][3].as_py()


# --- upsampling ---------------------------------------------------------------------
def test_upsample_nearest_both_overloads():
    x = [1, 512, 128, 128]  # doubled to 256 x 256; 1 tap per output element
    out = 512 * 256 * 256
    vec = cost(
        "aten::upsample_nearest2d", [x, [], []], [BF16, "", "ScalarList"], ["", "", "[2., 2.]"]
    )
    sized = cost(
        "aten::upsample_nearest2d",
        [x, [], [], []],
        [BF16, "ScalarList", "Scalar", "Scalar"],
        ["", "[256, 256]", "2.", "2."],
    )
    for c in (vec, sized):
        assert (c.family, c.flops, c.bytes, c.precision) == (
            "upsample",
            out,
            2 * (512 * 128 * 128 + out),
            "bf16",
        )


def test_upsample_linear_modes_and_backward():
    # bilinear, scale factors (1.5, 2.0) on 10 x 10 -> 15 x 20: 4 taps
    c = cost(
        "aten::upsample_bilinear2d",
        [[2, 3, 10, 10], [], [], []],
        [F32, "", "Scalar", "ScalarList"],
        ["", "", "False", "[1.5, 2.0]"],
    )
    assert c.flops == 2 * 3 * 15 * 20 * 4 and c.bytes == 4 * (600 + 1800)
    c = cost(
        "aten::upsample_trilinear3d",
        [[1, 2, 4, 4, 4], [], [], [], [], []],
        [F32, "ScalarList", "Scalar", "", "", ""],
        ["", "[8, 8, 8]", "True", "", "", ""],
    )
    assert c.flops == 2 * 512 * 8 and c.bytes == 4 * (2 * 64 + 2 * 512)
    # bicubic backward: grad_output [2, 3, 20, 20] read, grad_input [2, 3, 10, 10] written
    c = cost(
        "aten::upsample_bicubic2d_backward",
        [[2, 3, 20, 20], [], [], []],
        [F32, "ScalarList", "ScalarList", "Scalar"],
        ["", "[20, 20]", "[2, 3, 10, 10]", "False"],
    )
    assert c.flops == 2 * 3 * 400 * 16 and c.bytes == 4 * (2400 + 600)
    r = reason("aten::upsample_nearest2d", [[1, 3, 4, 4], [], []], [F32, "", ""])
    assert "not recorded" in r


# --- serving stacks: GEMMs and fused MoE --------------------------------------------
def test_vllm_cutlass_scaled_mm():
    # out [16, 64] bf16 = a [16, 32] fp8 @ b [32, 64] fp8, per-token and per-channel scales
    dims = [[16, 64], [16, 32], [32, 64], [16, 1], [1, 64], []]
    c = cost("_C::cutlass_scaled_mm", dims, [BF16, FP8, FP8, F32, F32, ""])
    assert (c.family, c.precision, c.flops) == ("matmul", "fp8", 2 * 16 * 32 * 64)
    assert c.bytes == 16 * 32 + 32 * 64 + 2 * 16 * 64 + 4 * (16 + 64)
    r = reason("_C::cutlass_scaled_mm", [[16, 64], [16, 32], [33, 64]], [BF16, FP8, FP8])
    assert "inner dimensions" in r


def test_aiter_a8w8_and_hipblaslt():
    # XQ [16, 32] int8, WQ [64, 32] (n x k), scales, Out [16, 64] bf16
    dims = [[16, 32], [64, 32], [16, 1], [1, 64], [16, 64]]
    c = cost("aiter::gemm_a8w8_bpreshuffle", dims, [I8, I8, F32, F32, BF16])
    assert (c.precision, c.flops) == ("int8", 2 * 16 * 32 * 64)
    assert c.bytes == 16 * 32 + 64 * 32 + 2 * 16 * 64 + 4 * (16 + 64)
    # hipb_mm(mat1 [8, 32], mat2 [32, 16], solution, bias [16]): as mm plus the bias
    c = cost("aiter::hipb_mm", [[8, 32], [32, 16], [], [16]], [BF16, BF16, "Scalar", BF16])
    assert c.flops == 2 * 8 * 32 * 16 + 8 * 16
    assert c.bytes == 2 * (8 * 32 + 32 * 16 + 8 * 16 + 16)


def test_fused_moe_as_a_grouped_gemm():
    # M=8 tokens, K=32, E=4 experts, N=64 (w1 gated: 128 rows), top-2
    dims = [[8, 32], [4, 128, 32], [4, 32, 64], [8, 2], [8, 2]]
    types = [BF16] * 3 + [F32, "int"]
    c = cost("vllm::outplace_fused_experts", dims, types)
    assert (c.family, c.matrix) == ("matmul", True)
    assert c.flops == 2 * 16 * 32 * 128 + 2 * 16 * 64 * 32
    weights = 2 * (4 * 128 * 32 + 4 * 32 * 64)  # 16 routed rows reach all 4 experts
    assert c.bytes == 2 * (2 * 8 * 32) + 4 * 16 + 4 * 16 + weights
    # one token, top-2: at most 2 of the 4 experts' weights are read
    dims = [[1, 32], [4, 128, 32], [4, 32, 64], [1, 2], [1, 2]]
    c = cost("aiter::fused_moe_", dims, types)
    assert c.bytes == 2 * (2 * 32) + 4 * 2 + 4 * 2 + weights / 2
    r = reason(
        "vllm::inplace_fused_experts", [[8, 32], [4, 128, 16], [4, 32, 64], [8, 2], [8, 2]], types
    )
    assert "packed" in r


def test_moe_routing_ops():
    # topk_softmax(topk_weights [8, 2], topk_ids [8, 2], token_expert_indices, gating [8, 16])
    c = cost("_moe_C::topk_softmax", [[8, 2], [8, 2], [8, 2], [8, 16]], [F32, "int", "int", F32])
    assert (c.family, c.flops, c.bytes) == ("softmax", 5 * 8 * 16, 4 * (3 * 16 + 128))
    c = cost("_moe_C::moe_sum", [[8, 2, 32], [8, 32]], [BF16, BF16])
    assert (c.flops, c.bytes) == (8 * 2 * 32, 2 * (512 + 256))


# --- norms, activations, copies and Triton kernels ----------------------------------
def test_aiter_group_norm_and_vllm_norms():
    x = [1, 512, 128, 128]
    n = 512 * 128 * 128
    c = cost(
        "aiter::_groupnorm_run",
        [x, [], [512], [512], []],
        [BF16, "Scalar", BF16, BF16, "Scalar"],
        ["", "32", "", "", "1e-06"],
    )
    assert (c.family, c.flops, c.bytes) == ("norm", 7 * n, 2 * (2 * n + 2 * 512))
    # aten::group_norm(input, num_groups, weight, bias, eps, cudnn_enabled): affine
    c = cost(
        "aten::group_norm",
        [x, [], [512], [512], [], []],
        [BF16, "Scalar", BF16, BF16, "Scalar", "Scalar"],
    )
    assert c.flops == 7 * n
    c = cost("_C::rms_norm", [[4, 64], [4, 64], [64], []], [BF16, BF16, BF16, "Scalar"])
    assert (c.flops, c.bytes) == (4 * 256, 2 * (2 * 256 + 64))
    c = cost("_C::fused_add_rms_norm", [[4, 64], [4, 64], [64], []], [BF16] * 3 + ["Scalar"])
    assert (c.flops, c.bytes) == (5 * 256, 2 * (4 * 256 + 64))
    c = cost("_C::silu_and_mul", [[4, 64], [4, 128]], [BF16, BF16])
    assert (c.family, c.flops, c.bytes) == ("elementwise", 2 * 256, 2 * (256 + 512))


def test_gather_index_select_repeat_and_random_fills():
    c = cost("aten::gather", [[100, 8], [], [5, 8], []], [F32, "Scalar", "long int", "Scalar"])
    assert (c.family, c.bytes) == ("copy", 8 * 40 + 2 * 4 * 40)
    c = cost(
        "aten::index_select", [[1000, 64], [], [7]], [BF16, "Scalar", "long int"], ["", "0", ""]
    )
    assert c.bytes == 8 * 7 + 2 * 2 * 7 * 64
    c = cost("aten::repeat", [[2, 3], []], [F32, "ScalarList"], ["", "[4, 1, 2]"])
    assert c.bytes == 4 * (6 + 6 * 8)
    c = cost("aten::normal_", [[16, 8], [], [], []], [BF16, "Scalar", "Scalar", ""])
    assert (c.flops, c.bytes) == (128, 256)
    c = cost(
        "aten::_foreach_copy_", [[[2, 3], [5]], [[2, 3], [5]], []], ["TensorList"] * 2 + ["Scalar"]
    )
    assert c.bytes == 2 * 4 * 11


def test_inductor_triton_kernels():
    # triton_poi_fused_add_cos_sin_0(in_ptr0, in_ptr1, out_ptr0, xnumel=100)
    dims = [[10, 10], [10, 10], [10, 10], []]
    c = cost("triton_poi_fused_add_cos_sin_0", dims, [F32] * 3 + ["Scalar"], ["", "", "", "100"])
    assert (c.family, c.flops, c.bytes) == ("elementwise", 100, 3 * 400)
    c = cost("triton_red_fused_sum_1", [[64, 1], [64, 512], []], [BF16, BF16, "Scalar"])
    assert (c.family, c.flops, c.bytes) == ("reduction", 64 * 512, 2 * (64 + 64 * 512))
    assert "no model" in reason("triton_tem_fused_mm_2", [[4, 4], [4, 4]], [F32, F32])


# --- real traces: the share of GPU time modelled ------------------------------------
# (trace, share before these models, floor now): modelled_pct of roofline's coverage
FLUX = "pairs/attention_backend/flux_aiter.json.gz"
SHARES = [
    (FLUX, 10.22, 10.75),
    ("pairs/attention_backend/flux_aiter_sage.json.gz", 9.72, 10.2),
    ("hta/triton_example/triton_example.json.gz", 0.0, 99.9),
    ("pairs/gpu_swap/Qwen_Qwen1.5-0.5B-Chat.h100.json.gz", 99.98, 99.98),
    ("pairs/gpu_swap/Falconsai_nsfw_image_detection.mi300x.json.gz", 100.0, 99.99),
]


@pytest.mark.parametrize("path, before, floor", SHARES)
def test_modelled_share_on_real_traces(traces_dir, path, before, floor):
    r = roofline.roofline(hta_fast.load(str(traces_dir / path)))
    pct = r.tables["coverage"]["modelled_pct"][0].as_py()
    assert pct >= floor, (path, before, pct)


def test_flux_outside_its_graph_replays_is_modelled(traces_dir):
    """FLUX under xDiT runs its transformer as 4 graph replays (hipGraphLaunch under
    `Torch-Compiled Region: 0/0`), whose ~4,000 kernels have no operator shapes; the eager
    part (VAE decoder, text encoders) records shapes, and nearly all of it is modelled."""
    res = CliRunner().invoke(cli, ["ops", str(traces_dir / FLUX), "--limit", "1"])
    assert res.exit_code == 0, res.output
    note = next(line for line in res.output.splitlines() if "operators with a cost model" in line)
    assert "Torch-Compiled Region: 0/0 (no input shapes recorded, a graph replay)" in note
    r = roofline.roofline(hta_fast.load(str(traces_dir / FLUX)))
    cov = r.tables["coverage"].to_pylist()[0]
    graph_ns = 610_433_000  # the 3,972 kernels of the 4 replays (610.43 ms)
    eager = cov["gpu_time"] - cov["host_transfer_time"] - graph_ns
    assert cov["modelled_time"] / eager > 0.999
    names = set(r.table["name"].to_pylist())
    assert {"aiter::_groupnorm_run", "aten::upsample_nearest2d"} <= names
