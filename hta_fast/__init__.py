"""hta_fast: native-speed analysis of PyTorch profiler (Kineto) traces.

The public names below resolve on first use (module __getattr__): `import hta_fast` loads
only the compiled core, so a command line that prints its help, or a tool that imports the
package to read its version, does not pay for numpy, pyarrow and every analysis. A
subpackage (hta_fast.frame, ...) is imported when first named, too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_package

try:
    from ._core import __version__
except ImportError as e:  # a source tree whose C++ core was never built
    raise ImportError(
        "hta_fast's compiled core (hta_fast._core) is not built or does not load here "
        f"({e}). From the repository root run `make build` (or `pip install -e .`), then "
        "import hta_fast from that environment."
    ) from e

if TYPE_CHECKING:
    from .build_info import build_info
    from .errors import TraceFormatError
    from .frame.capture_trace import with_capture
    from .loading.dataset import TraceDataset, open_dataset
    from .loading.files import rank_from_name
    from .loading.loader import load
    from .loading.sets import load_dir
    from .schema import EventKind, KernelClass
    from .sql import query
    from .trace import Trace, TraceMeta
    from .traceset import TraceSet

# Each public name and the module that defines it (TYPE_CHECKING above and __all__ below
# restate it for type checkers and linters; tests/project/test_startup.py holds the three equal).
PUBLIC = {
    "load": "hta_fast.loading.loader",
    "load_dir": "hta_fast.loading.sets",
    "rank_from_name": "hta_fast.loading.files",
    "Trace": "hta_fast.trace",
    "TraceMeta": "hta_fast.trace",
    "TraceSet": "hta_fast.traceset",
    "TraceFormatError": "hta_fast.errors",
    "EventKind": "hta_fast.schema",
    "KernelClass": "hta_fast.schema",
    "open_dataset": "hta_fast.loading.dataset",
    "TraceDataset": "hta_fast.loading.dataset",
    "with_capture": "hta_fast.frame.capture_trace",
    "build_info": "hta_fast.build_info",
    "query": "hta_fast.sql",
}

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
    "open_dataset",
    "TraceDataset",
    "with_capture",
    "build_info",
    "query",
    "__version__",
]


lazy_package(__name__, PUBLIC, subpackages=True)
