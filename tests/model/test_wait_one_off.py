"""A one-off stall inside a launch call (a first cudaLaunchKernel that loads the CUDA module)
is the one-off's, not launch overhead's: removing launch overhead leaves it (an edit never
removes what it does not name), the doctor's launch_bound finding does not list the stalled
op, and its saving is what the launches themselves cost. By construction, and on
modern/particle_transformer (the first aten::conv1d, 1.34 s)."""

from __future__ import annotations

import numpy as np
import pytest

import hta_fast
from hta_fast.doctor import diagnose
from hta_fast.model.graph.one_off_calls import one_off_rows
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.path.owners import wait_owners
from hta_fast.model.whatif.steps import what_if
from tests.support import synthetic_traces as synth
from tests.support.kineto_builder import traceset
from tests.support.paths import SHARED_TRACES
from tests.support.wait_kinds import ONE_OFF_STEPS as STEPS
from tests.support.wait_kinds import ONE_OFFS as KINDS

MODERN = SHARED_TRACES / "modern"


def test_the_first_launch_is_a_one_off_and_the_others_are_not():
    trace = next(iter(synth.one_off_stall().values()))
    names = trace.strings_at(trace.column("events", "name")).fill_null("").to_pylist()
    launches = np.flatnonzero(np.array(names, object) == "cudaLaunchKernel")
    flags = one_off_rows(trace, launches)
    assert flags.sum() == 1
    assert trace.column("events", "dur")[launches[flags]][0] == synth.STALL_US * 1000


def test_no_launch_overhead_leaves_the_stall_in_the_launch():
    ts = synth.one_off_stall()
    t = what_if(ts, zero_launch_overhead=True)["totals"].to_pylist()[0]
    saved = t["replayed"] - t["predicted"]
    assert saved < 0.25 * synth.STALL_US * 1000
    d = diagnose(ts)
    assert d.findings[0].cause == "one_off_stall"
    lb = d.finding("launch_bound")
    assert lb.saving_ns_per_step is not None
    assert lb.saving_ns_per_step < d.finding("one_off_stall").saving_ns_per_step / 4


def test_particle_transformer_top_what_if_is_not_the_launch_edit():
    path = MODERN / "particle_transformer"
    if not path.is_dir():
        pytest.skip("modern traces not present")
    d = diagnose(hta_fast.load_dir(str(path)))
    stall, launch = d.finding("one_off_stall"), d.finding("launch_bound")
    best = max(
        (f for f in d.findings if f.saving_ns_per_step is not None),
        key=lambda f: f.saving_ns_per_step,
    )
    assert best.cause == "one_off_stall"
    assert launch.saving_ns_per_step < 0.01 * stall.saving_ns_per_step
    assert all("convolution" not in e["name"] for e in launch.top_events)


# --- one-offs of every kind, by construction (tests/support/wait_kinds.py) ----------------------
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_one_offs_of_every_kind(kind):
    builder, stall_us = KINDS[kind]()
    trace = builder.load()
    d = diagnose(traceset([builder]))
    stall = d.finding("one_off_stall")
    assert d.findings[0].cause == "one_off_stall" and stall.above_threshold, d.findings[0].title
    assert stall.cost_ns_per_step * STEPS == pytest.approx(stall_us * 1000, rel=0.02)
    assert not d.finding("launch_bound").above_threshold
    # the path of the first step and its owners say the same
    path = critical_path(trace, steps=[0]).table.to_pylist()[0]
    assert path["one_off_stall"] / 100 * path["critical_path_length"] == pytest.approx(
        stall_us * 1000, rel=0.02
    )
    owners = wait_owners(trace, steps=[0]).table.to_pylist()[0]
    assert owners["one_off_stall"] == pytest.approx(stall_us * 1000, rel=0.02)
    # removing launch overhead leaves it
    t = what_if(trace, zero_launch_overhead=True, steps=[0]).table.to_pylist()[0]
    assert t["predicted"] >= stall_us * 1000
