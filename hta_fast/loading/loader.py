"""load() and load_dir(): files or bytes in, Trace / TraceSet out."""
from __future__ import annotations

import json
import os
import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import (TYPE_CHECKING, Any, Callable, Iterable, Literal, Optional, Sequence, Union,
                    overload)

from .. import _core
from ..errors import TraceFormatError
from ..schema import KernelClass
from ..trace import Trace, TraceMeta
from ..traceset import TraceSet

if TYPE_CHECKING:
    from .dataset import TraceDataset

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
    if isinstance(source, str) and "://" in source and not source.startswith("file://"):
        return _url_trace_files(source)
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.is_dir():
            files = sorted(str(f) for f in p.iterdir() if f.name.endswith(TRACE_SUFFIXES))
            if not files:
                raise FileNotFoundError(f"no trace files ({', '.join(TRACE_SUFFIXES)}) in {p}")
            return files
        return [str(p)]
    return [os.fspath(f) for f in source]


def _url_trace_files(url: str) -> list[str]:
    """The trace files in a folder given by fsspec URL (or the one file it names)."""
    from .dataset import filesystem
    fs, inner = filesystem(url)
    if not fs.isdir(inner):
        return [url]
    protocol = url.split("://", 1)[0]
    # ls gives paths inside the filesystem ("bucket/key"): put the protocol back
    files = sorted(f"{protocol}://{p.split('://', 1)[-1].lstrip('/')}"
                   for p in fs.ls(inner, detail=False) if p.endswith(TRACE_SUFFIXES))
    if not files:
        raise FileNotFoundError(f"no trace files ({', '.join(TRACE_SUFFIXES)}) in {url}")
    return files


@overload
def load_dir(source: Union[PathLike, Iterable[PathLike]], *, max_workers: Optional[int] = None,
             skip_non_traces: bool = False, on_loaded: Optional[Callable[[str], object]] = None,
             executor: Optional[Literal["threads"]] = None, dataset: Optional[str] = None,
             partial: bool = False, compression: str = "zstd", overwrite: bool = False,
             **options: Any) -> TraceSet: ...


@overload
def load_dir(source: Union[PathLike, Iterable[PathLike]], *, max_workers: Optional[int] = None,
             skip_non_traces: bool = False, on_loaded: Optional[Callable[[str], object]] = None,
             executor: object, dataset: Optional[str] = None,
             partial: bool = False, compression: str = "zstd", overwrite: bool = False,
             **options: Any) -> "TraceDataset": ...


def load_dir(source: Union[PathLike, Iterable[PathLike]], *, max_workers: Optional[int] = None,
             skip_non_traces: bool = False, on_loaded: Optional[Callable[[str], object]] = None,
             executor: Any = None, dataset: Optional[str] = None, partial: bool = False,
             compression: str = "zstd", overwrite: bool = False,
             **options: Any) -> Union[TraceSet, "TraceDataset"]:
    """Loads one file per rank from a directory (or a list of files, or an fsspec URL of a
    folder) into a TraceSet.

    The rank of each file is distributedInfo.rank, else the rank in its name, else 0 for a
    lone file. Two files claiming one rank raise ValueError naming both. With
    skip_non_traces=True, JSON files that are not Chrome traces (an execution trace beside
    the profiler's, say) are left out with a warning instead of failing the load.
    on_loaded(path) is called as each file finishes loading, for progress bars.

    executor   None or "threads": ranks load in this process (the parse holds no GIL) and
               a TraceSet comes back. "processes": a local process pool; "dask", a scheduler
               address or a distributed.Client: a Dask cluster ("dask" reads the address from
               DASK_SCHEDULER_ADDRESS). These two write each rank's tables to `dataset` where
               they load it and return a TraceDataset (hta_fast.loading.dataset) holding only the
               ranks' summaries; tables are read back on demand.
    dataset    path or fsspec URL of the Parquet dataset to write (every worker must reach
               it); required with "processes" and Dask, optional with threads.
    partial    a rank that fails to load (truncated, missing, not a trace) is left out with
               a warning naming its rank and file instead of failing the whole load; the
               failures are listed in the result's `failed` (TraceDataset) or in the warning.
    """
    from . import executors
    files = _trace_files(source)
    remote = executor not in (None, "threads")
    if remote and executor != "processes" and not executors.is_dask(executor):
        raise ValueError(f"executor {executor!r}: use None, \"threads\", \"processes\", "
                         "\"dask\", a scheduler address or a distributed.Client")
    if remote:
        if dataset is None:
            raise ValueError(f"executor {executor!r} writes each rank to a Parquet dataset: "
                             "pass dataset=PATH_OR_URL (a place every worker can reach)")
        return _load_to_dataset(files, executor, dataset, partial, compression, overwrite,
                                max_workers, on_loaded, options)
    traces = _load_threads(files, source, max_workers, skip_non_traces, on_loaded, partial,
                           options)
    if dataset is not None:
        from .dataset import write_dataset
        write_dataset(traces, dataset, compression, overwrite)
    return traces


