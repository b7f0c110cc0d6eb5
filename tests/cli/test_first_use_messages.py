"""What a new user sees on a first try: a trace without GPU activity reported as such (nulls,
not zeros), a folder of unrelated single-GPU traces, a trace cut before its GPU events, a CDN
report without plotly, and the demo without the project's sample traces."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys

import pytest
from click.testing import CliRunner

from hta_fast import TraceSet, synth
from hta_fast.cli import cli
from hta_fast.cli.commands.demo import DEMO_BASE
from hta_fast.doctor import diagnose
from hta_fast.report import write_report
from hta_fast.report.page import plotlyjs
from tests.support.kineto_builder import KinetoBuilder, traceset
from tests.support.paths import REPO
from tests.support.synthetic_traces import STEP_US, STEPS, cpu_only, healthy

ROOT = REPO


def launches_then_kernels() -> KinetoBuilder:
    """Steps that launch kernels; the file lists the host's events first, the GPU's after
    them, so a cut in the middle keeps the launches and loses the kernels (in Kineto's files
    the first GPU event comes about halfway)."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        for j in range(10):
            b.kernel("gemm", t0 + 20 + j * 30, t0 + 40 + j * 300, 250)
    host = [e for e in b.events if e.get("pid") != 0]
    b.events = host + [e for e in b.events if e.get("pid") == 0]
    return b


def doctor_section(html: str) -> str:
    section = html[html.index('<section id="doctor">') :]
    return section[: section.index("</section>")]


def visible_text(html: str) -> str:
    html = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# --- 1. no GPU activity: nulls, not zeros ----------------------------------------------------


def test_no_gpu_activity_gives_nulls_in_the_json(tmp_path):
    path = tmp_path / "cpu.json"
    path.write_bytes(cpu_only().to_bytes())
    res = CliRunner().invoke(cli, ["doctor", "--json", str(path)])
    assert res.exit_code == 3, res.output
    doc = json.loads(res.output)
    assert doc["utilization"] is None and doc["step_time_ns"] is None
    assert doc["cpu_step_time_ns"] is None
    assert doc["headline"]["utilization"] is None and doc["headline"]["step_time_ns"] is None
    assert "no GPU activity recorded" in doc["no_gpu_activity"]["0"]
    assert doc["gate"]["passed"] is False


def test_no_gpu_activity_in_the_text_and_the_headline():
    d = diagnose(cpu_only().load())
    assert d.utilization is None and d.step_time_ns is None
    (line,) = d.headline_text()
    assert line.startswith("No GPU activity recorded") and "0.0" not in line
    assert "mean step" not in d.to_text()
    # a gate on utilization has nothing to compare: the rank's own reason fails it
    reasons = d.failed(fail_under_utilization=50)
    assert len(reasons) == 1 and "no GPU activity recorded" in reasons[0]


def test_a_set_with_gpu_activity_on_one_rank_keeps_its_numbers():
    d = diagnose(TraceSet({0: healthy()[0], 1: traceset([cpu_only()])[0]}))
    assert d.utilization is not None and d.utilization > 0.99
    assert d.step_time_ns and d.step_time_ns > 0
    assert d.headline_text()[0].startswith("mean step")


def test_report_of_a_trace_without_gpu_activity(tmp_path, monkeypatch):
    monkeypatch.setattr(plotlyjs, "bundle", lambda: "")  # the page's text is what is tested
    path = tmp_path / "cpu.html"
    write_report(traceset([cpu_only()]), str(path), cdn=True)
    html = path.read_text()
    text = visible_text(html)
    assert "No GPU activity recorded" in text
    assert "mean step 0.0" not in text and "GPU utilization 0.0" not in text
    doctor = doctor_section(html)
    assert "no GPU activity recorded" in visible_text(doctor)
    assert "causes above threshold" not in doctor and "below threshold" not in doctor
    assert "rank 0: no GPU activity recorded: a CPU-only trace" in visible_text(doctor)
    headline = re.search(r'id="headline-data">(.*?)</script>', html, flags=re.S)
    assert headline is not None
    data = json.loads(headline.group(1))
    assert data["utilization"] is None and data["step_time_ns"] is None


# --- 2. a folder of unrelated single-GPU traces ----------------------------------------------


