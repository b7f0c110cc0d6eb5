"""Fixes found on the real pairs (../shared/traces/pairs): the what-if's totals printed where
the per-step rows are, durations_from on a trace without steps, the loader edit's steps after
warm-up, and predictions that carry the error measured on the pairs."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import hta_fast
from hta_fast.model.whatif.steps import what_if


def _pair(traces_dir, folder: str, *names: str):
    paths = [traces_dir / "pairs" / folder / n for n in names]
    for p in paths:
        if not p.is_file():
            pytest.fail(f"{p} is not here: this test reads the shared pair traces", pytrace=False)
    return [hta_fast.load(str(p)) for p in paths]


def _without_steps(trace):
    none = np.zeros(0, np.int64)
    return trace.with_steps(none, none, none, none, "none")


# --- durations_from, one kernel become two, on a trace without ProfilerSteps ------------------
ATTENTION = {"fmha_fwd": "sage_fwd|sage_quant"}


def test_one_kernel_become_two_takes_their_sum_on_a_trace_without_steps(traces_dir):
    """aiter FMHA -> Sage (sage_fwd + sage_quant per call). Without steps on one side no B
    event has a counterpart in A's step; each FMHA call then took the mean of B's matched
    kernels (half a call: the step came out 7 % faster than A while B is slower); it takes
    the two's sum per call, as the paired traces give."""
    a, b = _pair(traces_dir, "attention_backend", "flux_aiter.json.gz", "flux_aiter_sage.json.gz")
    paired = what_if(a, durations_from=b, match=ATTENTION)
    for a_side, b_side in ((_without_steps(a), b), (a, _without_steps(b))):
        r = what_if(a_side, durations_from=b_side, match=ATTENTION)
        table = r["durations_from"]
        assert collections.Counter(table["paired_by"].to_pylist()) == {"mean": 228}
        new, old = table["new_dur"].to_numpy(), table["dur"].to_numpy()
        # each call: one sage_fwd and one sage_quant of B (583.7 us against FMHA's 529.2)
        assert new == pytest.approx(paired["durations_from"]["new_dur"].to_numpy())
        assert new.sum() > old.sum()
        totals = r["totals"].to_pylist()[0]
        assert totals["predicted"] > totals["replayed"]  # was 688.9 ms against 743.1
