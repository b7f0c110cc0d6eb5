"""Kineto's hardware counters (CUPTI PM sampling) and cuda_event rows, on synthetic traces
shaped after libkineto's writer (hardware_counter_traces.py) whose measured SM-active share
and computed busy share are known by construction."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.hardware_counters import (
    DISAGREE_POINTS,
    SM_CYCLES,
    SmActiveVsBusy,
    counter_samples,
    counter_track_devices,
    sm_active_vs_busy,
    time_weighted_mean,
)
from hta_fast.cli import cli
from hta_fast.doctor import diagnose
from hta_fast.frame.gpu_work import gpu_work
from hta_fast.frame.launches import launch_pairs
from hta_fast.loading.rank_info import rank_info
from hta_fast.report.build import write_report
from hta_fast.schema import EventKind
from tests.support import hardware_counter_traces as hc

US = 1000  # ns per µs


def diag(b: hc.KinetoBuilder):
    return diagnose(hta_fast.TraceSet({0: b.load()}))


# --- loading ------------------------------------------------------------------------------
def test_counter_samples_keep_their_names_and_device():
    b = hc.with_counters()
    hc.counter_sample(b, 0.0, {"sm__inst_executed.sum": 7.0}, device=3)
    t = b.load()
    assert sorted(counter_track_devices(t).values()) == [0, 3]
    s = counter_samples(t)
    assert s.names(0) == sorted([hc.SM_ACTIVE, hc.DRAM])
    assert s.names(3) == ["sm__inst_executed.sum"]
    n = int(hc.STEPS * hc.STEP_US / hc.SAMPLE_US) + 2  # the one before the window included
    ts, dram = s.of(0, hc.DRAM)
    assert len(ts) == n and np.all(np.diff(ts) > 0) and np.all(dram == hc.DRAM_PCT)
    assert s.of(3, "sm__inst_executed.sum")[1].tolist() == [7.0]
    # the counters table holds every sample as written: name, the empty series, the value
    c = t.counters.to_pydict()
    assert len(c["name"]) == 2 * n + 1 and set(c["series"]) == {""}


def test_the_counter_track_is_no_stream_and_no_thread():
    plain, counted = hc.gpu_steps().load(), hc.with_counters().load()
    assert plain.events.to_pydict() == counted.events.to_pydict()  # no event row added
    track = next(iter(counter_track_devices(counted)))
    assert track not in set(counted.column("events", "pid").tolist())
    assert set(gpu_work(counted, None).stream.tolist()) == {7}
    info = rank_info(counted)  # what `hta-fast info` counts
    assert (info["streams"], info["kernels"]) == (1, hc.STEPS * hc.KERNELS)
    assert info["gpu_events"] == rank_info(plain)["gpu_events"] == hc.STEPS * hc.KERNELS
    d_plain, d_counted = diag(hc.gpu_steps()), diag(hc.with_counters())
    assert d_counted.utilization == d_plain.utilization == pytest.approx(hc.BUSY_PCT / 100)
    assert [f.to_dict() for f in d_counted.findings] == [f.to_dict() for f in d_plain.findings]


def test_cuda_event_rows_load_classified_and_are_not_gpu_work():
    t = hc.gpu_steps(with_cuda_events=True).load()
    ev = t.events.to_pydict()
    rows = [i for i, c in enumerate(ev["cat"]) if c == "cuda_event"]
    assert len(rows) == hc.STEPS
    assert {ev["kind"][i] for i in rows} == {EventKind.other.name}
    assert {(ev["device"][i], ev["stream"][i]) for i in rows} == {(0, 7)}
    assert all(ev["dur"][i] == 1 for i in rows)  # Kineto's 1 ns
    # each is linked to its cudaEventRecord call by the correlation id
    record = {ev["correlation"][i] for i, n in enumerate(ev["name"]) if n == "cudaEventRecord"}
    assert {ev["correlation"][i] for i in rows} == record
    # not kernels, not GPU work: the kernel count, the busy time and utilization stand
    kernels = sum(1 for k in ev["kind"] if k == EventKind.kernel.name)
    assert kernels == hc.STEPS * hc.KERNELS
    assert not set(rows) & set(gpu_work(t, None).rows.tolist())
    launch, work = launch_pairs(t, None)  # cudaEventRecord queues no GPU work
    assert len(work) == hc.STEPS * hc.KERNELS and not set(rows) & set(work.tolist())
    assert (
        diag(hc.gpu_steps(with_cuda_events=True)).utilization
        == diag(hc.gpu_steps(with_cuda_events=False)).utilization
    )


# --- the measured share -------------------------------------------------------------------
@pytest.mark.parametrize("fill", [1.0, 0.5, 0.25])
def test_measured_and_busy_shares_are_the_construction(fill):
    d = diag(hc.with_counters(fill))
    (row,) = d.measured_sm_active
    assert (row.rank, row.device, row.metric) == (0, 0, hc.SM_ACTIVE)
    assert row.busy_pct == pytest.approx(hc.BUSY_PCT) == pytest.approx(100 * d.utilization)
    assert row.measured_pct == pytest.approx(fill * hc.BUSY_PCT)  # the 99 before is outside
    assert row.covered_share == pytest.approx(1.0)
    assert row.samples == hc.STEPS * hc.STEP_US / hc.SAMPLE_US
    assert row.differs == (abs(fill - 1) * hc.BUSY_PCT > DISAGREE_POINTS)


def test_the_mean_is_weighted_by_time():
    (row,) = diag(hc.with_counters(samples=hc.IRREGULAR)).measured_sm_active
    assert row.measured_pct == pytest.approx(hc.IRREGULAR_PCT)
    assert row.samples == 3  # the one at the window's end holds past it


def test_time_weighted_mean_over_a_window():
    ts = np.array([0, 10, 40], np.int64)
    v = np.array([20.0, 60.0, 40.0])
    # the last sample holds for the median period (15): [40, 55)
    assert time_weighted_mean(ts, v, 0, 50) == (pytest.approx(48.0), 50, 3)
    assert time_weighted_mean(ts, v, 10, 40) == (pytest.approx(60.0), 30, 1)
    assert time_weighted_mean(ts, v, 60, 70) == (None, 0, 0)  # no sample covers it
    assert time_weighted_mean(ts[:0], v[:0], 0, 50) == (None, 0, 0)
    assert time_weighted_mean(ts, np.array([np.nan, 60.0, 40.0]), 0, 50)[0] == pytest.approx(
        (60 * 30 + 40 * 10) / 40
    )


def test_active_over_elapsed_cycles_when_no_percent_metric():
    b = hc.gpu_steps()
    for i in range(int(hc.STEPS * hc.STEP_US / hc.SAMPLE_US) + 1):
        hc.counter_sample(b, i * hc.SAMPLE_US, {SM_CYCLES[0]: 300.0, SM_CYCLES[1]: 1000.0})
    (row,) = diag(b).measured_sm_active
    assert row.metric == f"{SM_CYCLES[0]} / {SM_CYCLES[1]}"
    assert row.measured_pct == pytest.approx(30.0)


@pytest.mark.parametrize("points, flagged", [(9.5, False), (10.0, False), (10.5, True)])
def test_the_disagreement_flag_fires_past_ten_points(points, flagged):
    fill = (hc.BUSY_PCT - points) / hc.BUSY_PCT
    d = diag(hc.with_counters(fill))
    (row,) = d.measured_sm_active
    assert row.difference_points == pytest.approx(-points)
    assert row.differs is flagged
    text = d.to_text()
    assert f"measured SM active {hc.BUSY_PCT - points:.1f}% vs computed busy 40.0%" in text
    assert ("warning: measured SM active and computed busy differ" in text) is flagged
    assert d.to_dict()["measured_sm_active"][0]["differs"] is flagged
    above = SmActiveVsBusy(0, 0, hc.SM_ACTIVE, [], 1, 1.0, 40.0 + points, 40.0)
    assert above.differs is flagged


def test_not_measured_is_none_never_zero():
    d = diag(hc.with_counters(name="sm__warps_active.avg.pct_of_peak_sustained_active"))
    (row,) = d.measured_sm_active
    assert row.metric is None and row.measured_pct is None and not row.differs
    assert "SM active not measured on rank 0 GPU 0" in d.to_text()
    assert d.to_dict()["measured_sm_active"][0]["measured_pct"] is None


def test_busy_share_is_given_only_for_the_device_the_work_ran_on():
    b = hc.with_counters(0.5)
    hc.counter_sample(b, 0.0, {hc.SM_ACTIVE: 10.0}, device=1)
    t = b.load()
    rows = {r.device: r for r in sm_active_vs_busy(0, t, 0, 50_000 * US, 0.4)}
    assert rows[1].busy_pct is None and not rows[1].differs
    assert rows[0].busy_pct == pytest.approx(40.0)


# --- without counters: nothing new ------------------------------------------------------------
def test_a_trace_without_counters_shows_nothing_new(tmp_path):
    t = hc.gpu_steps().load()
    assert sm_active_vs_busy(0, t, 0, 50_000 * US, 0.4) == []
    d = diag(hc.gpu_steps())
    assert d.measured_sm_active == () and d.measured_lines() == []
    assert "measured_sm_active" not in d.to_dict()
    assert "SM active" not in d.to_text()
    out = tmp_path / "r.html"
    write_report(hta_fast.TraceSet({0: t}), str(out))
    assert "measured-sm-active" not in out.read_text()


# --- shown: doctor --json, the report ------------------------------------------------------
def test_doctor_json_and_text_show_it(tmp_path):
    path = tmp_path / "trace.json"
    path.write_bytes(hc.with_counters(0.5).to_bytes())
    res = CliRunner().invoke(cli, ["doctor", "--json", str(path)])
    (row,) = json.loads(res.output)["measured_sm_active"]
    assert row["measured_pct"] == pytest.approx(20.0) and row["busy_pct"] == pytest.approx(40.0)
    assert row["differs"] is True
    res = CliRunner().invoke(cli, ["doctor", str(path)])
    assert "measured SM active 20.0% vs computed busy 40.0%" in res.output


def test_the_report_shows_it_and_escapes_counter_names(tmp_path):
    out = tmp_path / "r.html"
    write_report(hta_fast.TraceSet({0: hc.with_counters(0.5).load()}), str(out))
    html = out.read_text()
    assert 'id="measured-sm-active"' in html
    assert "measured SM active 20.0% vs computed busy 40.0%" in html
    assert "warning: measured SM active and computed busy differ" in html
    evil = "<script>alert(1)</script>"
    write_report(hta_fast.TraceSet({0: hc.with_counters(name=evil).load()}), str(out))
    html = out.read_text()
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
