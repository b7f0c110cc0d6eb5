"""The collective cost model (the machine-aware model calibrated on the trace's collectives)
gives synthetic collectives' times through noise and late ranks, answers a bandwidth
what-if, and runs on every real trace; the time curve (costs.time_fit, which the embedding
lookup model fits) finds a known knee."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

import hta_fast
from hta_fast.costs.time_fit import fit_piecewise, fit_time, lower_envelope
from hta_fast.loading.summary import COLLECTIVES_SCHEMA, KERNELS_SCHEMA, STEPS_SCHEMA, RankSummary
from hta_fast.model.comm.collective_cost import collective_time_factors, fit_collectives

LATENCY_NS = 25_000.0
BANDWIDTH_GBPS = 80.0  # B/ns
SIZES = np.array([2**k for k in range(16, 29, 2)], np.float64)  # 64 KiB .. 256 MiB


def summaries(
    kind: str,
    sizes: np.ndarray,
    n_ranks: int,
    seed: int,
    noise: float = 0.0,
    late_ns: float = 0.0,
    repeats: int = 12,
) -> dict[int, RankSummary]:
    """n_ranks ranks running `repeats` collectives of each size. The true time moving data
    is LATENCY_NS + bytes / BANDWIDTH_GBPS; each rank's duration adds one-sided noise (up
    to `noise` x the true time, as interference only ever slows) and the wait for the last
    rank, which arrives up to late_ns after the others."""
    rng = np.random.default_rng(seed)
    nbytes = np.repeat(sizes, repeats)
    rng.shuffle(nbytes)
    true = LATENCY_NS + nbytes / BANDWIDTH_GBPS
    m = len(nbytes)
    start = np.cumsum(true * 3 + late_ns * 2) + 1e6
    arrive = start[None, :] + rng.uniform(0, late_ns, (n_ranks, m))
    # The last arriver waits for nobody: its duration is the true time (plus noise). A
    # few collectives get no noise on any rank: the lower envelope must be reachable.
    jitter = rng.uniform(0, noise, (n_ranks, m)) * true[None, :]
    jitter[:, rng.random(m) < 0.3] = 0.0
    end = arrive.max(axis=0)[None, :] + true[None, :] + jitter.min(axis=0)[None, :]
    out = {}
    for r in range(n_ranks):
        ts = np.rint(arrive[r]).astype(np.int64)
        dur = np.rint(end[0] + jitter[r] - jitter.min(axis=0) - arrive[r]).astype(np.int64)
        coll = pa.table(
            {
                "group": ["0"] * m,
                "index": np.arange(m),
                "collective": [kind] * m,
                "name": pa.array([f"ncclKernel_{kind}"] * m).dictionary_encode(),
                "stream": np.full(m, 7),
                "step": np.zeros(m, np.int64),
                "ts": ts,
                "dur": dur,
                "bytes": nbytes.astype(np.int64),
                "dtype": ["float"] * m,
                "group_size": np.full(m, n_ranks),
                "size_from": ["arguments"] * m,
                "comms_id": pa.nulls(m, pa.string()),
                "seq": pa.nulls(m, pa.int64()),
            }
        ).cast(COLLECTIVES_SCHEMA)
        out[r] = RankSummary(r, {}, STEPS_SCHEMA.empty_table(), KERNELS_SCHEMA.empty_table(), coll)
    return out


def truth_ns(sizes, bandwidth=BANDWIDTH_GBPS):
    return LATENCY_NS + np.asarray(sizes, np.float64) / bandwidth


@pytest.mark.parametrize("noise,late_ns", [(0.0, 0.0), (0.2, 0.0), (0.0, 5e6), (0.3, 2e7)])
def test_the_calibrated_machine_gives_the_collectives_times(noise, late_ns):
    """Collectives of latency + bytes / bandwidth on an unnamed machine: the machine-aware
    model, calibrated on the fastest time at each size, gives each size's time within a
    few percent (NCCL's protocols bend the line: LL below ~256 KiB, Simple above), and the
    bandwidth at large sizes within 2 %, whatever the noise and the late ranks."""
    model = fit_collectives(summaries("all_reduce", SIZES, 8, seed=1, noise=noise, late_ns=late_ns))
    row = model.table().table.to_pylist()[0]
    assert (row["collective"], row["group_size"], row["nodes"]) == ("all_reduce", 8, 1)
    assert (row["collectives"], row["sizes"]) == (len(SIZES) * 12, len(SIZES))
    assert row["bandwidth_gbps"] == pytest.approx(BANDWIDTH_GBPS, rel=0.02)
    assert row["busbw_gbps"] == pytest.approx(row["bandwidth_gbps"] * 2 * 7 / 8)
    assert row["latency_ns"] == pytest.approx(LATENCY_NS, rel=0.15)
    error = np.asarray(model.predict("all_reduce", SIZES, 8)) / truth_ns(SIZES) - 1
    assert np.abs(error).max() < 0.08 and np.median(np.abs(error)) < 0.03
    assert row["fit_error_pct"] == pytest.approx(100 * np.median(np.abs(error)), rel=1e-3)
    assert any("dgx_a100's figures standing in" in n for n in model.notes)
    assert any(
        n.startswith("the machine's figures calibrated on 7 measurements") for n in model.notes
    )


def test_waiting_for_late_ranks_is_not_counted():
    """The ranks' mean duration is far above the truth; the fit must not follow it."""
    s = summaries("all_gather", SIZES, 4, seed=2, late_ns=5e7)
    mean_dur = np.mean([s[r].collectives["dur"].to_numpy() for r in s])
    assert mean_dur > 5 * np.mean(LATENCY_NS + SIZES / BANDWIDTH_GBPS)
    row = fit_collectives(s).table().table.to_pylist()[0]
    assert row["bandwidth_gbps"] == pytest.approx(BANDWIDTH_GBPS, rel=0.02)


def test_what_if_bandwidth():
    model = fit_collectives(summaries("all_reduce", SIZES, 8, seed=3))
    base = model.predict("all_reduce", 1e8, 8)
    twice = model.with_bandwidth(2.0).predict("all_reduce", 1e8, 8)
    assert twice == pytest.approx(LATENCY_NS + 1e8 / 160, rel=0.03)
    assert twice < base
    # Set by bus bandwidth: algbw = busbw / (2 (n-1) / n) at large sizes
    set_bw = model.with_bandwidth(busbw_gbps=175.0)
    assert set_bw.predict("all_reduce", 1e8, 8) == pytest.approx(LATENCY_NS + 1e8 / 100, rel=0.03)
    assert set_bw.table().table["busbw_gbps"][0].as_py() == pytest.approx(175.0, rel=1e-3)
    assert model.with_bandwidth(3.0, kinds=["all_gather"]).predict(
        "all_reduce", 1e8, 8
    ) == pytest.approx(base)
    # the same machine answers for group sizes the trace does not show
    assert model.predict("all_reduce", 1e8, 4) < base < model.predict("all_reduce", 1e8, 16)
    with pytest.raises(ValueError, match="one of"):
        model.with_bandwidth()
    with pytest.raises(ValueError, match="positive"):
        model.with_bandwidth(-1.0)


def test_a_collective_the_model_does_not_know_is_a_clear_error():
    model = fit_collectives(summaries("all_reduce", SIZES, 8, seed=4))
    with pytest.raises(KeyError, match="no 'barrier'.*all_reduce"):
        model.predict("barrier", 1e6, 8)
    assert model.predict("all_to_all", 1e6, 8) > 0  # not seen, but modelled


def test_a_given_topology_is_the_machine():
    model = fit_collectives(summaries("broadcast", SIZES[-1:], 2, seed=5), topology="hgx_h100")
    assert model.notes[0].startswith("machine: given, DGX/HGX H100")
    row = model.table().table.to_pylist()[0]
    # one size: the fit moves the bandwidth only; latency stays the file's
    assert row["fit_error_pct"] < 1.0
    assert math.isfinite(row["latency_ns"]) and row["latency_ns"] > 0


def test_piecewise_knee_is_found():
    """Flat at 40 us up to 1 MiB, then 50 GB/s: the knee curve wins and finds both."""
    sizes = np.array([2**k for k in range(10, 30)], np.float64)
    knee, latency, bw = 2.0**20, 40_000.0, 50.0
    rng = np.random.default_rng(6)
    x = np.repeat(sizes, 5)
    t = latency + np.maximum(x - knee, 0) / bw
    t = t * (1 + rng.uniform(0, 0.2, len(t)) * (rng.random(len(t)) > 0.3))
    fit, err, held = fit_time(x, t)
    assert fit.form == "piecewise"
    assert fit.latency_ns == pytest.approx(latency, rel=0.01)
    assert fit.bandwidth_gbps == pytest.approx(bw, rel=0.01)
    assert fit.knee_bytes == pytest.approx(knee, rel=0.05)
    assert err < 1.0 and held < 2.0


def test_straight_line_is_not_forced_into_a_knee():
    x = SIZES
    fit, _, _ = fit_time(x, LATENCY_NS + x / BANDWIDTH_GBPS)
    assert fit.form == "linear"


def test_piecewise_needs_enough_sizes():
    sizes, times = lower_envelope(SIZES[:4], LATENCY_NS + SIZES[:4] / 10)
    assert fit_piecewise(sizes, times) is None


def test_observation_table_needs_its_columns():
    with pytest.raises(ValueError, match="data_time"):
        fit_collectives(pa.table({"collective": ["all_reduce"], "group_size": [2], "bytes": [10]}))


def test_wrong_input_is_one_clear_error():
    with pytest.raises(TypeError, match="come from a Trace.*not str"):
        fit_collectives("rank0.json")


def test_trace_without_sizes_says_so(traces_dir):
    # neither collective arguments nor Input Dims on the nccl:* ops
    model = fit_collectives(hta_fast.load_dir(traces_dir / "hta/df_index_resolver"))
    assert model.observed.num_rows == 0
    assert any("records its size" in n for n in model.notes)
    assert any("not calibrated" in n for n in model.notes)
    assert model.table().table.num_rows == 0


def test_real_trace_with_sizes(traces_dir):
    """nccl_parser_config records sizes: 5 all-reduce and 2 broadcast sizes, 2 ranks."""
    model = fit_collectives(hta_fast.load(traces_dir / "hta/nccl_parser_config/nccl_data.json.gz"))
    rows = {r["collective"]: r for r in model.table().table.to_pylist()}
    assert set(rows) == {"all_reduce", "broadcast"}
    for r in rows.values():
        assert r["group_size"] == 2 and r["one_rank"]
        assert math.isfinite(r["latency_ns"]) and r["latency_ns"] >= 0
        assert math.isfinite(r["bandwidth_gbps"]) and r["bandwidth_gbps"] > 0
        assert math.isfinite(r["fit_error_pct"])
    assert rows["all_reduce"]["sizes"] == 5
    assert any("one rank only" in n for n in model.notes)
    assert any(n.startswith("recorded machine:") for n in model.notes)


def test_every_real_trace_fits_without_error(traces_dir, chrome_trace):
    model = fit_collectives(hta_fast.load(traces_dir / chrome_trace))
    table = model.table().table
    for col in ("latency_ns", "bandwidth_gbps", "fit_error_pct"):
        assert all(math.isfinite(v) and v >= 0 for v in table[col].to_pylist()), col


def test_time_factors_for_a_what_if():
    """Doubling bandwidth: a bandwidth-bound collective's time nearly halves, a
    latency-bound one barely moves; a collective without a curve keeps its time."""
    s = summaries("all_reduce", SIZES, 8, seed=7)
    base = fit_collectives(s)
    f = collective_time_factors(s, base, base.with_bandwidth(2.0)).to_pylist()
    assert len(f) == len(SIZES) * 12
    for row in f:
        true = LATENCY_NS + row["bytes"] / BANDWIDTH_GBPS
        want = (LATENCY_NS + row["bytes"] / (2 * BANDWIDTH_GBPS)) / true
        assert row["factor"] == pytest.approx(want, rel=0.06)
        assert row["factor"] == row["changed_ns"] / row["base_ns"]
    assert min(r["factor"] for r in f) < 0.52 and max(r["factor"] for r in f) > 0.9
    barrier = summaries("barrier", SIZES, 8, seed=8)
    kept = collective_time_factors(barrier, base, base.with_bandwidth(2.0)).to_pylist()
    assert all(r["factor"] == 1.0 and r["base_ns"] is None for r in kept)