def _report(failures: list, partial: bool, loaded: int) -> None:
    if not failures:
        return
    if not partial:
        raise failures[0].exception(len(failures) - 1)
    for f in failures:
        warnings.warn(f"{f.describe()} (left out)", stacklevel=3)
    if not loaded:
        raise FileNotFoundError(f"none of the {len(failures)} rank(s) loaded; the first: "
                                f"{failures[0].describe()}")


def _load_to_dataset(files: list[str], executor: Any, dataset: str, partial: bool,
                     compression: str, overwrite: bool, max_workers: Optional[int],
                     on_loaded: Optional[Callable[[str], object]], options: dict) -> "TraceDataset":
    from . import executors
    from .dataset import TraceDataset, prepare, write_manifest
    options = dict(options)
    # One parser thread per rank: ranks already run in parallel.
    options["threads"] = options.get("threads", 0) or (1 if len(files) > 1 else 0)
    if executor == "processes":
        prepare(dataset, overwrite)
        outcomes = executors.run_processes(files, dataset, options, compression, max_workers,
                                           on_loaded)
    else:
        client, owned = executors.dask_client(executor)  # fails before anything is written
        try:
            prepare(dataset, overwrite)
            outcomes = executors.run_dask(client, files, dataset, options, compression,
                                          on_loaded)
        finally:
            if owned:
                client.close()
    failures = [o for o in outcomes if isinstance(o, executors.RankFailure)]
    summaries: dict[int, Any] = {}
    for f, o in zip(files, outcomes):
        if isinstance(o, executors.RankFailure):
            continue
        if o.rank in summaries:
            raise ValueError(f"rank {o.rank} is claimed by two files: "
                             f"{summaries[o.rank].source} and {f}")
        summaries[o.rank] = o
    _report(failures, partial, len(summaries))
    write_manifest(dataset, summaries)
    return TraceDataset(dataset, summaries,
                        failed=[(f.rank, f.path, f.reason) for f in failures])


def _load_threads(files: list[str], source: Any, max_workers: Optional[int],
                  skip_non_traces: bool, on_loaded: Optional[Callable[[str], object]],
                  partial: bool, options: dict) -> TraceSet:
    from . import executors
    threads_each = options.pop("threads", 0) or (1 if len(files) > 1 else 0)
    workers = max_workers or min(len(files), os.cpu_count() or 1)

    def load_one(f: str) -> Union[Trace, TraceFormatError, "executors.RankFailure"]:
        try:
            return executors.read_trace(f, dict(options, threads=threads_each))
        except TraceFormatError as e:
            if skip_non_traces and e.reason.startswith("not a"):
                return e
            return executors.failure_of(f, e)
        except OSError as e:
            return executors.failure_of(f, e)
        finally:
            if on_loaded is not None:
                on_loaded(f)

    # The core releases the GIL while it parses, so threads load ranks in parallel.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        loaded = list(pool.map(load_one, files))
    for f, t in zip(files, loaded):
        if isinstance(t, TraceFormatError):
            warnings.warn(f"{f} is left out: {t.reason}", stacklevel=3)
    failures = [t for t in loaded if isinstance(t, executors.RankFailure)]
    _report(failures, partial, sum(isinstance(t, Trace) for t in loaded))
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
