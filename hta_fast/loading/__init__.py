"""Layer 3, load: trace files in, a Trace or TraceSet out. files lists a set's files and
assigns ranks; loader reads one file (or its bytes, or a saved trace); sets loads one file per
rank on threads, local processes or a Dask cluster; dataset writes and opens the Parquet
dataset; summary keeps the few kilobytes per rank that cross-rank analyses need; cache keeps
a saved copy of each loaded file.

The names below resolve on first use (hta_fast._lazy): a command that only loads does not
import the dataset writer or the summaries' compute kernels."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .dataset import TraceDataset, open_dataset
    from .files import TRACE_SUFFIXES, rank_from_name, trace_files
    from .loader import load
    from .sets import load_dir
    from .summary import RankSummary, summarize

# Each public name and the module that defines it (tests/project/test_startup.py holds it, the
# TYPE_CHECKING imports and __all__ equal).
PUBLIC = {
    "load": "hta_fast.loading.loader",
    "load_dir": "hta_fast.loading.sets",
    "trace_files": "hta_fast.loading.files",
    "rank_from_name": "hta_fast.loading.files",
    "TRACE_SUFFIXES": "hta_fast.loading.files",
    "TraceDataset": "hta_fast.loading.dataset",
    "open_dataset": "hta_fast.loading.dataset",
    "RankSummary": "hta_fast.loading.summary",
    "summarize": "hta_fast.loading.summary",
}

__all__ = [
    "load",
    "load_dir",
    "trace_files",
    "rank_from_name",
    "TRACE_SUFFIXES",
    "TraceDataset",
    "open_dataset",
    "RankSummary",
    "summarize",
]

lazy_package(__name__, PUBLIC)
