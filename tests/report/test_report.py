"""The HTML report: self-contained, numbers from the analyses, and rendered for real in
headless Chromium (no JavaScript errors, every figure drawn)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis import queue_length, temporal
from hta_fast.cli import cli
from hta_fast.frame.fields import display_unit
from hta_fast.report import write_report
from hta_fast.report.page import plotlyjs
from hta_fast.report.page.downsample import min_max
from hta_fast.report.sections import findings
from tests.support import fake_doctor, headless_chromium
from tests.support.paths import SHARED_TRACES

DLRM = "param_dlrm_8rank"


@pytest.fixture(scope="module")
def dlrm_traces(traces_dir):
    return hta_fast.load_dir(traces_dir / DLRM)


@pytest.fixture(scope="module")
def dlrm_report(dlrm_traces, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(dlrm_traces, str(path))
    return path


# --- downsampling (figures only) -------------------------------------------------------------
def test_min_max_keeps_peaks_and_order():
    x = np.arange(100_000, dtype=float)
    y = np.zeros(100_000)
    y[12_345], y[67_890] = 99.0, -5.0
    dx, dy = min_max(x, y, 1000)
    assert len(dx) <= 1000
    assert np.all(np.diff(dx) > 0)
    assert 99.0 in dy and -5.0 in dy
    assert dx[np.argmax(dy)] == 12_345 and dx[np.argmin(dy)] == 67_890


def test_min_max_leaves_small_series_alone():
    x, y = np.arange(10.0), np.arange(10.0)
    dx, dy = min_max(x, y, 100)
    assert dx is x and dy is y


def test_numbers_do_not_depend_on_plot_points(dlrm_traces, tmp_path):
    """Fewer plot points change the figures, never the tables."""
    small, big = tmp_path / "small.html", tmp_path / "big.html"
    write_report(dlrm_traces, str(small), max_points=200, cdn=True)
    write_report(dlrm_traces, str(big), max_points=1_000_000, cdn=True)
    tables = [re.findall(r"<table[^>]*>.*?</table>", p.read_text(), re.S) for p in (small, big)]
    assert tables[0] == tables[1] and len(tables[0]) > 10
    n_points = queue_length.queue_length(dlrm_traces).table.num_rows
    assert (
        "the figure shows" in small.read_text()
        and f"of {n_points:,} change points" in small.read_text()
    )
    assert "the figure shows" not in big.read_text()


# --- content --------------------------------------------------------------------------------
def test_report_is_self_contained(dlrm_report):
    text = dlrm_report.read_text()
    assert text.count(f"plotly.js v{plotlyjs.version()}") == 1  # the bundle, inlined once
    assert not re.search(r"<script[^>]+src=", text)
    assert not re.search(r"""<link[^>]+href=["']https?:""", text)


def test_report_numbers_come_from_the_analyses(dlrm_report, dlrm_traces):
    text = dlrm_report.read_text()
    t = temporal.temporal_breakdown(dlrm_traces).table
    idles = t.column("idle_time").to_pylist()
    scale, unit = display_unit(idles)  # the column's unit, as the CLI shows it too
    assert f"idle_time ({unit})" in text
    for idle in idles:
        assert f"{idle / scale:,.2f}" in text
    for section in (
        "Temporal breakdown per rank",
        "GPU utilization, SM efficiency and occupancy",
        "Step time breakdown",
        "Critical path per step",
        "Kernel types and their overlaps",
        "Top kernels",
        "Operators: FLOPs, bytes and the roofline",
        "Communication / computation overlap",
        "Idle time per stream",
        "CUDA queue length over time",
        "Memory bandwidth over time",
        "Launch delay",
        "Per-step and per-rank timings",
        "Collectives",
        "Inference passes",
    ):
        assert f"<h2>{section}</h2>" in text
    assert "ncclKernel_AllReduce_RING_LL_Sum_float" in text
    # A training job marks no inference pass: the section says so in one line.
    assert "No inference passes marked on the selected ranks." in text


def test_inference_section_shows_the_passes(tmp_path):
    path = SHARED_TRACES / "modern/vllm_decode_full"
    if not path.is_dir():
        pytest.skip("modern traces not present")
    page = tmp_path / "vllm.html"
    res = CliRunner().invoke(cli, ["-q", "report", str(path), "-o", str(page), "--cdn"])
    assert res.exit_code == 0, res.output
    text = page.read_text()
    section = text[text.index('<section id="inference">') :]
    section = section[: section.index("</section>")]
    # One decode step of 32 requests over 55,086 cached tokens, 99.76 % busy, 10.74 ms.
    assert "10.74" in section and "99.76" in section and "55,086" in section  # dur in ms
    assert "execute_32_context_0(" in section
    # Healthy: the causes below threshold, each in a word; a zero saving said as one.
    doctor = text[text.index('<section id="doctor">') :]
    doctor = doctor[: doctor.index("</section>")]
    assert "launch_bound 0.0 % (model: no saving)" in doctor and "0.0 µs" not in doctor


