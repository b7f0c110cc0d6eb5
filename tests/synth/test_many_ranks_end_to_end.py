"""A generated job with a straggler, from end to end: the generator's straggler (known by
construction) is the rank the doctor names and the report lists first; with identical ranks
neither names any. The ranks wait for each other in collectives, so all share one step time:
only the stragglers' own work shows it."""

from __future__ import annotations

import html
import re

import pytest

import hta_fast
from hta_fast import synth
from hta_fast.doctor import diagnose
from hta_fast.report import write_report

pytestmark = pytest.mark.slow  # generates two 24-rank jobs and reports on them

RANKS = 24
SLOW = 17


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    out = {}
    for name, stragglers in (("straggler", {SLOW: 1.3}), ("identical", None)):
        folder = tmp_path_factory.mktemp(name)
        synth.generate(folder, 0.5, RANKS, stragglers=stragglers, jitter_pct=0.5)
        out[name] = hta_fast.load_dir(str(folder)), folder
    return out


def _outlier_section(page: str) -> str:
    start = page.index("Outlier ranks</h2>")
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page[start : start + 3000])))


def test_the_doctor_names_the_straggler_and_only_it(jobs):
    finding = {f.cause: f for f in diagnose(jobs["straggler"][0]).findings}["rank_imbalance"]
    assert finding.evidence["slowest_rank"] == SLOW
    assert finding.evidence["slow_ranks"] == str(SLOW)
    calm = {f.cause: f for f in diagnose(jobs["identical"][0]).findings}["rank_imbalance"]
    assert calm.evidence["slowest_rank"] == "none stands out"


def test_the_report_lists_the_straggler_first_with_its_command(jobs, tmp_path):
    traces, folder = jobs["straggler"]
    page = tmp_path / "job.html"
    write_report(traces, str(page), cdn=True, source=str(folder))
    text = _outlier_section(page.read_text())
    rows = re.findall(r"\b(\d+) GPU compute per step", text)
    assert rows[:1] == [str(SLOW)], text[:600]
    assert f"--ranks {SLOW}" in text


def test_identical_ranks_give_the_report_no_outlier(jobs, tmp_path):
    traces, _ = jobs["identical"]
    page = tmp_path / "calm.html"
    write_report(traces, str(page), cdn=True)
    assert "no outlier" in _outlier_section(page.read_text())