def test_folder_of_traces_without_ranks_says_what_to_pass(tmp_path):
    for name in ("resnet.json", "bert.json"):
        b = KinetoBuilder()
        b.step(0, 0, STEP_US)
        b.kernel("gemm", 20, 40, 250)
        (tmp_path / name).write_bytes(b.to_bytes().replace(b'"distributedInfo"', b'"unused"'))
    res = CliRunner().invoke(cli, ["info", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert "damaged" not in res.output
    assert "no rank in distributedInfo or in the file name" in res.output
    assert "separate runs" in res.output and "one file at a time" in res.output
    assert "rank-0.json" in res.output  # how to name files with their rank
    # one file at a time loads
    res = CliRunner().invoke(cli, ["info", str(tmp_path / "bert.json")])
    assert res.exit_code == 0, res.output


def test_two_single_gpu_runs_that_both_say_rank_0_say_what_to_pass(tmp_path):
    for name in ("resnet.json", "bert.json"):  # each says distributedInfo.rank 0
        b = KinetoBuilder(rank=0, world_size=1)
        b.step(0, 0, STEP_US)
        b.kernel("gemm", 20, 40, 250)
        (tmp_path / name).write_bytes(b.to_bytes())
    res = CliRunner().invoke(cli, ["info", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert "rank 0 is claimed by two files" in res.output
    assert "separate runs" in res.output and "one file at a time" in res.output


# --- 3. a trace cut before its GPU events ----------------------------------------------------


def test_cut_before_the_gpu_events_is_not_called_cpu_only(tmp_path):
    data = launches_then_kernels().to_bytes()
    cut = data.index(b'"cat": "kernel"')  # inside the first GPU event
    path = tmp_path / "cut.json"
    path.write_bytes(data[:cut])
    res = CliRunner().invoke(cli, ["doctor", "--recover", str(path)])
    assert res.exit_code == 3, res.output
    assert "CPU-only" not in res.output and "was not traced" not in res.output
    assert "cut short" in res.output and "lost tail" in res.output


def test_whole_trace_without_gpu_events_still_says_cpu_only():
    d = diagnose(cpu_only().load())
    assert "CPU-only" in d.no_gpu_activity[0] and "cut short" not in d.no_gpu_activity[0]


# --- 4. --cdn without plotly -----------------------------------------------------------------


def test_cdn_report_without_plotly(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name == "plotly" or name.startswith("plotly."):
            return None
        return real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setitem(sys.modules, "plotly", None)  # an import of it fails
    plotlyjs.installed_bundle.cache_clear()
    try:
        path = tmp_path / "cdn.html"
        write_report(healthy(), str(path), cdn=True)
        html = path.read_text()
    finally:
        plotlyjs.installed_bundle.cache_clear()
    url = f"https://cdn.plot.ly/plotly-{plotlyjs.PLOTLY_JS_VERSION}.min.js"
    assert f'src="{url}"' in html


def test_cdn_version_is_the_installed_bundles():
    if importlib.util.find_spec("plotly") is None:
        pytest.skip("plotly is not installed")
    with open(plotlyjs.bundle_path(), encoding="utf-8") as fh:
        head = fh.read(400)
    assert f"plotly.js v{plotlyjs.version()}" in head


# --- 6. the README's install line ------------------------------------------------------------


def test_readme_says_how_to_get_a_wheel():
    readme = (ROOT / "README.md").read_text()
    install = readme[readme.index("## Install") :]
    install = install[: install.index("### From source")]
    first = install[install.index("```") + 3 :]
    first = first[: first.index("```")]
    assert "make wheel" in install and "pip install ." in install
    # the first command shown installs from this checkout, not from a package index
    assert first.strip().splitlines()[0].startswith(("make wheel", "pip install ."))


# --- 5. the demo without the project's sample trace ------------------------------------------


def test_demo_without_the_sample_trace(tmp_path, monkeypatch):
    monkeypatch.setattr(synth, "DEFAULT_BASE", tmp_path / "no_shared" / "control.json.gz")
    out = tmp_path / "demo"
    res = CliRunner().invoke(cli, ["demo", "-o", str(out), "--size-mb", "1", "--cdn"])
    assert res.exit_code == 0, res.output
    assert "building from hta_fast's own small program" in res.output
    assert "rank 2 is a straggler" in res.output
    assert '<section id="doctor">' in (out / "report.html").read_text()
    # the report has the straggler to find, as with the sample trace
    res = CliRunner().invoke(cli, ["doctor", "--json", "--no-model", str(out)])
    top = json.loads(res.output)["findings"][0]
    assert top["cause"] == "rank_imbalance" and top["above_threshold"]
    assert top["evidence"]["waited_for_rank"] == 2


def test_shipped_demo_base_is_small_and_what_its_generator_writes(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    gen_demo_base = importlib.import_module("gen_demo_base")
    gen_demo_base.write(tmp_path / "base.json.gz")
    assert (tmp_path / "base.json.gz").read_bytes() == DEMO_BASE.read_bytes()
    assert DEMO_BASE.stat().st_size < 100_000
