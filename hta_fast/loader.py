"""load() and load_dir(): files or bytes in, Trace / TraceSet out."""
from __future__ import annotations

import json
import os
import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from . import _core
from .errors import TraceFormatError
from .schema import KernelClass
from .trace import Trace, TraceMeta
from .traceset import TraceSet

PathLike = Union[str, os.PathLike]
TRACE_SUFFIXES = (".json", ".json.gz", ".json.zst", ".json.zstd")


KernelClassRules = Optional[Sequence[tuple[str, Union[str, int, KernelClass]]]]


def _rules(kernel_classes: KernelClassRules) -> list[tuple[str, int]]:
    """User kernel-class rules: (regex searched in the kernel name, class)."""
    out = []
    for pattern, cls in kernel_classes or ():
        if isinstance(cls, str):
            cls = KernelClass[cls.upper()]
        re.compile(pattern)  # a bad pattern fails here, with Python's message
        out.append((pattern, int(cls)))
    return out


def _read(source: Optional[Union[bytes, bytearray, memoryview]], path: Optional[str],
          threads: int, recover: bool, chunk_size: int,
          kernel_classes: KernelClassRules) -> tuple[dict, TraceMeta]:
    try:
        if path is not None:
            raw = _core.load_file(path, threads, recover, chunk_size, _rules(kernel_classes))
        else:
            assert source is not None
            raw = _core.load_bytes(source, threads, recover, chunk_size, _rules(kernel_classes))
    except _core.FormatError as e:
        reason, offset = e.args
        raise TraceFormatError(path, offset, reason) from None
    try:
        header = json.loads(raw["header_json"])
    except ValueError as e:
        raise TraceFormatError(path, None, f"the trace header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise TraceFormatError(path, None, "the trace header is not an object")
    return raw, TraceMeta.from_header(header, path, raw["json_bytes"])


def load(source: Union[PathLike, bytes, bytearray, memoryview], *, threads: int = 0,
         recover: bool = False, cache: bool = False, cache_dir: Optional[PathLike] = None,
         kernel_classes: KernelClassRules = None, chunk_size: int = 0, rank: Optional[int] = None) -> Trace:
    """Loads one trace file (.json, .json.gz, .json.zst), the bytes of one, or a directory
    written by Trace.save.

    threads         parser threads (0 = one per core)
    recover         keep the complete events of a truncated file and skip events with
                    fields of the wrong type (both counted in Trace.stats); without it
                    such input raises TraceFormatError
    cache           reuse an Arrow copy of the loaded trace while the file is unchanged
    kernel_classes  extra (regex, class) rules for kernel classes, tried first:
                    [("^my_allreduce", "COMM")]
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw, meta = _read(source, None, threads, recover, chunk_size, kernel_classes)
        return Trace(raw, meta, rank)
    path = os.fspath(source)
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    if os.path.isdir(path):
        from . import cache as cache_mod
        if not cache_mod.is_saved(path):
            raise IsADirectoryError(f"{path} is a directory, not a trace or a saved trace "
                                    "(use load_dir for one file per rank)")
        return cache_mod.open_saved(path)
    if cache:
        from . import cache as cache_mod
        options = {"recover": recover, "kernel_classes": _rules(kernel_classes)}
        hit = cache_mod.lookup(path, cache_dir, options)
        if hit is not None:
            return hit
    raw, meta = _read(None, path, threads, recover, chunk_size, kernel_classes)
    trace = Trace(raw, meta, rank)
    if cache:
        cache_mod.store(trace, path, cache_dir, options)
    return trace


_RANK_IN_NAME = re.compile(r"(?:rank|worker|gpu|proc)[-_.]?(\d+)", re.IGNORECASE)


def rank_from_name(path: PathLike) -> Optional[int]:
    """The rank a file name states ("rank-3", "worker3", "rank_3.json"), if any."""
    m = _RANK_IN_NAME.findall(Path(path).name)
    return int(m[-1]) if m else None


def _trace_files(source: Union[PathLike, Iterable[PathLike]]) -> list[str]:
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.is_dir():
            files = sorted(str(f) for f in p.iterdir() if f.name.endswith(TRACE_SUFFIXES))
            if not files:
                raise FileNotFoundError(f"no trace files ({', '.join(TRACE_SUFFIXES)}) in {p}")
            return files
        return [str(p)]
    return [os.fspath(f) for f in source]


def load_dir(source: Union[PathLike, Iterable[PathLike]], *, max_workers: Optional[int] = None,
             skip_non_traces: bool = False, on_loaded: Optional[Callable[[str], object]] = None,
             **options: Any) -> TraceSet:
    """Loads one file per rank from a directory (or a list of files) into a TraceSet.

    The rank of each file is distributedInfo.rank, else the rank in its name, else 0 for a
    lone file. Two files claiming one rank raise ValueError naming both. With
    skip_non_traces=True, JSON files that are not Chrome traces (an execution trace beside
    the profiler's, say) are left out with a warning instead of failing the load.
    on_loaded(path) is called as each file finishes loading (from the loading thread), for
    progress bars.
    """
    files = _trace_files(source)
    threads_each = options.pop("threads", 0) or (1 if len(files) > 1 else 0)
    workers = max_workers or min(len(files), os.cpu_count() or 1)

    def load_one(f: str) -> Union[Trace, TraceFormatError]:
        try:
            return load(f, threads=threads_each, **options)
        except TraceFormatError as e:
            if skip_non_traces and e.reason.startswith("not a"):
                return e
            raise
        finally:
            if on_loaded is not None:
                on_loaded(f)

    # The core releases the GIL while it parses, so threads load ranks in parallel.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        loaded = list(pool.map(load_one, files))
    for f, t in zip(files, loaded):
        if isinstance(t, TraceFormatError):
            warnings.warn(f"{f} is left out: {t.reason}", stacklevel=2)
    kept = [t if isinstance(t, Trace) else None for t in loaded]
    files = [f for f, t in zip(files, kept) if t is not None]
    traces = [t for t in kept if t is not None]
    if not traces:
        raise FileNotFoundError(f"no Chrome trace among {len(loaded)} file(s) in {source}")
    by_rank: dict[int, Trace] = {}
    for f, t in zip(files, traces):
        rank = t.meta.rank
        if rank is None:
            rank = rank_from_name(f)
        if rank is None:
            if len(files) > 1:
                raise ValueError(f"{f}: no rank in distributedInfo or in the file name")
            rank = 0
        if rank in by_rank:
            raise ValueError(f"rank {rank} is claimed by two files: {by_rank[rank].meta.path} "
                             f"and {f}")
        t.rank = rank
        by_rank[rank] = t
    return TraceSet(by_rank)
