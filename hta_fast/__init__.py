"""hta_fast: native-speed analysis of PyTorch profiler (Kineto) traces."""

import importlib

try:
    from ._core import __version__
except ImportError as e:  # a source tree whose C++ core was never built
    raise ImportError(
        "hta_fast's compiled core (hta_fast._core) is not built or does not load here "
        f"({e}). From the repository root run `make build` (or `pip install -e .`), then "
        "import hta_fast from that environment."
    ) from e
from .build_info import build_info
from .errors import TraceFormatError
from .frame.capture_trace import with_capture
from .loading.dataset import TraceDataset, open_dataset
from .loading.files import rank_from_name
from .loading.loader import load
from .loading.sets import load_dir
from .schema import EventKind, KernelClass
from .trace import Trace, TraceMeta
from .traceset import TraceSet

# Names resolved on first use: what they import (DuckDB's bridge over every analysis) is not
# loaded by `import hta_fast`.
_ON_FIRST_USE = {"query": "hta_fast.sql"}


def __getattr__(name: str) -> object:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'hta_fast' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "load",
    "load_dir",
    "rank_from_name",
    "Trace",
    "TraceMeta",
    "TraceSet",
    "TraceFormatError",
    "EventKind",
    "KernelClass",
    "__version__",
    "open_dataset",
    "TraceDataset",
    "with_capture",
    "build_info",
    "query",
]
