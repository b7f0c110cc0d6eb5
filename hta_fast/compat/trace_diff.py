"""TraceDiff: the reference's trace comparison (hta.trace_diff) over hta_fast.analysis.trace_diff.

    from hta_fast.compat.trace_diff import TraceDiff, DeviceType
    TraceDiff.compare_traces("runs/control", "runs/test")

Each side is a trace folder, a compat TraceAnalysis (where the reference takes its Trace
object), a TraceSet or Trace, or a LabeledTrace. Every step of the traces is visible here,
the last one included, whatever the TraceAnalysis was built with.
"""

from __future__ import annotations

import enum
import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

import numpy as np

from ..analysis import trace_diff as _td
from ..frame import select
from ..loading.sets import load_dir
from ..trace import Trace
from ..traceset import TraceSet

if TYPE_CHECKING:
    import pandas as pd


class DeviceType(enum.Enum):
    CPU = 1
    GPU = 2
    ALL = 3


_DEVICE = {DeviceType.CPU: "cpu", DeviceType.GPU: "gpu", DeviceType.ALL: "all"}
_SIGN = {"added": "+", "increased": "+", "deleted": "-", "decreased": "-", "unchanged": "="}


class LabeledTrace:
    """A trace with a label; the label prefixes its columns in compare_traces."""

    def __init__(
        self, label: Optional[str] = None, t: Any = None, trace_dir: Optional[str] = None
    ) -> None:
        self.label = label if label else "Trace"
        if t is not None:
            self.traces = _as_traces(t)
        elif trace_dir is not None and os.path.isdir(trace_dir):
            self.traces = load_dir(trace_dir)
        else:
            raise ValueError(
                "either a trace object or a valid trace dir must be provided "
                "in LabeledTrace.__init__()"
            )

    def ranks(self) -> List[int]:
        return sorted(self.traces.keys())

    def iterations(self) -> List[int]:
        found: set[int] = set()
        for t in self.traces.values():
            rows = select.profiler_step_rows(t)
            found.update(int(s) for s in np.unique(t.column("events", "step")[rows]))
        found.discard(-1)
        return sorted(found)


def _as_traces(t: Any) -> TraceSet:
    if isinstance(t, TraceSet):
        return t
    if isinstance(t, Trace):
        return TraceSet({t.rank: t})
    traces = getattr(t, "traces", None)  # compat TraceAnalysis
    if isinstance(traces, TraceSet):
        return traces
    raise ValueError(f"Invalid argument type for ({t!r}).")


def _adapt(t: Any, default_label: str) -> LabeledTrace:
    if isinstance(t, LabeledTrace):
        return t
    if isinstance(t, (str, os.PathLike)):
        return LabeledTrace(label=default_label, trace_dir=os.fspath(t))
    return LabeledTrace(label=default_label, t=t)


def _check(
    lt: LabeledTrace,
    rank: Optional[Union[int, List[int]]],
    iteration: Optional[Union[int, List[int]]],
) -> None:
    ranks = lt.ranks()
    if not ranks:
        raise ValueError(f"Trace {lt.label} doesn't have any rank.")
    for r in [rank] if isinstance(rank, int) else (rank or []):
        if r not in ranks:
            raise ValueError(f"Invalid argument rank={rank}.")
    iterations = lt.iterations()
    if iteration is None and not iterations:
        raise ValueError(f"Trace {lt.label} doesn't have any iteration.")
    for i in [iteration] if isinstance(iteration, int) else (iteration or []):
        if i not in iterations:
            raise ValueError(f"Invalid argument iteration={i}.")


