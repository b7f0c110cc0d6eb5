"""Names from a trace in the HTML report are text: plotly.js reads labels, legend names, axis
categories and hover text as pseudo-HTML, so a kernel named `<a href=...>` would be a live
link in a figure unless every such string is escaped (hta_fast.guards.untrusted_text.plotly_text)."""

from __future__ import annotations

import html
import json
import re

from hta_fast.guards.untrusted_text import plotly_text
from hta_fast.report import write_report
from tests.support.kineto_builder import KinetoBuilder, traceset

LINK = '<a href="https://evil.example/">EVIL</a>'
STYLED = '<span style="font-size:80px;color:red">BIG</span>'


def _hostile_traces():
    builders = []
    for rank in range(2):
        b = KinetoBuilder(rank=rank, world_size=2)
        for s in range(3):
            t0 = s * 10_000
            b.step(s, t0, 10_000)
            b.cpu_op(f"aten::{STYLED}", t0 + 5, 50)
            for j, name in enumerate([LINK, STYLED, "gemm & <b>bold</b>"]):
                b.kernel(name, t0 + 60 + j * 20, t0 + 100 + j * 500, 400 + 50 * rank)
            b.memcpy("HtoD", t0 + 200, t0 + 2000, 300, 1 << 20)
            b.nccl(LINK, t0 + 300, t0 + 3000, 900)
        builders.append(b)
    return traceset(builders)


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def test_plotly_text_escapes_tags_and_entities():
    assert plotly_text(LINK) == '&lt;a href="https://evil.example/"&gt;EVIL&lt;/a&gt;'
    assert plotly_text("a &amp; b") == "a &amp;amp; b"  # shown as typed, not decoded
    assert plotly_text(3.5) == 3.5


def test_trace_names_reach_the_figures_only_escaped(tmp_path):
    path = tmp_path / "report.html"
    write_report(_hostile_traces(), str(path), cdn=True)
    page = path.read_text()
    blob = re.search(r'<script type="application/json" id="figure-data">(.*?)</script>', page, re.S)
    assert blob is not None
    figures = json.loads(blob.group(1))
    texts = list(_strings(figures))
    # No figure string holds a tag: nothing of ours has one, and the trace's are escaped.
    assert not [t for t in texts if "<" in t or ">" in t]
    by_id = {f["id"]: f["spec"] for f in figures}
    top = by_id["fig-top-kernels-0"]["data"][0]
    assert html.escape(LINK, quote=False) in top["y"]
    assert html.escape(STYLED, quote=False) in top["hovertext"]
    assert "gemm &amp; &lt;b&gt;bold&lt;/b&gt;" in top["y"]
    legend = [t["name"] for t in by_id["fig-collectives-0"]["data"]]
    assert any("&lt;a href=" in n for n in legend), legend
    # and the tables around the figures are escaped by the template
    assert LINK not in page and STYLED not in page
