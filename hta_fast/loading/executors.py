"""Where the ranks of a set are loaded: local threads, local processes or a Dask cluster.

The per-rank work is one function, `load_rank`, whatever the executor: read the file (a local
path or an fsspec URL, decompressed where it runs), write its tables to the dataset and return
the rank's small summary (hta_fast.loading.summary). On a Dask cluster that summary is all that travels
back, so the coordinating process holds summaries, never tables.

How many ranks load at once is bounded by memory (MemoryBudget): a rank is admitted while the
estimated peaks of the ranks loading (its JSON's size x PEAK_PER_JSON_BYTE) fit in the memory
available, in this process for threads, in this machine for local processes, and in each Dask
worker against that worker's own memory limit (the gate is taken inside the task, where it
runs: see docs/scaling.md for why not Dask resources or a distributed.Semaphore).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import posixpath
import shutil
import struct
import sys
import threading
from typing import Any, Callable, Iterator, Optional, Union

from ..errors import ErrorCode, TraceFormatError
from ..trace import TABLES, Trace
from . import cache as cache_mod
from . import loader
from .dataset import part_path, write_rank
from .files import assign_rank, filesystem, is_url, rank_from_name
from .summary import SUMMARY_SCHEMAS, RankSummary

DASK_HINT = "pip install hta_fast[dask]"

# --- how many ranks load at once ------------------------------------------------------------
# A load's peak memory over the size of its JSON (uncompressed). The loader's own peak RSS is
# 0.35-0.57 of the JSON on the ten largest recorded traces and 0.60-0.63 on flux_aiter, whose
# columns alone are that much (benchmarks/RESULTS.md, `bench_load.py --real`, 2026-12-05);
# 0.65 holds the worst of them with room for the Parquet table a worker encodes after it.
PEAK_PER_JSON_BYTE = 0.65
# A fixed budget in bytes per process (per Dask worker) instead of the memory measured.
BUDGET_ENV = "HTA_FAST_MEMORY_BUDGET"
# A gzip file's trailer says its size mod 2**32; JSON traces inflate 5-15x (the generated
# ones ~13x), so where the trailer wrapped the estimate is the candidate nearest this ratio.
_TYPICAL_GZIP_RATIO = 10


def json_size(path: str) -> int:
    """Bytes of JSON that `path` holds: its size; for .json.gz the gzip trailer's ISIZE (the
    last member's size mod 2**32, so an estimate: past 4 GiB the candidate nearest a typical
    ratio); for .json.zst the frame's content size where the writer put it there, else an
    estimate at that typical ratio."""
    fs, inner = filesystem(path)
    opener = open if fs is None else fs.open
    with opener(inner, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if path.endswith(".gz") and size >= 18:
            fh.seek(size - 4)
            isize = struct.unpack("<I", fh.read(4))[0]
            candidates = [isize + k * (1 << 32) for k in range(64)]
            plausible = [c for c in candidates if c >= size] or [candidates[-1]]
            return min(plausible, key=lambda c: abs(c - size * _TYPICAL_GZIP_RATIO))
        if path.endswith((".zst", ".zstd")):
            fh.seek(0)
            return _zstd_content_size(fh.read(18)) or size * _TYPICAL_GZIP_RATIO
    return size


def _zstd_content_size(head: bytes) -> Optional[int]:
    """The first frame's Frame_Content_Size (RFC 8878 3.1.1.1), None where it is not written."""
    if len(head) < 6 or head[:4] != b"\x28\xb5\x2f\xfd":
        return None
    fhd = head[4]
    fcs_flag, single = fhd >> 6, (fhd >> 5) & 1
    at = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
    width = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if not width or len(head) < at + width:
        return None
    value = int.from_bytes(head[at : at + width], "little")
    return value + 256 if width == 2 else value


