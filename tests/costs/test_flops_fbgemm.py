"""FBGEMM table-batched embedding lookups and their autograd nodes: the output width read
from Concrete Inputs or from the paired node; concatenation on older traces. Hand-computed."""

from __future__ import annotations

import json

import pyarrow as pa
from pytest import approx

import hta_fast
from hta_fast.analysis.ops.op_table import op_table
from hta_fast.costs.cost import Cost
from hta_fast.costs.flops import cost_of, op_costs, with_costs

RW = "fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function"
RW_NODE = "torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>"


def split_lookup(
    tables: int,
    weights: int,
    indices: int,
    bags: int,
    momentum: int,
    weighted: bool = False,
    total_d: int | None = None,
):
    """(name, dims, types, concrete) of a split lookup in the recorded layout (placeholder
    first, 29 arguments); total_d goes to Concrete Inputs when given."""
    dims = [
        [0],
        [weights],
        [0],
        [0, 0],
        [tables],
        [tables],
        [tables + 1],
        [],
        [],
        [tables + 1],
        [],
        [indices],
        [bags + 1],
        [],
        [indices] if weighted else [],
        [],
        [0],
        [],
        [],
        [],
        [momentum],
        [0],
        [tables],
        [tables],
        [],
        [],
        [],
        [],
        [],
    ]
    types = [
        "float",
        "float",
        "float",
        "float",
        "int",
        "long",
        "int",
        "Scalar",
        "Scalar",
        "long",
        "Scalar",
        "long",
        "long",
        "Scalar",
        "float" if weighted else "",
        "",
        "int",
        "Scalar",
        "Scalar",
        "Scalar",
        "float",
        "float",
        "int",
        "long",
    ] + ["Scalar"] * 5
    concrete = None
    if total_d is not None:
        concrete = [""] * 29
        concrete[7], concrete[13] = str(total_d), "0"
    return (
        RW,
        json.dumps(dims),
        json.dumps(types),
        None if concrete is None else json.dumps(concrete),
    )


def costs(rows):
    """op_costs over synthetic groups of one rank: rows of (name, dims, types, concrete)."""
    names, dims, types, conc = zip(*rows)
    t = pa.table(
        {
            "name": list(names),
            "input_dims": list(dims),
            "input_type": list(types),
            "concrete_inputs": list(conc),
        },
        schema=pa.schema(
            [(c, pa.string()) for c in ("name", "input_dims", "input_type", "concrete_inputs")]
        ),
    )
    return op_costs(t).to_pylist()


def node(b: int, d: int, dtype: str = "float"):
    return RW_NODE, json.dumps([[b, d]]), json.dumps([dtype]), None


def test_lookup_with_total_d_in_concrete_inputs():
    # T = 2 tables, B = 4: 8 bags, 10 rows looked up; total_D = 16 -> D = 8 per table
    c = cost_of(*split_lookup(2, 800, 10, 8, 100, total_d=16))
    assert isinstance(c, Cost) and c.family == "embedding"
    assert c.flops == 10 * 8
    assert c.bytes == 10 * 8 + 9 * 8 + 10 * 8 * 4 + 4 * 16 * 4


def test_lookup_without_width_has_a_reason():
    c = cost_of(*split_lookup(2, 800, 10, 8, 100))
    assert isinstance(c, str) and "total_D not recorded" in c


def test_width_from_the_autograd_node_and_the_node_cost():
    # one table of 1000 rows x 96 (rowwise Adagrad: 1000 momentum values), B = 8192
    lookup = split_lookup(1, 96_000, 61_072, 8192, 1000)
    got = costs([lookup, node(8192, 96)])
    rows, d, b = 61_072, 96, 8192
    assert got[0]["family"] == "embedding" and got[0]["flops"] == rows * d
    # 61,072 rows looked up in a table of 1,000: no more than its 96,000 weights are read
    # from memory, the repeats come from cache
    assert got[0]["bytes"] == rows * 8 + (b + 1) * 8 + min(rows * d, 96_000) * 4 + b * d * 4
    # the node: gradient read, indices and offsets read, rows read and written, one
    # momentum value per row read and written
    assert got[1]["family"] == "embedding" and got[1]["flops"] == rows * d
    assert got[1]["bytes"] == b * d * 4 + rows * 8 + (b + 1) * 8 + 2 * rows * d * 4 + 2 * rows * 4