class TraceDiff:
    @classmethod
    def compare_traces(
        cls,
        control: Any,
        test: Any,
        control_rank: Optional[Union[int, List[int]]] = None,
        test_rank: Optional[Union[int, List[int]]] = None,
        control_iteration: Optional[Union[int, List[int]]] = None,
        test_iteration: Optional[Union[int, List[int]]] = None,
        device_type: DeviceType = DeviceType.ALL,
        use_short_name: bool = False,
    ) -> pd.DataFrame:
        """Counts and total durations (µs) per name on each side: columns
        `<label>_counts`, `<label>_total_duration` for control then test, diff_counts,
        diff_duration (test - control), counts_change_categories ("+", "-", "="); index:
        the names (`name`, or `short_name`), the control's sorted, then the names only the
        test has, sorted."""
        import pandas as pd

        ct, tt = _adapt(control, "Control"), _adapt(test, "Test")
        if ct.label == tt.label:
            tt.label = f"{tt.label}_test"
        _check(ct, control_rank, control_iteration)
        _check(tt, test_rank, test_iteration)
        res = _td.trace_diff(
            ct.traces,
            tt.traces,
            control_rank=control_rank,
            test_rank=test_rank,
            control_steps=control_iteration,
            test_steps=test_iteration,
            device=_DEVICE[device_type],
            use_short_name=use_short_name,
        )
        tab = res.table
        names = np.asarray(tab.column(0).to_pylist(), dtype=object)
        cat = np.asarray(tab.column("counts_change_categories").to_pylist(), dtype=object)
        order = np.argsort(cat == "added", kind="stable")
        one_sided = bool(((cat == "added") | (cat == "deleted")).any())
        count_type = np.float64 if one_sided else np.int64

        def col(name: str, scale: Optional[bool] = None) -> np.ndarray:
            v = tab.column(name).to_numpy()[order]
            return v / 1000.0 if scale else v.astype(count_type)

        cl, tl = ct.label, tt.label
        df = pd.DataFrame(
            {
                f"{cl}_counts": col("control_counts"),
                f"{cl}_total_duration": col("control_duration", True),
                f"{tl}_counts": col("test_counts"),
                f"{tl}_total_duration": col("test_duration", True),
            },
            index=pd.Index(names[order].tolist(), name=tab.column_names[0]),
        )
        df["diff_counts"] = df[f"{tl}_counts"] - df[f"{cl}_counts"]
        df["diff_duration"] = df[f"{tl}_total_duration"] - df[f"{cl}_total_duration"]
        df["counts_change_categories"] = [_SIGN[c] for c in cat[order]]
        return df

    @classmethod
    def ops_diff(
        cls,
        control: Any,
        test: Any,
        control_rank: Optional[Union[int, List[int]]] = None,
        test_rank: Optional[Union[int, List[int]]] = None,
        control_iteration: Optional[Union[int, List[int]]] = None,
        test_iteration: Optional[Union[int, List[int]]] = None,
        device_type: DeviceType = DeviceType.ALL,
    ) -> Dict[str, List[str]]:
        """Names by change of count: added, deleted, increased, decreased, unchanged (in the
        row order of compare_traces)."""
        df = cls.compare_traces(
            control, test, control_rank, test_rank, control_iteration, test_iteration, device_type
        )
        cc, tc = df.columns[0], df.columns[2]
        c, t, d = df[cc], df[tc], df["diff_counts"]
        return {
            "added": df.index[c.eq(0) & t.gt(0)].tolist(),
            "deleted": df.index[c.gt(0) & t.eq(0)].tolist(),
            "increased": df.index[c.gt(0) & d.gt(0)].tolist(),
            "decreased": df.index[t.gt(0) & d.lt(0)].tolist(),
            "unchanged": df.index[t.gt(0) & d.eq(0)].tolist(),
        }

    @classmethod
    def visualize_counts_diff(
        cls, df: pd.DataFrame, show_image: bool = True, export_image_path: Optional[str] = None
    ) -> Any:
        return cls._bars(
            df,
            "_counts",
            "diff_counts",
            "Ops Count Comparison",
            None,
            show_image,
            export_image_path,
        )

    @classmethod
    def visualize_duration_diff(
        cls, df: pd.DataFrame, show_image: bool = True, export_image_path: Optional[str] = None
    ) -> Any:
        return cls._bars(
            df,
            "_total_duration",
            "diff_duration",
            "Ops Duration Comparison",
            "Total Duration (us)",
            show_image,
            export_image_path,
        )

    @staticmethod
    def _bars(
        df: pd.DataFrame,
        suffix: str,
        diff_col: str,
        title: str,
        ytitle: Optional[str],
        show_image: bool,
        export_image_path: Optional[str],
    ) -> Any:
        import plotly.graph_objects as go

        labels = [c[: -len("_total_duration")] for c in df.columns if c.endswith("_total_duration")]
        if len(labels) < 2:
            raise ValueError("expected the output of TraceDiff.compare_traces")
        fig = go.Figure(
            data=[
                go.Bar(name=labels[0], x=df.index, y=df[labels[0] + suffix]),
                go.Bar(name=labels[1], x=df.index, y=df[labels[1] + suffix]),
                go.Bar(name="Difference", x=df.index, y=df[diff_col]),
            ]
        )
        fig.update_layout(barmode="group", title_text=title, yaxis_title=ytitle)
        if show_image:
            fig.show()
        if export_image_path:
            fig.write_image(export_image_path)
        return fig
