"""visualize=True draws with plotly (imported only then) and still returns the data; every
compat method that can draw is called once with it, figures collected instead of shown."""

import pytest

plotly = pytest.importorskip("plotly")  # the test extra installs it
import plotly.graph_objects as go  # noqa: E402

from hta_fast.compat import TraceAnalysis  # noqa: E402


@pytest.fixture
def shown(monkeypatch):
    figures = []
    monkeypatch.setattr(go.Figure, "show", lambda self, *a, **k: figures.append(self))
    return figures


def test_every_plot_draws(traces_dir, tmp_path, shown):
    ta = TraceAnalysis(trace_dir=str(traces_dir / "hta" / "trace_filter"))
    calls = {
        "temporal": lambda: ta.get_temporal_breakdown(visualize=True),
        "idle": lambda: ta.get_idle_time_breakdown(ranks=[0, 1], visualize=True),
        "kernels": lambda: ta.get_gpu_kernel_breakdown(visualize=True),
        "overlap": lambda: ta.get_comm_comp_overlap(visualize=True),
        "launches": lambda: ta.get_cuda_kernel_launch_stats(ranks=[0], visualize=True),
        "annotations": lambda: ta.get_gpu_user_annotation_breakdown(
            use_gpu_annotation=False, visualize=True
        ),
        "stragglers": lambda: ta.get_potential_stragglers(visualize=True),
        "sequences": lambda: ta.get_frequent_cuda_kernel_sequences(
            "aten::linear", str(tmp_path), visualize=True
        ),
    }
    drawn = {}
    for name, call in calls.items():
        before = len(shown)
        result = call()
        assert result is not None, name
        drawn[name] = len(shown) - before
    # trace_filter has no aten::linear pattern: nothing to draw for sequences
    assert drawn == {
        "temporal": 1,
        "idle": 1,
        "kernels": 2,
        "overlap": 1,
        "launches": 3,
        "annotations": 1,
        "stragglers": 1,
        "sequences": 0,
    }
    for fig in shown:
        assert isinstance(fig, go.Figure) and len(fig.data) >= 1