def test_cdn_report_is_small(dlrm_traces, tmp_path):
    path = tmp_path / "cdn.html"
    write_report(dlrm_traces, str(path), cdn=True)
    text = path.read_text()
    assert f'src="https://cdn.plot.ly/plotly-{plotlyjs.version()}.min.js"' in text
    assert path.stat().st_size < 1_000_000


def test_doctor_findings_come_first(dlrm_traces, tmp_path, monkeypatch):
    mod = fake_doctor.module(utilization=0.455, findings=[fake_doctor.launch_bound_finding()])
    monkeypatch.setattr(findings, "diagnose", mod.diagnose)
    path = tmp_path / "r.html"
    write_report(dlrm_traces, str(path), steps=[10], cdn=True)
    text = path.read_text()
    doctor_at = text.index('<section id="doctor">')
    assert doctor_at < text.index('<section id="summary">')
    assert "Launch-bound: the GPU waits for the CPU" in text
    assert "1.23 ms per step" in text and "25.0 % of the step" in text
    assert "Use CUDA graphs or fuse small kernels." in text
    assert "GPU utilization 45.5 %" in text
    # One utilization: the first card shows the doctor's, named, and the per-rank busy share
    # says how it differs.
    cards = text[: text.index('<section id="doctor">')]
    assert "45.5 %" in cards and "GPU utilization (busy share of the analysed steps)" in cards
    assert "GPU utilization is the doctor&#39;s" in text
    assert mod.calls[0]["steps"] == [10]


def test_report_when_the_doctor_cannot_run(dlrm_traces, tmp_path, monkeypatch):
    def fails(traces, steps=None, thresholds=None):
        raise ValueError("no steps to judge")

    monkeypatch.setattr(findings, "diagnose", fails)
    path = tmp_path / "r.html"
    write_report(dlrm_traces, str(path), cdn=True)
    assert "the doctor could not run on these traces (no steps to judge)" in path.read_text()


@pytest.mark.parametrize(
    "name", ["hta/cpu_only", "hta/amd_trace", "hta/critical_path/cuda_event_sync"]
)
def test_odd_traces_still_give_a_report(traces_dir, tmp_path, name):
    """No GPU work, no steps, no communication: sections say so instead of failing."""
    res = CliRunner().invoke(
        cli, ["report", str(traces_dir / name), "-o", str(tmp_path / "r.html"), "--cdn"]
    )
    assert res.exit_code == 0, res.output
    assert "<h2>Run summary</h2>" in (tmp_path / "r.html").read_text()


def test_report_command_prints_size(traces_dir, tmp_path):
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(traces_dir / DLRM), "-o", str(out)])
    assert res.exit_code == 0
    size = out.stat().st_size / 1e6
    # 13 figures less the one whose series hold a bar each (one step per rank: its table says it)
    assert res.output.startswith(f"{out}: {size:.1f} MB, 12 figures")


def test_report_output_into_a_missing_folder(traces_dir, tmp_path):
    res = CliRunner().invoke(
        cli, ["report", str(traces_dir / DLRM), "-o", str(tmp_path / "no" / "r.html")]
    )
    assert res.exit_code == 2
    assert "no such folder" in res.output


# --- rendered in headless Chromium ----------------------------------------------------------
needs_chromium = pytest.mark.skipif(
    headless_chromium.binary() is None,
    reason="headless Chromium is not installed (Debian package 'chromium'; `make test` installs it)",
)


def blank_figures(png_path, rects) -> list[str]:
    """Figures whose area in the screenshot is (nearly) one colour: nothing drawn."""
    from PIL import Image

    image = np.asarray(Image.open(png_path).convert("L"), dtype=np.int16)
    blank = []
    for r in rects:
        area = image[r["y"] : r["y"] + r["h"], r["x"] : r["x"] + r["w"]]
        if area.size == 0:
            blank.append(f"{r['id']} (outside the screenshot)")
            continue
        # Drawn plots have axes, labels and filled marks: many pixels far from the background.
        background = np.bincount(area.ravel()).argmax()
        inked = np.mean(np.abs(area - background) > 40)
        if inked < 0.01:
            blank.append(f"{r['id']} ({inked:.2%} inked)")
    return blank


def check_in_chromium(page, tmp_path) -> tuple[dict, list[str], list[str]]:
    """(status, console messages, blank figures) of a report opened in Chromium."""
    status, console = headless_chromium.status(page)
    assert status.get("done") == "1", f"the page did not finish rendering: {status}"
    height = int(status["height"])
    shot = tmp_path / "shot.png"
    console += headless_chromium.screenshot(page, shot, 1400, min(height, 16_000))
    return status, console, blank_figures(shot, status["rects"])


@pytest.mark.slow  # a headless browser
@needs_chromium
@pytest.mark.parametrize("name", [DLRM, "hta/trace_filter", "hta/critical_path/cuda_event_sync"])
def test_report_renders_in_chromium(traces_dir, tmp_path, capsys, name):
    page = tmp_path / "report.html"
    res = CliRunner().invoke(cli, ["report", str(traces_dir / name), "-o", str(page)])
    assert res.exit_code == 0, res.output
    status, console, blank = check_in_chromium(page, tmp_path)
    assert console == [], console
    assert status["errors"] == []
    # a one-rank trace's one-bar charts are left out (its tables give the numbers)
    assert int(status["figures"]) >= (10 if name == DLRM else 4)
    assert status["rendered"] == status["figures"]
    assert all(r["rendered"] and r["h"] >= 300 for r in status["rects"])
    assert blank == []
    with capsys.disabled():
        print(
            f"\n{name}: report {page.stat().st_size / 1e6:.2f} MB, {status['rendered']} "
            f"figures rendered, page height {status['height']} px"
        )


