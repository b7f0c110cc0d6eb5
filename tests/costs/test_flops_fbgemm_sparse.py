"""FBGEMM's sparse-feature permutes, bounds checks, bucketizing, offsets, pooled permutes and
FP8/HFP8 casts: bytes against hand-computed values, and every FBGEMM operator of the real
DLRM-style traces costed."""

from __future__ import annotations

import hta_fast
from hta_fast.analysis.ops.op_table import op_table
from hta_fast.costs.flops import cost_of, with_costs
from tests.support._op_cost import cost


def test_permutes_of_sparse_features():
    # 24 features x 16 samples, 768 indices, a full permutation: everything read and written
    c = cost(
        "fbgemm::permute_2D_sparse_data",
        [[24], [24, 16], [768], [], []],
        ["int", "int", "int", "", "Scalar"],
    )
    assert c.family == "sparse" and c.flops == 0
    assert c.bytes == 24 * 4 + 2 * (24 * 16 * 4) + 2 * 768 * 4
    # a selection of 12 of the 24 features, with weights: half the lengths and indices out
    c = cost(
        "fbgemm::permute_sparse_features",
        [[12], [24, 16], [768], [768]],
        ["int", "int", "long", "float"],
    )
    assert (
        c.bytes
        == 12 * 4 + 24 * 16 * 4 + (768 * 8 + 768 * 4) + 12 * 16 * 4 + (768 * 8 + 768 * 4) / 2
    )


def test_bounds_check_bucketize_and_cumsum():
    c = cost(
        "fbgemm::bounds_check_indices",
        [[3], [768], [385], [], [1], []],
        ["long", "long", "long", "Scalar", "long", ""],
    )
    assert c.bytes == (3 + 768 + 385 + 1) * 8
    # 11 features x 4096 lengths, 689144 indices, my_size 8 from Concrete Inputs
    dims = [[45056], [689144], [], [], [11], [], []]
    types = ["int", "int", "Scalar", "Scalar", "int", "Scalar", ""]
    c = cost(
        "fbgemm::block_bucketize_sparse_features",
        dims,
        types,
        ["", "", "False", "False", "", "8", ""],
    )
    assert c.bytes == (45056 + 689144 + 11) * 4 + (45056 * 8 + 689144) * 4
    # without my_size: the lower bound (the old lengths' size)
    c = cost("fbgemm::block_bucketize_sparse_features", dims, types)
    assert c.bytes == (45056 + 689144 + 11) * 4 + (45056 + 689144) * 4
    c = cost("fbgemm::asynchronous_complete_cumsum", [[384]], ["int"])
    assert c.family == "reduction" and c.flops == 384 and c.bytes == 384 * 4 + 385 * 4


def test_pooled_permutes_and_casts():
    c = cost(
        "fbgemm::permute_pooled_embs_auto_grad",
        [[1024, 70904], [981], [980], [981], [980]],
        ["float", "long", "long", "long", "long"],
    )
    assert c.family == "copy" and c.bytes == 2 * 1024 * 70904 * 4 + (981 + 980 + 981 + 980) * 8
    node = "torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction<&fbgemm_gpu::permute_pooled_embs_gpu> >"
    assert cost(node, [[1024, 70904]], ["float"]).bytes == 2 * 1024 * 70904 * 4
    c = cost(
        "fbgemm::recat_embedding_grad_output_mixed_D_batch",
        [[1024, 70904], [8], [8]],
        ["float", "long", "long"],
    )
    assert c.bytes == 2 * 1024 * 70904 * 4 + 2 * 8 * 8
    # FP8 rowwise: 256 columns -> 256 bytes + 8 (scale, bias) per row, and back
    c = cost("fbgemm::FloatToFP8RowwiseQuantized", [[1000, 256], []], ["float", "Scalar"])
    assert c.bytes == 1000 * 256 * 4 + 1000 * 264
    c = cost("fbgemm::FloatToFP8RowwiseQuantized", [[10, 6], []], ["float", "Scalar"])
    assert c.bytes == 10 * 6 * 4 + 10 * (8 + 8)  # 6 columns padded to 8
    c = cost("fbgemm::FP8RowwiseQuantizedToFloat", [[1000, 264], []], ["unsigned char", "Scalar"])
    assert c.bytes == 1000 * 264 + 1000 * 256 * 4
    assert (
        cost(
            "fbgemm::FloatToHFP8Quantized",
            [[100], [], [], []],
            ["float", "Scalar", "Scalar", "Scalar"],
        ).bytes
        == 500
    )
    assert (
        cost(
            "fbgemm::HFP8QuantizedToFloat", [[100], [], []], ["unsigned char", "Scalar", "Scalar"]
        ).bytes
        == 500
    )


def test_shapes_that_do_not_fit_have_reasons():
    r = cost_of(
        "fbgemm::permute_sparse_features", "[[3], [5], [7], []]", '["int", "int", "int", ""]'
    )
    assert isinstance(r, str) and "expected [features, batch]" in r
    r = cost_of("fbgemm::FP8RowwiseQuantizedToFloat", "[[4, 8], []]", '["unsigned char", "Scalar"]')
    assert isinstance(r, str) and "no room" in r


def test_every_fbgemm_operator_of_the_dlrm_traces_is_costed(traces_dir):
    for rel in (
        "hta/trace_diff/control/control.json.gz",
        "hta/negative_queue_length_values_check/rank0.json.gz",
        "hta/trace_filter/sampled_rank-0.json.gz",
        "param_dlrm_8rank/worker0.pt.trace.json.gz",
    ):
        df = with_costs(op_table(hta_fast.load(traces_dir / rel)).table).to_pandas()
        fb = df[df.name.str.contains("fbgemm") & ~df.name.str.startswith("autograd::engine")]
        assert len(fb) >= 5 and fb.family.notna().all(), (
            rel,
            fb[fb.family.isna()][["name", "no_model"]],
        )
        assert (fb.bytes > 0).all()
