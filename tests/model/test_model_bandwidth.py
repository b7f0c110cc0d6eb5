"""The bandwidth what-if: each collective's time moving data changes by what the collective
cost model (the recorded machine calibrated on the trace's collectives) predicts for its
size. Synthetic jobs whose collectives take exactly latency + bytes / bandwidth, so the
answer is known by construction up to what NCCL's protocols add (a faster link makes the
low-latency protocol the faster one at the smallest size), and the real trace that records
collective sizes."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

import hta_fast
from hta_fast.cli import cli
from hta_fast.frame.select import Selection
from hta_fast.model.comm.collective_cost import collective_time_factors, fit_collectives
from hta_fast.model.comm.collective_links import match_collectives
from hta_fast.model.graph.dependency_graph import EDGE
from hta_fast.model.graph.walk import walk
from hta_fast.model.whatif.changes import comm_changes
from hta_fast.model.whatif.declared.bandwidth_edit import collective_bandwidth_factors
from hta_fast.model.whatif.edits import Edits
from hta_fast.model.whatif.steps import what_if
from hta_fast.model.whatif.weights import edited_weights
from tests.support.kineto_builder import KinetoBuilder

LATENCY_US, GBPS = 20.0, 50.0  # the interconnect every collective below runs on
NELEMS = [250_000, 1_000_000, 4_000_000, 16_000_000]  # float32: 1, 4, 16, 64 MB


def data_us(nelems: int, gbps: float = GBPS) -> float:
    return LATENCY_US + 4 * nelems / (gbps * 1e3)


def comm_bound_job(gbps: float = GBPS, sizes: bool = True) -> hta_fast.Trace:
    """One step per size: an all-reduce launched at 10 µs that starts at 20 µs, the host
    waiting for it in cudaStreamSynchronize (returns 3 µs after it ends), then 100 µs of host
    work. Without sizes the collectives record no element count."""
    b = KinetoBuilder(rank=0, world_size=2)
    t0 = 0.0
    for s, n in enumerate(NELEMS):
        dur = data_us(n, gbps)
        kernel_end = t0 + 20 + dur
        end = kernel_end + 3 + 2 + 100 + 1
        b.step(s, t0, end - t0)
        b.nccl("allreduce", t0 + 10, t0 + 20, dur, nelems=n)
        b.runtime("cudaStreamSynchronize", t0 + 16, kernel_end + 3 - (t0 + 16))
        b.cpu_op("aten::cpu_work", kernel_end + 5, 100)
        t0 = end
    doc = json.loads(b.to_bytes())
    if not sizes:
        for e in doc["traceEvents"]:
            for k in ("In msg nelems", "Out msg nelems"):
                e.get("args", {}).pop(k, None)
    return hta_fast.load(json.dumps(doc).encode())


def steps_of(trace: hta_fast.Trace) -> np.ndarray:
    return what_if(trace).to_pandas().measured.to_numpy()


@pytest.mark.parametrize("scale", [2.0, 0.5, 4.0])
def test_a_faster_link_predicts_the_job_on_that_link(scale):
    predicted = what_if(comm_bound_job(), collective_bandwidth=scale).to_pandas().predicted
    actual = steps_of(comm_bound_job(GBPS * scale))
    assert_the_job_on_that_link(predicted.to_numpy(), actual)
    assert not np.allclose(steps_of(comm_bound_job()), actual, rtol=0.01)  # the knob matters


def assert_the_job_on_that_link(predicted: np.ndarray, actual: np.ndarray) -> None:
    """Bandwidth-bound sizes (4 MB up) within 0.5 % of the step; the 1 MB one, half latency,
    never slower and within 5 % (LL's lower latency may win there on the faster link)."""
    np.testing.assert_allclose(predicted[1:], actual[1:], rtol=5e-3)
    assert predicted[0] <= actual[0] * 1.001
    assert predicted[0] == pytest.approx(actual[0], rel=0.05)


def test_a_bus_bandwidth_sets_the_link():
    # all-reduce over 2 ranks: bus bandwidth = algorithm bandwidth × 2(n-1)/n = × 1.
    predicted = what_if(comm_bound_job(), collective_busbw_gbps=200.0).to_pandas().predicted
    assert_the_job_on_that_link(predicted.to_numpy(), steps_of(comm_bound_job(200.0)))


def test_small_collectives_barely_change():
    # Latency bound: the 1 MB all-reduce (100 µs of 120) gains less than the 64 MB one.
    r = what_if(comm_bound_job(), collective_bandwidth=2.0).to_pandas()
    saved = (r.measured - r.predicted).to_numpy()
    assert np.all(np.diff(saved) > 0)
    assert saved[0] == pytest.approx(4 * NELEMS[0] / (GBPS * 1e3) / 2 * 1e3, rel=0.05)


def test_without_sizes_a_scale_is_a_plain_duration_scale_with_a_note():
    job = comm_bound_job(sizes=False)
    r = what_if(job, collective_bandwidth=2.0)
    plain = what_if(job, kernel_class={"COMM": 0.5})
    assert r.to_pandas().predicted.tolist() == plain.to_pandas().predicted.tolist()
    assert any("no collective records its size" in n for n in r.notes)
    with pytest.raises(ValueError, match="records no collective sizes"):
        what_if(job, collective_busbw_gbps=100.0)


def test_bad_bandwidths_are_clear_errors():
    with pytest.raises(ValueError, match="positive number"):
        what_if(comm_bound_job(), collective_bandwidth=-1.0)
    with pytest.raises(ValueError, match="one of a scale or a bus bandwidth"):
        what_if(comm_bound_job(), collective_bandwidth=2.0, collective_busbw_gbps=10.0)


@functools.lru_cache(maxsize=None)
def nccl_trace():
    from tests.conftest import TRACES_DIR

    return hta_fast.load(TRACES_DIR / "hta/nccl_parser_config/nccl_data.json.gz")


def test_real_trace_each_collective_changes_by_the_model(traces_dir):
    trace = nccl_trace()
    base = fit_collectives(trace)
    factors = collective_time_factors(trace, base, base.with_bandwidth(2.0)).to_pandas()
    assert len(factors) == 21 and (factors.factor < 1).all()
    matched = match_collectives(trace)
    factor, notes = collective_bandwidth_factors(trace, matched, scale=2.0)
    changes = comm_changes(matched, factor)
    rows, delta = changes[trace.rank]
    # One rank: the time moving data is the kernel's whole duration, so each kernel's new
    # duration is its duration times its collective's factor (kernels in start order, the
    # factors by (group, index), which on one rank of one group is start order too).
    dur = trace.column("events", "dur")[rows]
    factor = factors.sort_values("index").factor.to_numpy()
    np.testing.assert_allclose(dur + delta, dur * factor, rtol=1e-12)
    assert len(set(factors.bytes)) < len(factors)  # sizes repeat: the same size, the same factor
    assert notes[0] == "21 of 21 collectives changed through the collective model"
    assert notes[1:] == list(base.notes)  # the machine and its calibration, as fit_collectives
    # The graph's comm kernels get those durations.
    for win in walk(trace, Selection(steps=[4]), chained=False):
        g = win.graph
        w = edited_weights(g, trace, Edits(), changes[trace.rank])
        gpu_self = np.flatnonzero(g.edge_type == EDGE["gpu_self"])
        ev_rows = g.rows[g.core.src[gpu_self] // 2]
        hit = np.isin(ev_rows, rows)
        assert hit.sum() == 7
        expected = dict(zip(rows, np.rint(dur + delta)))
        assert [int(x) for x in w[gpu_self[hit]]] == [int(expected[r]) for r in ev_rows[hit]]


def test_real_trace_faster_never_slower_and_much_slower_shows(traces_dir):
    trace = nccl_trace()
    base = what_if(trace).to_pandas()
    faster = what_if(trace, collective_bandwidth=4.0).to_pandas()
    slower = what_if(trace, collective_bandwidth=0.01).to_pandas()
    assert (faster.predicted <= base.predicted).all()
    # Communication is hidden behind host work here until the link is ~100x slower.
    assert (slower.predicted > base.predicted).all()
    assert set(slower.bound_after) == {"gpu_communication_bound"}


def test_cli_comm_bandwidth_equals_the_model(traces_dir):
    from click.testing import CliRunner

    path = str(traces_dir / "hta/nccl_parser_config/nccl_data.json.gz")
    for arg, kw in [
        ("0.02x", dict(collective_bandwidth=0.02)),
        ("1GB/s", dict(collective_busbw_gbps=1.0)),
    ]:
        res = CliRunner().invoke(
            cli,
            ["whatif", path, "--comm-bandwidth", arg, "--format", "json"],
            catch_exceptions=False,
        )
        assert res.exit_code == 0, res.output
        rows = json.loads(res.output[: res.output.rindex("}") + 1])["tables"]["what_if"]
        assert rows == what_if(nccl_trace(), **kw).table.to_pylist()
    bad = CliRunner().invoke(cli, ["whatif", path, "--comm-bandwidth", "fast"])
    assert bad.exit_code == 2 and "expected a positive scale" in bad.output