@pytest.mark.slow  # a headless browser
@needs_chromium
def test_chromium_check_sees_errors_and_blank_figures(dlrm_report, tmp_path):
    """The checks above can fail: a script error and hidden plots are both caught."""
    text = dlrm_report.read_text()
    broken = tmp_path / "broken.html"
    broken.write_text(
        text.replace("</body>", "<script>undefinedFunction();</script></body>").replace(
            "</style>", ".figure .main-svg { visibility: hidden; }</style>"
        )
    )
    status, console, blank = check_in_chromium(broken, tmp_path)
    assert any("undefinedFunction" in m for m in console)
    assert len(blank) == int(status["figures"]) == 12


def test_summary_shows_what_the_loader_skipped(traces_dir, tmp_path):
    import gzip

    text = gzip.decompress(
        (traces_dir / "hta" / "trace_filter" / "sampled_rank-0.json.gz").read_bytes()
    )
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) // 2])
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", "--recover", "--cdn", str(cut), "-o", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert "what the loader counted and skipped" in html and "truncated_file" in html
    assert "<title>hta_fast report: cut.json</title>" in html


def test_report_of_chosen_ranks(dlrm_traces, tmp_path):
    out = tmp_path / "r.html"
    write_report(dlrm_traces, str(out), ranks=[0, 1], steps=[10], cdn=True)
    html = out.read_text()
    assert "ranks 0, 1 · steps 10" in html
    assert "rank 1" in html and "rank 2" not in html and "rank 7" not in html


@pytest.mark.slow  # a headless browser
@needs_chromium
def test_tables_sort_and_filter_in_chromium(dlrm_report):
    """The page's own self-test clicks a numeric header twice and types the first row's
    first cell into the filter of a table longer than 10 rows: the column comes out
    ascending, then descending, and only the rows holding the text stay shown; cleared, the
    table shows its first 10 rows again."""
    dom, console = headless_chromium.dump_dom(dlrm_report, fragment="#selftest")
    data = headless_chromium.element_data(dom, "report-status")
    assert "selftest" in data, console
    st = json.loads(data["selftest"])
    assert st["tables"] > 5
    assert st["up"] == sorted(st["before"]) and st["down"] == sorted(st["before"], reverse=True)
    assert st["up"] != st["down"]  # the column has more than one value: the order changed
    assert 1 <= st["shown"] < st["rows"]
    # the first 10 rows show until "show all"; a filter finds matches past them too
    assert st["collapsed"] == 10


def test_the_headline_is_the_doctors(dlrm_traces, dlrm_report, traces_dir):
    """The report's first screen states the doctor's headline: the numbers `doctor --json`
    prints."""
    text = dlrm_report.read_text()
    m = re.search(r'<script type="application/json" id="headline-data">(.*?)</script>', text, re.S)
    page = json.loads(m.group(1))
    res = CliRunner().invoke(cli, ["-q", "doctor", "--json", str(traces_dir / DLRM)])
    assert res.exit_code in (0, 1), res.output
    assert page == json.loads(res.output)["headline"]
    first = re.search(r'<div class="first">(.*?)</div>', text, re.S).group(1)
    assert f"{100 * page['utilization']:.1f}%" in first and "mean step" in first


def test_the_operator_section_marks_the_rows_it_cannot_vouch_for(traces_dir, tmp_path):
    page = tmp_path / "ops.html"
    trace = str(traces_dir / "hta/trace_diff/control/control.json.gz")
    res = CliRunner().invoke(cli, ["-q", "report", trace, "-o", str(page), "--cdn"])
    assert res.exit_code == 0, res.output
    text = page.read_text()
    section = text[text.index('<section id="operators">') :]
    section = section[: section.index("</section>")]
    assert "achieved_flops (TFLOP/s)" in section and "achieved_bandwidth (GB/s)" in section
    # aten::cat's sizes come from its CatBackward0 nodes: an assumption, said in the row
    assert "the list&#39;s sizes are not recorded" in section


def test_the_steps_section_names_the_slice_of_the_slowest_step(dlrm_report, traces_dir, tmp_path):
    text = dlrm_report.read_text()
    m = re.search(r"hta-fast slice (\S+) --ranks (\d+) --steps (\d+) -o (\S+)", text)
    assert m, "no slice command in the steps section"
    out = tmp_path / "slowest.json.gz"
    res = CliRunner().invoke(
        cli,
        [
            "-q",
            "slice",
            str(traces_dir / DLRM),
            "--ranks",
            m.group(2),
            "--steps",
            m.group(3),
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert hta_fast.load(str(out)).num_rows("events") > 0
