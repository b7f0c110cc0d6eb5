"""MemoryAnalysis: the reference's memory timeline plot (hta.memory_analysis) over
hta_fast.analysis.memory_timeline.

    from hta_fast.compat.memory import MemoryAnalysis
    MemoryAnalysis("memory_timeline.raw.json.gz").plot_memory_timeline()
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..analysis.memory_timeline import CATEGORIES, COLUMNS, memory_timeline

if TYPE_CHECKING:
    import pandas as pd

# The reference's colours: plotly's Pastel scheme, in category order.
_PASTEL = [
    "rgb(102, 197, 204)",
    "rgb(246, 207, 113)",
    "rgb(248, 156, 116)",
    "rgb(220, 176, 242)",
    "rgb(135, 197, 95)",
    "rgb(158, 185, 243)",
    "rgb(254, 136, 177)",
    "rgb(201, 219, 116)",
]


class MemoryAnalysis:
    """path: the raw timeline torch.profiler's export_memory_timeline writes (*.raw.json.gz)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def get_memory_timeline(self) -> pd.DataFrame:
        """A DataFrame: time (ns) and the bytes held per category (the reference's
        category names), one row per distinct timestamp."""
        import pandas as pd

        tab = memory_timeline(self.path).table
        df = pd.DataFrame({"time": tab.column("time").to_numpy()})
        for name, col in zip(CATEGORIES, COLUMNS):
            df[name] = tab.column(col).to_numpy()
        return df

    def plot_memory_timeline(self, save_graph: bool = False, show: bool = True) -> Any:
        """Stacked memory (GB) per category over time (ms from the first timestamp). With
        save_graph the figure goes to images/memory_plot.png; otherwise it is shown (unless
        show=False). Returns the plotly figure."""
        import numpy as np
        import plotly.graph_objects as go

        df = self.get_memory_timeline()
        times = df["time"].to_numpy()
        x = (times - (times.min() if len(times) else 0)) / 1e6
        stacked = np.cumsum(df[list(CATEGORIES)].to_numpy(), axis=1) / 1024**3
        fig = go.Figure()
        for i, (name, color) in enumerate(zip(CATEGORIES, _PASTEL)):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=stacked[:, i],
                    mode="lines",
                    fillcolor=color,
                    fill="tonexty",
                    name=name,
                    marker=dict(color=color),
                    showlegend=True,
                )
            )
        fig.update_xaxes(title="Time (ms)")
        fig.update_yaxes(title="Memory (GB)")
        fig.update_layout(title_text="Memory timeline", title_x=0.5, width=1200, height=800)
        if save_graph:
            os.makedirs("images", exist_ok=True)
            fig.write_image("images/memory_plot.png")
        elif show:
            fig.show()
        return fig
