"""load_dir(): one file per rank into a TraceSet (ranks loaded on threads here) or a
TraceDataset (ranks loaded and written by local processes or a Dask cluster)."""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Literal, Optional, Union, overload

from ..errors import NOT_A_TRACE, TraceFormatError
from ..trace import Trace
from ..traceset import TraceSet
from . import executors
from .dataset import TraceDataset, staged, write_dataset, write_manifest
from .files import PathLike, assign_rank, claim, trace_files


@overload
def load_dir(
    source: Union[PathLike, Iterable[PathLike]],
    *,
    max_workers: Optional[int] = None,
    skip_non_traces: bool = False,
    on_loaded: Optional[Callable[[str], object]] = None,
    executor: Optional[Literal["threads"]] = None,
    dataset: Optional[str] = None,
    partial: bool = False,
    compression: str = "zstd",
    overwrite: bool = False,
    **options: Any,
) -> TraceSet: ...


@overload
def load_dir(
    source: Union[PathLike, Iterable[PathLike]],
    *,
    max_workers: Optional[int] = None,
    skip_non_traces: bool = False,
    on_loaded: Optional[Callable[[str], object]] = None,
    executor: object,
    dataset: Optional[str] = None,
    partial: bool = False,
    compression: str = "zstd",
    overwrite: bool = False,
    **options: Any,
) -> TraceDataset: ...


def load_dir(
    source: Union[PathLike, Iterable[PathLike]],
    *,
    max_workers: Optional[int] = None,
    skip_non_traces: bool = False,
    on_loaded: Optional[Callable[[str], object]] = None,
    executor: Any = None,
    dataset: Optional[str] = None,
    partial: bool = False,
    compression: str = "zstd",
    overwrite: bool = False,
    **options: Any,
) -> Union[TraceSet, TraceDataset]:
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
    files = trace_files(source)
    remote = executor not in (None, "threads")
    if remote and executor != "processes" and not executors.is_dask(executor):
        raise ValueError(
            f'executor {executor!r}: use None, "threads", "processes", '
            '"dask", a scheduler address or a distributed.Client'
        )
    if remote:
        if dataset is None:
            raise ValueError(
                f"executor {executor!r} writes each rank to a Parquet dataset: "
                "pass dataset=PATH_OR_URL (a place every worker can reach)"
            )
        return _load_to_dataset(
            files,
            executor,
            dataset,
            partial,
            compression,
            overwrite,
            max_workers,
            on_loaded,
            options,
        )
    traces = _load_threads(files, source, max_workers, skip_non_traces, on_loaded, partial, options)
    if dataset is not None:
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
        raise FileNotFoundError(
            f"none of the {len(failures)} rank(s) loaded; the first: {failures[0].describe()}"
        )


def _load_to_dataset(
    files: list[str],
    executor: Any,
    dataset: str,
    partial: bool,
    compression: str,
    overwrite: bool,
    max_workers: Optional[int],
    on_loaded: Optional[Callable[[str], object]],
    options: dict,
) -> TraceDataset:
    options = dict(options)
    # One parser thread per rank: ranks already run in parallel.
    options["threads"] = options.get("threads", 0) or (1 if len(files) > 1 else 0)
    with staged(dataset, overwrite) as target:
        if executor == "processes":
            outcomes = executors.run_processes(
                files, target, options, compression, max_workers, on_loaded
            )
        else:
            client, owned = executors.dask_client(executor)  # fails before anything is written
            try:
                outcomes = executors.run_dask(
                    client, files, target, options, compression, on_loaded
                )
            finally:
                if owned:
                    client.close()
        failures = [o for o in outcomes if isinstance(o, executors.RankFailure)]
        summaries: dict[int, Any] = {}
        owners: dict[int, str] = {}
        for f, o in zip(files, outcomes):
            if isinstance(o, executors.RankFailure):
                continue
            claim(owners, o.rank, f)
            summaries[o.rank] = o
        _report(failures, partial, len(summaries))
        write_manifest(target, summaries)
    return TraceDataset(dataset, summaries, failed=[(f.rank, f.path, f.reason) for f in failures])


def _load_threads(
    files: list[str],
    source: Any,
    max_workers: Optional[int],
    skip_non_traces: bool,
    on_loaded: Optional[Callable[[str], object]],
    partial: bool,
    options: dict,
) -> TraceSet:
    threads_each = options.pop("threads", 0) or (1 if len(files) > 1 else 0)
    workers = max_workers or min(len(files), os.cpu_count() or 1)

    # At most as many ranks load at once as their estimated peaks fit in the memory available
    # (re-read as they finish: the ranks loaded so far hold theirs).
    budget = executors.MemoryBudget(executors.available_memory)

    def load_one(f: str) -> Union[Trace, TraceFormatError, executors.RankFailure]:
        try:
            with budget.hold(executors.load_estimate(f)):
                return executors.read_trace(f, dict(options, threads=threads_each))
        except TraceFormatError as e:
            if skip_non_traces and e.code in NOT_A_TRACE:
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
    owners: dict[int, str] = {}
    for f, t in zip(files, traces):
        t.rank = assign_rank(t.meta.rank, f, lone_file=len(files) == 1)
        claim(owners, t.rank, f)
        by_rank[t.rank] = t
    return TraceSet(by_rank)
