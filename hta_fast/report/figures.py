"""Plotly figure specs as plain dicts (plotly.js draws them; Python's plotly is not needed).

plotly.js reads every label, legend name, axis category and hover text as pseudo-HTML (<a
href>, <span style>, <br>, ...). Text from a trace is not ours to format: every string that
goes into a figure goes through hta_fast.untrusted_text.plotly_text in the builders below, so a kernel named
`<a href=...>` shows as that name and is not a link.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from ..untrusted_text import plotly_text

# Category colours, fixed so a cause or a kernel type looks the same in every figure.
COLORS = (
    "#4c78a8",
    "#f58518",
    "#54a24b",
    "#e45756",
    "#72b7b2",
    "#eeca3b",
    "#b279a2",
    "#ff9da6",
    "#9d755d",
    "#bab0ac",
)


def _texts(values: Union[Sequence[Any], np.ndarray]) -> list[Any]:
    return [plotly_text(v) for v in values]


def _list(values: npt.ArrayLike) -> list[Any]:
    """JSON-ready values: numpy scalars and arrays to Python, floats rounded (smaller file)."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        return [None if not np.isfinite(v) else v for v in np.round(arr, 4).tolist()]
    return arr.tolist()


def figure(
    data: list[dict[str, Any]],
    title: str,
    xaxis: str,
    yaxis: str,
    *,
    height: int = 380,
    barmode: Optional[str] = None,
    ylog: bool = False,
    xlog: bool = False,
    xtype: Optional[str] = None,
) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": plotly_text(title), "font": {"size": 15}},
        "height": height,
        "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
        "xaxis": {"title": {"text": plotly_text(xaxis)}, "automargin": True},
        "yaxis": {"title": {"text": plotly_text(yaxis)}, "automargin": True},
        "legend": {"orientation": "h", "y": -0.2},
        "template": None,
        "plot_bgcolor": "#fafafa",
    }
    if barmode:
        layout["barmode"] = barmode
    if ylog:
        layout["yaxis"]["type"] = "log"
    if xlog:
        layout["xaxis"]["type"] = "log"
    if xtype:
        layout["xaxis"]["type"] = xtype
    return {"data": data, "layout": layout}


IDLE = "#bab0ac"


def bar(
    x: Union[Sequence[Any], np.ndarray],
    y: npt.ArrayLike,
    name: str,
    i: int = 0,
    *,
    horizontal: bool = False,
    text: Optional[Sequence[str]] = None,
    color: Optional[str] = None,
    **extra: Any,
) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "type": "bar",
        "name": plotly_text(name),
        "marker": {"color": color or COLORS[i % len(COLORS)]},
    }
    if horizontal:
        trace.update(x=_list(y), y=_texts(x), orientation="h")
    else:
        trace.update(x=_texts(x), y=_list(y))
    if text is not None:
        trace["hovertext"] = _texts(text)
    trace.update(extra)
    return trace


def step_line(x: np.ndarray, y: np.ndarray, name: str, i: int = 0) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "line": {"shape": "hv", "width": 1, "color": COLORS[i % len(COLORS)]},
        "name": plotly_text(name),
        "x": _list(x),
        "y": _list(y),
    }
