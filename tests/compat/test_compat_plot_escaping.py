"""The compat facade's drawings (visualize=True) hand plotly only escaped trace text: plotly
reads labels as pseudo-HTML, so a kernel named `<a href=...>` would be a live link."""

from __future__ import annotations

import pandas as pd
import plotly.express as px

from hta_fast.compat import TraceAnalysis
from hta_fast.compat.plot_frames import plot_frame
from tests.support.kineto_builder import KinetoBuilder

LINK = '<a href="https://evil.example/">EVIL</a>'


class _Figure:
    def show(self) -> None:
        pass


def test_plot_frame_escapes_text_columns_and_index_only():
    df = pd.DataFrame({"name": [LINK, "ok"], "sum": [1.5, 2.0]}, index=["<b>", "x"])
    out = plot_frame(df)
    assert out["name"].tolist() == ['&lt;a href="https://evil.example/"&gt;EVIL&lt;/a&gt;', "ok"]
    assert out["sum"].tolist() == [1.5, 2.0]
    assert out.index.tolist() == ["&lt;b&gt;", "x"]
    assert df["name"].iloc[0] == LINK  # the caller's frame is left as it was


def test_kernel_breakdown_drawing_gets_escaped_names(tmp_path, monkeypatch):
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    b.kernel(LINK, 10, 50, 100)
    b.step(1, 1000, 1000)
    b.kernel(LINK, 1010, 1050, 100)
    path = tmp_path / "rank0.json"
    path.write_bytes(b.to_bytes())
    drawn = []

    def capture(df, *args, **kwargs):
        drawn.append(df)
        return _Figure()

    monkeypatch.setattr(px, "bar", capture)
    monkeypatch.setattr(px, "pie", capture)
    kernels = TraceAnalysis(trace_files=[str(path)]).get_gpu_kernel_breakdown(visualize=True)[1]
    assert LINK in kernels["name"].tolist()  # the returned frame keeps the real name
    texts = [v for df in drawn for c in df.columns if df[c].dtype.kind == "O" for v in df[c]]
    assert texts and not [t for t in texts if isinstance(t, str) and "<" in t]
