"""Cross-rank analyses on hand-built ranks whose answers are known by construction, and on
the real 8-rank DLRM set."""

from __future__ import annotations

import pytest

import hta_fast
from hta_fast.analysis import collectives as cross
from hta_fast.costs.collectives import collective_of, dtype_of_kernel
from hta_fast.loading.summary import summarize
from tests.support.kineto_builder import KinetoBuilder, traceset

NELEMS = 1_000_000  # floats: 4 MB a collective
# Per collective: its kind, each rank's GPU start (µs) and the common end (µs).
PLAN = [
    ("allreduce", [100, 110, 105, 140], 200),
    ("allgather", [300, 345, 310, 320], 400),
    ("broadcast", [500, 500, 520, 505], 600),
]


def four_ranks(clock_ahead_us: dict[int, float] | None = None):
    builders = []
    for r in range(4):
        b = KinetoBuilder(rank=r, world_size=4)
        shift = (clock_ahead_us or {}).get(r, 0.0)
        b.step(1, shift, 1000 + 100 * r)
        for kind, starts, end in PLAN:
            start = starts[r] + shift
            b.nccl(kind, start - 20, start, end + shift - start, nelems=NELEMS)
        builders.append(b)
    return traceset(builders)


def test_collectives_known_answers():
    res = cross.collectives(four_ranks())
    rows = res.to_arrow().to_pylist()
    assert [r["collective"] for r in rows] == ["all_reduce", "all_gather", "broadcast"]
    ar, ag, bc = rows
    assert all(r["ranks"] == 4 and r["group_size"] == 4 and r["group"] == "pg 0" for r in rows)
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert ar["bytes"] == 4 * NELEMS and ar["dtype"] == "float"
    assert ar["arrival_skew"] == 40_000 and ar["last_rank"] == 3 and ar["late_by"] == 30_000
    assert ar["data_time"] == 60_000 and ar["max_dur"] == 100_000
    # waits: 100-60, 90-60, 95-60, 0 µs
    assert ar["mean_wait"] == pytest.approx((40 + 30 + 35 + 0) * 1000 / 4)
    algbw = 4 * NELEMS / 60_000  # bytes per ns = GB/s
    assert ar["algbw_gbps"] == pytest.approx(algbw)
    assert ar["busbw_gbps"] == pytest.approx(algbw * 2 * 3 / 4)
    assert ag["last_rank"] == 1 and ag["late_by"] == 25_000 and ag["data_time"] == 55_000
    assert ag["busbw_gbps"] == pytest.approx(4 * NELEMS / 55_000 * 3 / 4)
    # broadcast: the factor is 1
    assert bc["last_rank"] == 2 and bc["busbw_gbps"] == pytest.approx(bc["algbw_gbps"])
    per_rank = res["per_rank"].to_pylist()
    r0 = [p for p in per_rank if p["rank"] == 0 and p["index"] == 0][0]
    assert r0["arrival_delay"] == 0 and r0["wait"] == 40_000
    by_type = {r["collective"]: r for r in res["by_type"].to_pylist()}
    assert by_type["all_reduce"]["count"] == 1 and by_type["all_reduce"]["bytes"] == 4 * NELEMS
    assert not res.notes


def test_late_arrivals_known_answers():
    res = cross.late_arrivals(four_ranks())
    rows = {r["rank"]: r for r in res.to_arrow().to_pylist()}
    assert rows[3]["times_last"] == 1 and rows[3]["max_late_by"] == 30_000
    assert rows[1]["times_last"] == 1 and rows[2]["times_last"] == 1
    assert rows[0]["times_last"] == 0 and rows[0]["total_late_by"] == 0
    assert rows[2]["total_late_by"] == 15_000  # 520 vs 505
    assert all(r["collectives"] == 3 for r in rows.values())
    assert rows[3]["share_last"] == pytest.approx(1 / 3)
    # most often last first, ties by the delay caused (30 µs, 25 µs, 15 µs)
    assert res.to_arrow()["rank"].to_pylist()[:3] == [3, 1, 2]
    assert res.params["latest"] == 3


def test_step_spread_known_answers():
    res = cross.step_spread(four_ranks())
    (row,) = res.to_arrow().to_pylist()
    assert row["step"] == 1 and row["ranks"] == 4
    assert (row["min_dur"], row["max_dur"], row["spread"]) == (1_000_000, 1_300_000, 300_000)
    assert row["slowest_rank"] == 3 and row["fastest_rank"] == 0
    assert res["per_rank"]["behind"].to_pylist() == [0, 100_000, 200_000, 300_000]


def test_clock_offsets_find_a_clock_ahead():
    res = cross.clock_offsets(four_ranks({3: 7.0}))
    offsets = dict(zip(res.to_arrow()["rank"].to_pylist(), res.to_arrow()["offset_ns"].to_pylist()))
    assert offsets == {0: 0.0, 1: 0.0, 2: 0.0, 3: 7_000.0}


def test_selection_by_rank_and_step():
    ts = four_ranks()
    res = cross.collectives(ts, ranks=[0, 1])
    assert res.to_arrow()["ranks"].to_pylist() == [2, 2, 2]
    assert not res.notes  # both selected ranks ran every collective
    assert cross.collectives(ts, steps=[99]).table.num_rows == 0
    assert cross.step_spread(ts, ranks=[1, 2]).to_arrow()["spread"].to_pylist() == [100_000]


def test_bus_factors_are_nccl_tests():
    assert cross.bus_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    for kind in ("all_gather", "reduce_scatter", "all_to_all"):
        assert cross.bus_factor(kind, 8) == pytest.approx(7 / 8)
    assert cross.bus_factor("broadcast", 8) == 1.0 and cross.bus_factor("reduce", 8) == 1.0


def test_collective_and_dtype_from_names():
    assert collective_of("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)") == "all_reduce"
    assert collective_of("_reduce_scatter_base") == "reduce_scatter"
    assert collective_of("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL") == "reduce_scatter"
    assert collective_of("all_to_allv") == "all_to_all"
    assert collective_of("ncclKernel_Reduce_RING") == "reduce"
    assert collective_of("gemm") == "other"
    assert dtype_of_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, x)") == "float"
    assert dtype_of_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)") == "int8_t"


def test_dlrm_collectives(traces_dir):
    ts = hta_fast.load_dir(traces_dir / "param_dlrm_8rank")
    res = cross.collectives(ts)
    t = res.to_arrow()
    # 5 SendRecv (all-to-all) and 3 AllReduce kernels on every rank, one stream, no arguments
    assert t.num_rows == 8 and set(t["ranks"].to_pylist()) == {8}
    assert t["collective"].to_pylist().count("all_reduce") == 3
    # no arguments: the sizes are the nccl:* ops' Input Dims
    assert t["bytes"].null_count == 0 and any("8 collective size(s) read" in n for n in res.notes)
    # arrival skew = last - first start, and the last rank's start is the last start
    for row in t.to_pylist():
        assert row["arrival_skew"] == row["last_start"] - row["first_start"] >= 0
    starts = {(p["group"], p["index"], p["rank"]): p["ts"] for p in res["per_rank"].to_pylist()}
    for row in t.to_pylist():
        assert starts[(row["group"], row["index"], row["last_rank"])] == row["last_start"]
    late = cross.late_arrivals(ts).to_arrow()
    assert sum(late["times_last"].to_pylist()) == 8
    assert summarize(ts[0]).collectives.num_rows == 8
