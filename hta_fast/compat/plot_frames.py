"""Frames handed to plotly by the compat facade's `visualize=True` drawings: their text
(kernel, op and annotation names from the trace) escaped first, so that plotly, which reads
labels as pseudo-HTML, shows a name like `<a href=...>` as typed (hta_fast.guards.untrusted_text)."""

from __future__ import annotations

from typing import Any

from ..guards.untrusted_text import plotly_text


def plot_frame(df: Any) -> Any:
    """A copy of the pandas frame with its text columns and text index escaped for plotly."""
    out = df.copy()
    for name in out.columns:
        # kind "O": object, string and categorical columns (pandas 2 and 3 alike)
        if out[name].dtype.kind == "O":
            out[name] = out[name].astype(object).map(plotly_text)
    if out.index.dtype.kind == "O":
        out.index = out.index.map(plotly_text)
    return out
