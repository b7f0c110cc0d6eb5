"""Custom metrics at native speed: a plain Python function over column arrays, compiled
with Numba and run over groups of events (per rank, stream, step, kernel name, kind,
time window, ...) in parallel.

    from hta_fast import udf

    @udf.metric
    def busy_ns(ts, end):           # parameter names are column names
        return (end - ts).sum()

    udf.apply(busy_ns, trace, by="stream").to_pandas()

See columns.py for the columns a metric can read and apply() for the grouping and
selection keywords. Numba is imported on first use only (the `udf` extra installs it);
compiled metrics are cached on disk, so a second process does not compile them again.
"""

from .apply import KIND_SETS, apply
from .columns import COLUMNS
from .errors import MetricCompileError, MetricRunError
from .groups import KEYS
from .metric import Metric, metric

__all__ = [
    "apply",
    "metric",
    "Metric",
    "MetricCompileError",
    "MetricRunError",
    "COLUMNS",
    "KEYS",
    "KIND_SETS",
]