def load_estimate(path: str) -> int:
    """The estimated peak memory of loading `path`: its JSON's size x PEAK_PER_JSON_BYTE (plus
    the file itself for a URL, which is read whole into memory first)."""
    try:
        peak = int(json_size(path) * PEAK_PER_JSON_BYTE)
        if is_url(path):
            fs, inner = filesystem(path)
            peak += int(fs.size(inner))
        return peak
    except OSError:
        return 0  # a missing file fails in the load, with its own message


def _meminfo_available() -> Optional[int]:
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:  # not Linux
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def available_memory() -> Optional[int]:
    """Bytes the loads of this process may use now: HTA_FAST_MEMORY_BUDGET where set, else the
    machine's available memory (MemAvailable), None where it cannot be read (no bound)."""
    fixed = os.environ.get(BUDGET_ENV)
    if fixed:
        return int(float(fixed))
    return _meminfo_available()


def _releasing(budget: MemoryBudget, need: int) -> Callable[[Any], None]:
    """A done-callback that gives `need` back to the budget (a lambda's default argument
    would do it, but its type cannot be inferred)."""
    return lambda _: budget.release(need)


class MemoryBudget:
    """Admits loads while their estimated peaks fit in the memory available.

    A load waits until the estimates of the loads in flight plus its own fit in
    `available()`, re-read as loads finish and every half second while one waits (memory
    comes free without a load finishing, too). Memory measured live already lost part of
    what the loads in flight took, so counting their whole estimates again errs on the safe
    side. A load starts whenever none is in flight: one rank too big for the budget runs
    alone, rather than never."""

    def __init__(self, available: Callable[[], Optional[int]]):
        self._available = available
        self._cond = threading.Condition()
        self._held = 0
        self.in_flight = 0
        self.most_in_flight = 0  # for tests and benchmarks: the bound as it was met

    def acquire(self, nbytes: int) -> None:
        with self._cond:
            while self.in_flight and not self._fits(nbytes):
                self._cond.wait(0.5)
            self._held += nbytes
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)

    def release(self, nbytes: int) -> None:
        with self._cond:
            self._held -= nbytes
            self.in_flight -= 1
            self._cond.notify_all()

    @contextlib.contextmanager
    def hold(self, nbytes: int) -> Iterator[None]:
        self.acquire(nbytes)
        try:
            yield
        finally:
            self.release(nbytes)

    def _fits(self, nbytes: int) -> bool:
        free = self._available()
        return free is None or self._held + nbytes <= free


_WORKER_BUDGETS: dict[str, MemoryBudget] = {}
_WORKER_BUDGETS_LOCK = threading.Lock()


def _dask_worker() -> Any:
    if "distributed" not in sys.modules:  # not imported: this process is no Dask worker
        return None
    from distributed import get_worker

    try:
        return get_worker()
    except ValueError:
        return None


def worker_available(worker: Any) -> Callable[[], Optional[int]]:
    """What a Dask worker's loads may use now: the part of its memory limit below the
    fraction where Dask pauses it (distributed.worker.memory.pause, else .terminate), less
    what the worker process holds, and never more than the machine has available."""
    import dask
    import psutil  # a dependency of distributed

    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    fraction = next(
        (
            float(f)
            for f in (
                dask.config.get("distributed.worker.memory.pause", 0.8),
                dask.config.get("distributed.worker.memory.terminate", 0.95),
            )
            if f
        ),
        1.0,
    )
    process = psutil.Process()

    def available() -> Optional[int]:
        fixed = os.environ.get(BUDGET_ENV)
        if fixed:
            return int(float(fixed))
        machine = _meminfo_available()
        if not limit:
            return machine
        own = int(limit * fraction) - process.memory_info().rss
        return own if machine is None else min(own, machine)

    return available