def test_pairing_settles_two_lookups_of_one_batch():
    # as in the trace_diff traces: a one-table lookup (96 wide) and a 122-table one, both
    # B = 8192; node widths 96 and 8720. 96 < 122 tables, 8720 does not divide 96000.
    one = split_lookup(1, 96_000, 61_072, 8192, 1000)
    many = split_lookup(122, 7_487_072, 15_807_216, 122 * 8192, 90_837)
    got = costs([one, many, node(8192, 8720), node(8192, 96)])
    assert got[0]["flops"] == 61_072 * 96
    assert got[1]["flops"] == approx(15_807_216 * 8720 / 122)
    # rows x D (15.8 M x 71.5) is more than the tables' 7,487,072 weights: those are read
    assert got[1]["bytes"] == approx(
        15_807_216 * 8 + (122 * 8192 + 1) * 8 + 7_487_072 * 4 + 8192 * 8720 * 4
    )


def test_strike_out_settles_when_as_many_widths_as_lookups():
    # B = 64: T = 1 of 160-wide rows (its size divides by 160, not by 1440), T = 9 fits both
    one = split_lookup(1, 1000 * 160, 500, 64, 1000)
    nine = split_lookup(9, 10**6, 5000, 9 * 64, 9000)
    got = costs([one, nine, node(64, 160), node(64, 1440)])
    assert got[0]["flops"] == 500 * 160 and got[1]["flops"] == approx(5000 * 1440 / 9)


def test_ambiguous_pairing_is_no_model_with_the_widths():
    a = split_lookup(2, 10**6, 100, 2 * 32, 1000)
    b = split_lookup(3, 2 * 10**6, 100, 3 * 32, 2000)
    got = costs([a, b, node(32, 64), node(32, 128)])
    for g in got[:2]:
        assert (
            g["family"] is None
            and "[64, 128]" in g["no_model"]
            and "more than one" in g["no_model"]
        )
    # nodes whose lookup is unknown say so too
    assert got[2]["family"] is None and "rows looked up unknown" in got[2]["no_model"]


def test_node_widths_are_looked_for_within_the_rank():
    lookup = split_lookup(1, 96_000, 100, 8, 1000)
    names, dims, types, conc = zip(lookup, node(8, 96))
    t = pa.table(
        {
            "rank": [0, 1],
            "name": list(names),
            "input_dims": list(dims),
            "input_type": list(types),
            "concrete_inputs": list(conc),
        }
    )
    got = op_costs(t).to_pylist()
    assert got[0]["family"] is None and got[1]["family"] is None


def test_dense_lookup_layout_and_weighted_lookup():
    # dense: (dev_weights, weights_offsets, D_offsets, total_D, max_D, hash_size_cumsum,
    # total_hash_size_bits, indices, offsets, pooling_mode, indice_weights, ...); T = 2, B = 16
    dims = [[112], [2], [3], [], [], [3], [], [32], [33], [], [], [], []]
    types = [
        "float",
        "long int",
        "int",
        "Scalar",
        "Scalar",
        "long int",
        "Scalar",
        "long int",
        "long int",
        "Scalar",
        "",
        "",
        "Scalar",
    ]
    conc = [""] * 3 + ["32"] + [""] * 9
    c = cost_of(
        "fbgemm::dense_embedding_codegen_lookup_function",
        json.dumps(dims),
        json.dumps(types),
        json.dumps(conc),
    )
    assert isinstance(c, Cost) and c.flops == 32 * 16
    # 32 rows x 16 wide from tables of 112 weights: the 112 are read, the repeats cached
    assert c.bytes == 32 * 8 + 33 * 8 + 112 * 4 + 16 * 32 * 4
    c = cost_of(*split_lookup(2, 800, 10, 8, 100, weighted=True, total_d=16))
    assert isinstance(c, Cost) and c.flops == 2 * 10 * 8
    assert c.bytes == 10 * 8 + 9 * 8 + 10 * 4 + 10 * 8 * 4 + 4 * 16 * 4


