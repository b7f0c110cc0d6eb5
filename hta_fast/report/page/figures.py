"""Plotly figure specs as plain dicts (plotly.js draws them; Python's plotly is not needed).

plotly.js reads every label, legend name, axis category and hover text as pseudo-HTML (<a
href>, <span style>, <br>, ...). Text from a trace is not ours to format: every string that
goes into a figure goes through hta_fast.guards.untrusted_text.plotly_text in the builders below, so a kernel named
`<a href=...>` shows as that name and is not a link.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from ...guards.untrusted_text import plotly_text

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


def _grid_list(z: np.ndarray) -> list[list[Any]]:
    """A heatmap's cells with three significant digits of its largest: the grid is most of
    the figure's bytes, and a colour shows no more."""
    finite = np.abs(z[np.isfinite(z)])
    top = float(finite.max()) if finite.size else 0.0
    decimals = max(0, 2 - int(np.floor(np.log10(top)))) if top > 0 else 0
    rounded = np.round(z, decimals)
    return [
        [None if not np.isfinite(v) else (int(v) if decimals == 0 else v) for v in row]
        for row in rounded.tolist()
    ]


# Pale for ordinary cells, dark red for the ones to look at.
HOT = [[0.0, "#fff7bc"], [0.5, "#fe9929"], [1.0, "#b30000"]]


def heatmap(
    z: np.ndarray,
    x: Union[Sequence[Any], np.ndarray],
    y: Sequence[str],
    title: str,
    xaxis: str,
    scale: str,
    *,
    reverse: bool = False,
) -> dict[str, Any]:
    """Rows y (top to bottom) by columns x; scale names the colour bar (what and unit).
    reverse: low values in dark red (for a figure where low is bad)."""
    trace = {
        "type": "heatmap",
        "z": _grid_list(z),
        "x": _list(x) if np.asarray(x).dtype.kind in "iuf" else _texts(x),
        "y": _texts(y),
        "colorscale": HOT,
        "reversescale": reverse,
        "colorbar": {"title": {"text": plotly_text(scale)}},
        "hoverongaps": False,
    }
    fig = figure(
        [trace], title, xaxis, "", height=min(900, 160 + 3 * len(y) + 12 * min(len(y), 40))
    )
    fig["layout"]["yaxis"].update(autorange="reversed", type="category")
    return fig
