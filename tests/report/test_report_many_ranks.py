"""The report of many ranks: distributions instead of a row per rank, heatmaps binned to a
bounded number of rows, the outlier ranks with the command that opens each, and a file
whose size does not grow with the ranks."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from hta_fast.frame.result import fold_rank_notes
from hta_fast.report import write_report
from hta_fast.report.build import MANY_RANKS
from hta_fast.report.page.heatmap import MAX_ROWS, bin_axis, rank_rows
from hta_fast.report.page.rank_stats import slow_outliers
from tests.report.test_report import check_in_chromium
from tests.support import headless_chromium
from tests.support.kineto_builder import KinetoBuilder, traceset

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
SLOW = 537
STEP_US = 1500.0  # room for a step 1.3 times as long


def rank(r: int, world: int, slow: float = 1.0, steps: int = 4) -> KinetoBuilder:
    """Four steps of four GEMMs and an all-reduce; `slow` stretches everything in them."""
    b = KinetoBuilder(rank=r, world_size=world)
    for s in range(steps):
        t0 = s * STEP_US
        b.step(s, t0, 950 * slow)
        for j in range(4):
            b.kernel(GEMM, t0 + j * 10, t0 + (50 + j * 200) * slow, 199 * slow)
        b.nccl("allreduce", t0 + 45, t0 + 850 * slow, 90 * slow)
    return b


def ranks(n: int, slow: tuple[int, ...] = ()):
    return traceset([rank(r, n, 1.3 if r in slow else 1.0) for r in range(n)])


def figures(page) -> list[dict]:
    text = page.read_text()
    data = text.split('id="figure-data">')[1].split("</script>")[0]
    return json.loads(html.unescape(data))


def section(page, id_: str) -> str:
    return page.read_text().split(f'<section id="{id_}">')[1].split("</section>")[0]


# --- the pieces ---------------------------------------------------------------------------
def test_bins_keep_the_worst_rank_and_say_which_ranks():
    z = np.zeros((1000, 3))
    z[537, 1] = 9.0
    binned, labels = rank_rows(z, np.arange(1000), "max")
    assert binned.shape == (250, 3) and len(labels) == 250 <= MAX_ROWS
    assert binned[134, 1] == 9.0 and labels[134] == "ranks 536–539"
    assert bin_axis(z, 0, 1000, "mean").z is z  # few enough: untouched


def test_outlier_rule():
    values = np.full(100, 10.0)
    assert slow_outliers(np.arange(100), values)[0] == []  # identical: none
    values[[7, 3]] = [13.0, 12.0]
    found, median = slow_outliers(np.arange(100), values)
    assert [o.rank for o in found] == [7, 3] and median == 10.0
    values = 10.0 + np.linspace(0, 0.1, 100)  # spread, but none 2 % above the median
    assert slow_outliers(np.arange(100), values)[0] == []


# --- reports ------------------------------------------------------------------------------
def test_below_the_threshold_the_tables_list_every_rank(tmp_path):
    page = tmp_path / "few.html"
    write_report(ranks(MANY_RANKS - 1), str(page), cdn=True)
    assert 'id="ranks"' not in page.read_text()
    assert "distribution over" not in page.read_text()
    assert section(page, "temporal").count("<tr") == 1 + (MANY_RANKS - 1)  # a row per rank


@pytest.fixture(scope="module")
def report_64(tmp_path_factory):
    page = tmp_path_factory.mktemp("many") / "r64.html"
    write_report(ranks(64, slow=(37,)), str(page), cdn=True, source="runs/job")
    return page


def test_outlier_is_listed_with_its_command(report_64):
    outliers = section(report_64, "ranks")
    assert '<td class="n">37</td>' in outliers
    assert "<code>hta-fast report runs/job --ranks 37</code>" in outliers
    assert outliers.count("--ranks") == 1


def test_identical_ranks_have_no_outlier(tmp_path):
    page = tmp_path / "same.html"
    write_report(ranks(MANY_RANKS), str(page), cdn=True)
    assert "--ranks" not in section(page, "ranks")
    assert "no outlier" in section(page, "ranks")


def test_tables_are_distributions_naming_the_extreme_ranks(report_64):
    temporal = section(report_64, "temporal")
    assert "distribution over 64 rows" in temporal
    assert "rank 37" in temporal and "rank 5</td>" not in temporal
    steps = section(report_64, "steps")
    assert re.search(r"median_step \(µs\)</td>.*?rank 37</td>", steps, re.S)


def test_heatmaps_have_a_row_per_rank_and_mark_the_late_rank(report_64):
    by_id = {f["id"]: f["spec"]["data"][0] for f in figures(report_64)}
    for fig in ("fig-temporal-0", "fig-steps-0", "fig-collectives-0"):
        assert by_id[fig]["type"] == "heatmap" and len(by_id[fig]["z"]) == 64
    late = np.array(by_id["fig-collectives-0"]["z"], float)
    assert np.nanargmax(late.max(axis=1)) == 37  # the slow rank starts the all-reduce last
    steps = np.array(by_id["fig-steps-0"]["z"], float)
    assert np.argmax(steps[:, 0]) == 37 and steps[37, 0] == pytest.approx(
        1.3 * steps[0, 0], rel=0.01
    )  # 3 digits


def test_size_does_not_grow_with_the_ranks(tmp_path):
    sizes = {}
    for n in (MANY_RANKS, 256):
        page = tmp_path / f"r{n}.html"
        sizes[n] = write_report(ranks(n, slow=(3,)), str(page), cdn=True)["bytes"]
    # Beyond MAX_ROWS ranks the heatmaps stop growing; below it a few bytes a rank.
    assert sizes[256] - sizes[MANY_RANKS] < 240 * 1_000, sizes


@pytest.fixture(scope="module")
def traces_1024():
    return ranks(1024, slow=(SLOW,))


@pytest.mark.slow  # 1,024 ranks
def test_1024_ranks_fit_in_a_small_report(traces_1024, tmp_path):
    page = tmp_path / "r1024.html"
    info = write_report(traces_1024, str(page), cdn=True, source="DIR")
    assert info["bytes"] < 1_500_000, info
    assert re.search(r"<code>hta-fast report DIR --ranks 537</code>", section(page, "ranks"))
    first = re.search(r"<td class=\"n\">(\d+)</td>", section(page, "ranks"))
    assert first and first.group(1) == str(SLOW)
    for f in figures(page):
        if f["spec"]["data"][0]["type"] == "heatmap":
            assert len(f["spec"]["data"][0]["z"]) == MAX_ROWS
            assert "(m" in f["spec"]["layout"]["title"]["text"]  # says "max"/"min" of a bin


needs_chromium = pytest.mark.skipif(
    headless_chromium.binary() is None, reason="headless Chromium is not installed"
)


@pytest.mark.slow  # a headless browser, 1,024 ranks
@needs_chromium
def test_1024_ranks_render_in_chromium(traces_1024, tmp_path):
    page = tmp_path / "r1024.html"
    info = write_report(traces_1024, str(page))  # plotly inlined: no network needed
    status, console, blank = check_in_chromium(page, tmp_path)
    assert console == [] and status["errors"] == [], (console, status["errors"])
    assert int(status["rendered"]) == info["figures"] and blank == []
    traces = {r["id"]: r["traces"] for r in status["rects"]}
    for fig in ("fig-temporal-0", "fig-steps-0", "fig-collectives-0"):
        assert traces[fig] == [["heatmap", MAX_ROWS]], traces[fig]


def test_notes_said_of_many_ranks_are_said_once():
    notes = [f"rank {r}: no communication kernels" for r in range(100)]
    notes += ["rank 3: a note of its own", "a note about the run"]
    folded = fold_rank_notes(notes)
    assert folded == [
        "100 ranks (0, 1, 2, 3, 4, 5, 6, 7 ... and 92 more): no communication kernels",
        "rank 3: a note of its own",
        "a note about the run",
    ]
    of_a_step = [f"rank {r} step 3: 2 waits untied" for r in range(5)] + ["rank 9 step 4: x"]
    assert fold_rank_notes(of_a_step) == [
        "5 ranks (0, 1, 2, 3, 4) step 3: 2 waits untied",
        "rank 9 step 4: x",
    ]
    few = [f"rank {r}: odd" for r in range(3)]
    assert fold_rank_notes(few) == few  # a few ranks: each said as it is