def test_sequence_pooling_and_unknown_layout_are_no_model():
    name, dims, types, _ = split_lookup(2, 800, 10, 8, 100)
    conc = [""] * 29
    conc[7], conc[13] = "16", "2"
    assert "pooling mode NONE" in cost_of(name, dims, types, json.dumps(conc))
    assert "unknown layout" in cost_of(RW, "[[1], [2]]", '["float", "float"]')


# --- concatenation ------------------------------------------------------------------
def test_cat_from_list_shapes_out_tensor_or_a_reason():
    c = cost_of("aten::cat", json.dumps([[[2, 3], [4, 3]], []]), '["TensorList", "Scalar"]')
    assert isinstance(c, Cost) and c.family == "copy" and c.bytes == 2 * (6 + 12) * 4
    # cat.out as older profilers record it: the list as [], the output tensor third
    c = cost_of(
        "aten::cat", "[[], [], [18500]]", '["TensorList", "Scalar", "c10::Half"]', '["", "0", ""]'
    )
    assert isinstance(c, Cost) and c.bytes == 2 * 18500 * 2
    # a list of shapes takes the out tensor's dtype
    c = cost_of(
        "aten::cat", json.dumps([[[10], [20]], [], [30]]), '["TensorList", "Scalar", "double"]'
    )
    assert isinstance(c, Cost) and c.bytes == 2 * 30 * 8
    r = cost_of("aten::cat", "[[], []]", '["TensorList", "Scalar"]')
    assert isinstance(r, str) and "writes [] for a list of tensors" in r


# --- real traces --------------------------------------------------------------------
def _fbgemm_rows(path):
    t = with_costs(op_table(hta_fast.load(path)).table).to_pandas()
    return t[
        t.name.str.contains("SplitLookupFunction|embedding_codegen_lookup", regex=True)
        & ~t.name.str.startswith("autograd::engine")
    ]


def test_real_trace_diff_lookups_take_their_nodes_widths(traces_dir):
    df = _fbgemm_rows(traces_dir / "hta/trace_diff/control/control.json.gz")
    assert df.family.eq("embedding").all(), df[df.family.isna()][["name", "no_model"]]
    for _, r in df[df.name == RW].iterrows():
        dims = json.loads(r.input_dims)
        t, rows, bags = dims[6][0] - 1, dims[11][0], dims[12][0] - 1
        total_d = 96 if t == 1 else 8720  # the nodes' [8192, 96] and [8192, 8720]
        weighted = dims[14] == [rows]  # the one-table lookups have per-sample weights
        weights = dims[1][0] + dims[2][0]  # device and UVM tables
        assert r.flops == approx(rows * total_d / t * (2 if weighted else 1))
        assert r.bytes == approx(
            rows * 8
            + (bags + 1) * 8
            + min(rows * total_d / t, weights) * 4
            + 8192 * total_d * 4
            + (rows * 4 if weighted else 0)
        )
    assert sorted(df[df.name == RW_NODE].input_dims) == ["[[8192, 8720]]", "[[8192, 96]]"]


def test_real_param_dlrm_lookups(traces_dir):
    df = _fbgemm_rows(traces_dir / "param_dlrm_8rank/worker0.pt.trace.json.gz").set_index("name")
    assert df.family.eq("embedding").all()
    # adagrad lookup: T = 3, 768 rows, 384 bags -> B = 128; node [128, 48]: D = 16
    r = df.loc["fbgemm::split_embedding_codegen_lookup_adagrad_function"]
    assert r.flops == 768 * 16 and r.bytes == 768 * 8 + 385 * 8 + 768 * 16 * 4 + 128 * 48 * 4
    # dense lookup: T = 2, 32 rows, B = 16; node SplitLookupFunction_Dense_Op [16, 32]; the
    # tables hold 112 weights, fewer than 32 x 16 looked up: the 112 are read
    r = df.loc["fbgemm::dense_embedding_codegen_lookup_function"]
    assert r.flops == 32 * 16 and r.bytes == 32 * 8 + 33 * 8 + 112 * 4 + 16 * 32 * 4
    # the adagrad node: D values of state per row
    r = df.loc["torch::autograd::CppNode<SplitLookupFunction_adagrad_Op>"]
    assert r.bytes == 128 * 48 * 4 + 768 * 8 + 385 * 8 + 2 * 768 * 16 * 4 + 2 * 768 * 16 * 4
