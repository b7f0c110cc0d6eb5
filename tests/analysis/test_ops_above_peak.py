"""On every shared trace (all folders), no `ops` row (operator or kernel) reports achieved
FLOP/s or bytes/s above 100 % of its device's peak unless it is `uncertain` with a reason,
and every such reason is one the trace supports: the model's own assumption, or data that
fits the device's last-level cache. A row above the peak that only "the model overcounts"
explains is a model defect this test reports."""

from __future__ import annotations

import warnings

import pytest

import hta_fast
from hta_fast.analysis.ops.roofline import roofline
from tests.conftest import real_trace_files

TRACES = [  # every trace but memory timelines, execution traces and capture files
    f
    for f in real_trace_files()
    if "memory_timeline" not in f and not f.endswith("_et.json.gz") and "/capture/" not in f
]


@pytest.mark.slow
@pytest.mark.parametrize("relative", TRACES)
def test_no_row_above_the_peak_without_a_reason(traces_dir, relative):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = roofline(hta_fast.load(str(traces_dir / relative)))
    for table, key in ((res.table, "name"), (res["kernels"], "kernel")):
        for row in table.to_pylist():
            if row["pct_of_roofline"] is None or row["pct_of_roofline"] <= 100:
                continue
            assert row["uncertain"] and row["uncertain_why"], (relative, row[key])
            why = row["uncertain_why"]
            assumed = not why.startswith("runs at")  # the model's sentences come first
            cached = "last-level cache can hold" in why
            assert assumed or cached, (relative, row[key], why)


def test_the_walk_covers_every_folder():
    folders = {f.split("/")[0] for f in TRACES}
    assert {"hta", "modern", "pairs", "param_dlrm_8rank"} <= folders
