"""Bytes and bandwidth of collectives from their recorded arguments."""

from __future__ import annotations

import pytest

import hta_fast
from hta_fast.costs.collectives import bus_factor
from hta_fast.model.comm.comm_bytes import comm_bytes
from tests.support.kineto_builder import KinetoBuilder


def test_allreduce_bytes_and_bus_bandwidth():
    b = KinetoBuilder(rank=0, world_size=4)
    b.nccl("allreduce", 0, 100, 1000.0, nelems=1_000_000, dtype="Float")  # 4 MB in 1 ms
    b.nccl("allreduce", 2000, 2100, 500.0, nelems=1_000_000, dtype="BFloat16")
    r = comm_bytes(b.load()).to_pandas()
    f32 = r[r.dtype == "Float"].iloc[0]
    assert f32.bytes == 4e6 and f32.time == 1_000_000
    assert f32.algbw == pytest.approx(4e9) and f32.busbw == pytest.approx(4e9 * 1.5)
    assert r[r.dtype == "BFloat16"].iloc[0].bytes == 2e6


def test_unknown_dtype_is_kept_with_a_reason():
    b = KinetoBuilder(rank=0, world_size=2)
    b.nccl("allreduce", 0, 100, 10.0, dtype="Mystery")
    r = comm_bytes(b.load())
    row = r.to_pandas().iloc[0]
    assert row.bytes != row.bytes and "Mystery" in row.no_model  # NaN bytes, reason given
    assert any("without a byte count" in n for n in r.notes)


def test_bus_factors():
    assert bus_factor("allreduce", 8) == pytest.approx(1.75)
    assert bus_factor("_allgather_base", 8) == pytest.approx(0.875)
    assert bus_factor("all_to_all", 2) == pytest.approx(0.5)
    assert bus_factor("broadcast", 8) == 1.0


def test_real_trace_collectives_counted_once(traces_dir):
    trace = hta_fast.load(traces_dir / "hta/nccl_parser_config/nccl_data.json.gz")
    r = comm_bytes(trace)
    df = r.to_pandas()
    # the arguments sit on both record_param_comms and the NCCL kernel: one row each
    assert len(df) < trace.comm_args.num_rows
    ar = df[df.collective == "allreduce"]
    assert len(ar) > 0 and (ar.time > 0).all() and (ar.bytes > 0).all()