def rank_budget() -> MemoryBudget:
    """The budget of the process running a rank's task: one per Dask worker (its threads
    share it), one per process elsewhere."""
    worker = _dask_worker()
    key = getattr(worker, "id", None) or f"process-{os.getpid()}"
    with _WORKER_BUDGETS_LOCK:
        budget = _WORKER_BUDGETS.get(key)
        if budget is None:
            budget = MemoryBudget(
                worker_available(worker) if worker is not None else available_memory
            )
            _WORKER_BUDGETS[key] = budget
    return budget


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
    """The per-rank task: load, write the rank's tables to `dataset`, return its summary;
    it waits first until its estimated peak fits in its process's budget (rank_budget)."""
    cached = bool(options.get("cache")) and not is_url(path)
    with rank_budget().hold(load_estimate(path)):
        if cached:
            kept = _copy_kept(path, dataset, options, compression)
            if kept is not None:
                return kept
        try:
            trace = read_trace(path, options)
            trace.rank = assign_rank(trace.meta.rank, path, lone_file)
        except (TraceFormatError, OSError) as e:
            return failure_of(path, e)
        summary = write_rank(trace, dataset, compression)
        if cached:
            _keep(trace, summary, path, dataset, options, compression)
        return summary


# With cache=True a rank's dataset files are kept beside its cached trace and copied from
# there while they are fresh (hta_fast.loading.cache.lookup_parts), with its summary read back
# from its summary files: the second load of a set neither parses, summarizes nor encodes.
def _parts_key(options: dict[str, Any], compression: str) -> dict[str, Any]:
    return {
        "compression": compression,
        "recover": bool(options.get("recover")),
        "kernel_classes": [list(r) for r in options.get("kernel_classes") or ()],
    }


def _keep(
    trace: Trace,
    summary: RankSummary,
    path: str,
    dataset: str,
    options: dict[str, Any],
    compression: str,
) -> None:
    fs, root = filesystem(dataset)
    names = [*TABLES, *(f"summary/{n}" for n in summary.tables())]
    cache_mod.store_parts(
        path,
        options.get("cache_dir"),
        _parts_key(options, compression),
        {name: part_path(fs, root, name, trace.rank) for name in names},
        shutil.copyfile if fs is None else fs.get_file,
        {"rank": trace.rank, "info": summary.info()},
    )


def _copy_kept(
    path: str, dataset: str, options: dict[str, Any], compression: str
) -> Optional[RankSummary]:
    import pyarrow.parquet as pq  # here, not at import: `import hta_fast` stays light

    found = cache_mod.lookup_parts(path, options.get("cache_dir"), _parts_key(options, compression))
    if found is None:
        return None
    kept, facts = found
    summaries = {f"summary/{n}": n for n in SUMMARY_SCHEMAS}
    if set(kept) != {*TABLES, *summaries} or "rank" not in facts:
        return None
    fs, root = filesystem(dataset)
    rank = int(facts["rank"])
    for name, src in kept.items():
        dst = part_path(fs, root, name, rank)
        if fs is None:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)
        else:
            fs.makedirs(posixpath.dirname(dst), exist_ok=True)
            fs.put_file(str(src), dst)
    tables = {
        short: pq.read_table(kept[name])
        .select(SUMMARY_SCHEMAS[short].names)
        .cast(SUMMARY_SCHEMAS[short])
        for name, short in summaries.items()
    }
    return RankSummary(
        rank,
        facts["info"],
        tables["steps"],
        tables["kernels"],
        tables["collectives"],
        tables["cpu_collectives"],
    )


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
    """load_rank in a local process pool (one rank per process at a time); a rank is
    submitted once its estimated peak fits in the machine's available memory."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    workers = max_workers or min(len(files), os.cpu_count() or 1)
    lone = len(files) == 1
    out: list[Any] = [None] * len(files)
    budget = MemoryBudget(available_memory)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {}
        for i, f in enumerate(files):
            need = load_estimate(f)
            budget.acquire(need)
            fut = pool.submit(load_rank, f, dataset, options, lone, compression)
            fut.add_done_callback(_releasing(budget, need))
            futures[fut] = i
        for fut in as_completed(futures):
            out[futures[fut]] = fut.result()
            if on_loaded is not None:
                on_loaded(files[futures[fut]])
    return out
