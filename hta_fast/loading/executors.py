"""Where the ranks of a set are loaded: local threads, local processes or a Dask cluster.

The per-rank work is one function, `load_rank`, whatever the executor: read the file (a local
path or an fsspec URL, decompressed where it runs), write its tables to the dataset and return
the rank's small summary (hta_fast.loading.summary). On a Dask cluster that summary is all that travels
back, so the coordinating process holds summaries, never tables.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Optional, Union

from ..errors import ErrorCode, TraceFormatError
from ..trace import Trace
from . import loader
from .dataset import write_rank
from .files import assign_rank, filesystem, is_url, rank_from_name
from .summary import RankSummary

DASK_HINT = "pip install hta_fast[dask]"


@dataclasses.dataclass(frozen=True)
class RankFailure:
    """Why one file did not load; returned (not raised) by workers so that Dask does not retry
    a load that would fail the same way again."""

    rank: Optional[int]
    path: str
    reason: str
    offset: Optional[int] = None
    error: str = "TraceFormatError"  # the exception's class, re-raised in strict mode
    errno: Optional[int] = None  # an OSError's
    code: Optional[ErrorCode] = None  # a TraceFormatError's
    key: Optional[str] = None  # a TraceFormatError's
    recoverable: bool = False  # a TraceFormatError's

    def describe(self) -> str:
        who = f"rank {self.rank}" if self.rank is not None else "rank ?"
        at = f" at byte {self.offset}" if self.offset is not None else ""
        return f"{who}: {self.path}{at}: {self.reason}"

    def exception(self, others: int = 0) -> Exception:
        """What strict loading raises: TraceFormatError (or the OSError) naming rank and file."""
        more = f" (and {others} more rank(s) failed; partial=True loads the rest)" if others else ""
        if self.error == "TraceFormatError":
            return TraceFormatError(
                self.path,
                self.offset,
                self.reason + more,
                rank=self.rank,
                code=self.code,
                key=self.key,
                recoverable=self.recoverable,
            )
        cls = {
            "FileNotFoundError": FileNotFoundError,
            "PermissionError": PermissionError,
            "IsADirectoryError": IsADirectoryError,
        }.get(self.error, OSError)
        # errno and filename as the OSError had them; the rank goes with the reason
        who = f"rank {self.rank}: " if self.rank is not None else ""
        return cls(self.errno or 0, f"{who}{self.reason}{more}", self.path)


def failure_of(path: str, error: Exception) -> RankFailure:
    rank = rank_from_name(path)
    if isinstance(error, TraceFormatError):
        return RankFailure(
            rank,
            path,
            error.reason,
            error.offset,
            code=error.code,
            key=error.key,
            recoverable=error.recoverable,
        )
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return RankFailure(
        rank,
        path,
        reason or type(error).__name__,
        None,
        type(error).__name__,
        error.errno if isinstance(error, OSError) else None,
    )


def read_trace(path: str, options: dict[str, Any]) -> Trace:
    """Loads one rank's file: a local path, or an fsspec URL read (and decompressed) here."""
    if not is_url(path):
        return loader.load(path, **options)
    fs, inner = filesystem(path)
    try:
        with fs.open(inner, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise FileNotFoundError(2, "No such file or directory", path) from None
    trace = loader.load(data, **options)
    trace.meta = dataclasses.replace(trace.meta, path=path)
    return trace


def load_rank(
    path: str,
    dataset: str,
    options: dict[str, Any],
    lone_file: bool = False,
    compression: str = "zstd",
) -> Union[RankSummary, RankFailure]:
    """The per-rank task: load, write the rank's tables to `dataset`, return its summary."""
    try:
        trace = read_trace(path, options)
        trace.rank = assign_rank(trace.meta.rank, path, lone_file)
    except (TraceFormatError, OSError) as e:
        return failure_of(path, e)
    return write_rank(trace, dataset, compression)


def is_dask(executor: Any) -> bool:
    if isinstance(executor, str):
        return executor == "dask" or "://" in executor
    return executor is not None and type(executor).__module__.startswith("distributed")


def dask_client(executor: Any) -> tuple[Any, bool]:
    """(a distributed.Client, whether we opened it and must close it)."""
    try:
        import distributed
    except ImportError:
        raise ImportError(f"a Dask executor needs dask and distributed: {DASK_HINT}") from None
    if isinstance(executor, distributed.Client):
        return executor, False
    address = executor if executor != "dask" else os.environ.get("DASK_SCHEDULER_ADDRESS")
    if not address:
        raise ValueError(
            'executor="dask" needs DASK_SCHEDULER_ADDRESS (the scheduler\'s '
            "address) or pass a distributed.Client"
        )
    return distributed.Client(address), True


def run_dask(
    client: Any,
    files: list[str],
    dataset: str,
    options: dict[str, Any],
    compression: str,
    on_loaded: Any = None,
) -> list[Union[RankSummary, RankFailure]]:
    """Runs load_rank for every file on the cluster; summaries come back as they finish.

    A worker that dies mid-task is replaced and its tasks run again elsewhere (Dask's own
    retry of lost tasks); a rank's bad input comes back as a RankFailure, not retried."""
    import distributed

    lone = len(files) == 1
    futures = client.map(
        load_rank,
        files,
        dataset=dataset,
        options=options,
        lone_file=lone,
        compression=compression,
        pure=False,
    )
    index = {f.key: i for i, f in enumerate(futures)}
    out: list[Any] = [None] * len(files)
    for fut in distributed.as_completed(futures):
        out[index[fut.key]] = fut.result()
        fut.release()  # the summary is ours now: nothing stays on the cluster
        if on_loaded is not None:
            on_loaded(files[index[fut.key]])
    return out


def run_processes(
    files: list[str],
    dataset: str,
    options: dict[str, Any],
    compression: str,
    max_workers: Optional[int],
    on_loaded: Any = None,
) -> list[Union[RankSummary, RankFailure]]:
    """load_rank in a local process pool (one rank per process at a time)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    workers = max_workers or min(len(files), os.cpu_count() or 1)
    lone = len(files) == 1
    out: list[Any] = [None] * len(files)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {
            pool.submit(load_rank, f, dataset, options, lone, compression): i
            for i, f in enumerate(files)
        }
        for fut in as_completed(futures):
            out[futures[fut]] = fut.result()
            if on_loaded is not None:
                on_loaded(files[futures[fut]])
    return out
