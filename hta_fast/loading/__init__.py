"""Layer 3, load: trace files in, a Trace or TraceSet out. files lists a set's files and
assigns ranks; loader reads one file (or its bytes, or a saved trace); sets loads one file per
rank on threads, local processes or a Dask cluster; dataset writes and opens the Parquet
dataset; summary keeps the few kilobytes per rank that cross-rank analyses need; cache keeps
a saved copy of each loaded file."""

from .dataset import TraceDataset, open_dataset
from .files import TRACE_SUFFIXES, rank_from_name, trace_files
from .loader import load
from .sets import load_dir
from .summary import RankSummary, summarize

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
