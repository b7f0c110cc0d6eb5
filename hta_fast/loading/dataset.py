"""A loaded TraceSet as a Parquet dataset, and that dataset opened back lazily.

Layout (hive partitioning by rank, one folder per table):

    DATASET/manifest.json
    DATASET/events/rank=0/part-0.parquet
    DATASET/kernel_args/rank=0/part-0.parquet ...
    DATASET/summary/collectives/rank=0/part-0.parquet   (the per-rank summary, hta_fast.loading.summary)
    DATASET/summary/steps/rank=0/part-0.parquet
    DATASET/summary/kernels/rank=0/part-0.parquet

Every rank has a file for every table, an empty one where the rank has no such rows, so the
schema is always there. DATASET is a local path or any fsspec URL (s3://, gs://, memory://, ...);
local paths need no fsspec. Read a table of every rank with `open_dataset(path).dataset("events")`
or any engine that knows hive partitioning (DuckDB, Spark, Polars): `rank` becomes a column.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import posixpath
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any, Iterator, Mapping, Optional

import pyarrow as pa

from .._core import __version__
from .._named_tables import NamedTables
from ..guards import atomic_folder
from ..schema import SCHEMA_VERSION
from ..trace import TABLES, Trace
from .files import filesystem
from .summary import SUMMARY_TABLES, RankSummary, split_by_rank, summarize

FORMAT = "hta_fast.parquet_dataset"
MANIFEST = "manifest.json"
# Present while a dataset is being written (removed with the manifest's writing), holding
# FORMAT: a load that failed half-way leaves a folder that overwrite=True still knows to be ours.
WRITING = "_writing"
# A file of a table, relative to the dataset: TABLE/rank=N/part-0.parquet.
_PART = re.compile(r"(?:summary/)?[a-z_]+/rank=-?[0-9]+/part-0\.parquet")


# --- where the dataset lives ---------------------------------------------------------------
def _join(fs: Any, *parts: str) -> str:
    return posixpath.join(*parts) if fs is not None else os.path.join(*parts)


# Parquet has no large_string dictionaries: the exact Arrow schema rides in the file's
# metadata and tables are cast back to it when read.
_SCHEMA_KEY = b"hta_fast:arrow_schema"


def _with_schema(table: pa.Table) -> pa.Table:
    meta = dict(table.schema.metadata or {})
    # base64: Parquet metadata values must be UTF-8 for other readers (Polars checks)
    meta[_SCHEMA_KEY] = base64.b64encode(table.schema.serialize().to_pybytes())
    return table.replace_schema_metadata(meta)


def _exact(table: pa.Table) -> pa.Table:
    meta = dict(table.schema.metadata or {})
    blob = meta.pop(_SCHEMA_KEY, None)
    if blob is None:
        return table
    schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(blob)))
    return table.select(schema.names).cast(schema)


def _write_parquet(fs: Any, path: str, table: pa.Table, compression: str) -> None:
    import pyarrow.parquet as pq  # here, not at import: `import hta_fast` stays light

    table = _with_schema(table)
    # Parquet's dictionary encoding only for the columns that are dictionaries already (the
    # strings): on timestamps, durations and ids it costs more than it saves. On a 48 MB
    # rank: 0.071 s to write and 1.4 MB written, against 0.118 s and 2.5 MB with dictionaries
    # on every column; the same table read back.
    options = {
        "compression": compression,
        "use_dictionary": [f.name for f in table.schema if pa.types.is_dictionary(f.type)],
    }
    folder = posixpath.dirname(path) if fs is not None else os.path.dirname(path)
    if fs is None:
        os.makedirs(folder, exist_ok=True)
        pq.write_table(table, path, **options)
    else:
        fs.makedirs(folder, exist_ok=True)
        with fs.open(path, "wb") as fh:
            pq.write_table(table, fh, **options)


def _read_parquet(fs: Any, path: str) -> pa.Table:
    import pyarrow.parquet as pq

    if fs is None:
        return _exact(pq.read_table(path))
    with fs.open(path, "rb") as fh:
        return _exact(pq.read_table(fh))


def part_path(fs: Any, root: str, table: str, rank: int) -> str:
    return _join(fs, root, *table.split("/"), f"rank={rank}", "part-0.parquet")


def table_of(trace: Trace, name: str) -> pa.Table:
    return trace.meta_events if name == "meta" else getattr(trace, name)


# --- writing ---------------------------------------------------------------------------------
def write_rank(
    trace: Trace, path: str, compression: str = "zstd", summary: Optional[RankSummary] = None
) -> RankSummary:
    """Writes one rank's tables and its summary under the dataset `path`; returns the summary
    (with the row count of every table)."""
    fs, root = filesystem(path)
    compression = "none" if compression in (None, "none") else compression
    summary = summary or summarize(trace)
    for name in TABLES:
        _write_parquet(
            fs, part_path(fs, root, name, trace.rank), table_of(trace, name), compression
        )
    for name, table in summary.tables().items():
        _write_parquet(fs, part_path(fs, root, f"summary/{name}", trace.rank), table, compression)
    return summary


def manifest(summaries: Mapping[int, RankSummary]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": 2,
        "hta_fast_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "partitioning": "hive: TABLE/rank=N/part-0.parquet",
        "tables": list(TABLES),
        "summary_tables": [f"summary/{t}" for t in SUMMARY_TABLES],
        "ranks": {str(r): s.info() for r, s in sorted(summaries.items())},
    }


def write_manifest(path: str, summaries: Mapping[int, RankSummary]) -> None:
    """Written last: a dataset without a manifest is one whose writing did not finish."""
    fs, root = filesystem(path)
    _write_text(fs, _join(fs, root, MANIFEST), json.dumps(manifest(summaries), indent=2))
    marker = _join(fs, root, WRITING)
    if fs is not None:
        fs.rm(marker)
    else:
        os.remove(marker)


def _exists(fs: Any, path: str) -> bool:
    return fs.exists(path) if fs is not None else os.path.exists(path)


def _names(fs: Any, root: str) -> list[str]:
    if fs is None:
        return os.listdir(root)
    return [posixpath.basename(p.rstrip("/")) for p in fs.ls(root, detail=False)]


def is_ours(path: str) -> bool:
    """Whether the folder at `path` is a dataset hta_fast wrote, finished or not, and holds
    nothing else: only then may overwrite=True remove it. Ours is a manifest or a writing
    marker naming FORMAT; a marker left empty (as hta_fast wrote it before it held FORMAT)
    counts only when every file is where a dataset puts it."""
    fs, root = filesystem(path)
    manifest = _read_json(fs, _join(fs, root, MANIFEST))
    tables = manifest.get("tables") if isinstance(manifest, dict) else None
    expected = {
        MANIFEST,
        WRITING,
        "summary",
        *TABLES,
        *(tables if isinstance(tables, list) else []),
    }
    if not set(_names(fs, root)) <= expected:
        return False  # something of someone else's is in there
    if isinstance(manifest, dict) and manifest.get("format") == FORMAT:
        return True
    marker = _join(fs, root, WRITING)
    if not _exists(fs, marker):
        return False
    text = _read_text(fs, marker, limit=len(FORMAT) + 16)
    if text.strip() == FORMAT:
        return True
    return text == "" and all(_PART.fullmatch(f) for f in _files_under(fs, root, {WRITING}))


def _read_text(fs: Any, target: str, limit: int = -1) -> str:
    if fs is None:
        with open(target, "rb") as fh:
            data = fh.read(limit)
    else:
        with fs.open(target, "rb") as fh:
            data = fh.read(limit)
    return bytes(data).decode("utf-8", errors="replace")


def _read_json(fs: Any, target: str) -> Any:
    try:
        return json.loads(_read_text(fs, target))
    except (OSError, ValueError):
        return None


def _files_under(fs: Any, root: str, skip: set[str]) -> Iterator[str]:
    """Every file below root, relative to it, with "/" between parts."""
    if fs is not None:
        prefix = root.rstrip("/") + "/"
        for p in fs.find(root):
            rel = p[len(prefix) :] if p.startswith(prefix) else p
            if rel not in skip:
                yield rel
        return
    for folder, _dirs, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(folder, f), root).replace(os.sep, "/")
            if rel not in skip:
                yield rel


def check_free(path: str, overwrite: bool = False) -> bool:
    """Raises FileExistsError unless the dataset path is free, or (with overwrite) holds a
    dataset of ours; returns whether there is one to replace."""
    fs, root = filesystem(path)
    if not (_exists(fs, root) and _names(fs, root)):
        return False
    if not overwrite:
        raise FileExistsError(f"{path} exists and is not empty (overwrite=True replaces it)")
    if not is_ours(path):
        raise FileExistsError(
            f"{path} is not a dataset written by hta_fast (no {MANIFEST} naming the format "
            f"{FORMAT!r}, or files that are not the dataset's); refusing to replace it"
        )
    return True


def prepare(path: str, overwrite: bool = False) -> None:
    """check_free, then removes the dataset it replaces and marks the path as being written:
    for an object store, which has no swap (staged)."""
    fs, root = filesystem(path)
    if check_free(path, overwrite):
        if fs is not None:
            fs.rm(root, recursive=True)
        else:
            shutil.rmtree(root)
    _write_text(fs, _join(fs, root, WRITING), FORMAT)


@contextlib.contextmanager
def staged(path: str, overwrite: bool = False) -> Iterator[str]:
    """Where to write a dataset that is to end up at `path`, put in place when the block
    ends without an error. A local dataset is written in a hidden folder beside `path` and
    swapped in when complete (hta_fast.guards.atomic_folder), so that whatever happens to the
    writers, `path` holds the old dataset or the new one (the folder is on the same
    filesystem, so Dask workers that reach `path` reach it too). An object store has no
    such swap: there the old dataset is removed first and the ranks written in place."""
    fs, root = filesystem(path)
    if fs is not None:
        prepare(path, overwrite)
        yield path
        return
    check_free(path, overwrite)
    staging = atomic_folder.staging_beside(root, "writing")
    try:
        _write_text(None, os.path.join(staging, WRITING), FORMAT)
        yield staging
        # Asked again: something may have been put at `path` while the ranks were written.
        check_free(path, overwrite)
        atomic_folder.install(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_text(fs: Any, target: str, text: str) -> None:
    if fs is None:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as fh:
            fh.write(text)
    else:
        fs.makedirs(posixpath.dirname(target), exist_ok=True)
        with fs.open(target, "w") as fh:
            fh.write(text)


def write_dataset(
    traces: Mapping[int, Trace],
    path: str,
    compression: str = "zstd",
    overwrite: bool = False,
    on_written: Any = None,
) -> "TraceDataset":
    """Writes every rank of a TraceSet (ranks in parallel: Parquet encoding releases the GIL)
    and the manifest, atomically where the filesystem allows (staged); returns the dataset
    opened back."""
    with staged(path, overwrite) as target:
        summaries: dict[int, RankSummary] = {}
        workers = max(1, min(len(traces), os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {
                r: pool.submit(write_rank, t, target, compression) for r, t in traces.items()
            }
            for r, fut in futures.items():
                summaries[r] = fut.result()
                if on_written is not None:
                    on_written(r)
        write_manifest(target, summaries)
    return TraceDataset(path, summaries)


# --- reading ---------------------------------------------------------------------------------
class RankTables(NamedTables):
    """One rank of a dataset: its tables, each read from the dataset when first asked for."""

    def __init__(self, dataset: "TraceDataset", rank: int):
        self._dataset = dataset
        self.rank = rank

    def _table(self, name: str) -> pa.Table:
        return self._dataset.read(name, self.rank)

    def to_arrow(self, table: str = "events") -> pa.Table:
        if table not in TABLES and table != "meta_events":
            raise ValueError(f"no table {table!r}; tables are {', '.join(TABLES)}")
        return self._table("meta" if table == "meta_events" else table)

    @property
    def summary(self) -> RankSummary:
        return self._dataset.summaries[self.rank]

    def __repr__(self) -> str:
        return f"<RankTables rank={self.rank} of {self._dataset.path}>"


class TraceDataset(Mapping[int, RankTables]):
    """A dataset of ranks: rank -> RankTables (read on demand), plus every rank's summary,
    which is all that cross-rank analyses (hta_fast.analysis.collectives) read.

    `failed` lists the ranks that could not be loaded when the set was loaded with
    partial=True: (rank or None, file, reason).
    """

    def __init__(
        self,
        path: str,
        summaries: Optional[Mapping[int, RankSummary]] = None,
        failed: Optional[list[tuple[Optional[int], str, str]]] = None,
    ):
        self.path = os.fspath(path)
        self._fs, self._root = filesystem(self.path)
        self._summaries = dict(sorted(summaries.items())) if summaries is not None else None
        self.failed = list(failed or [])

    @cached_property
    def manifest(self) -> dict[str, Any]:
        target = _join(self._fs, self._root, MANIFEST)
        try:
            if self._fs is None:
                with open(target) as fh:
                    data = json.load(fh)
            else:
                with self._fs.open(target, "r") as fh:
                    data = json.load(fh)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{self.path}: no {MANIFEST}; not a dataset written by "
                "hta_fast, or its writing did not finish"
            ) from None
        except ValueError as e:
            raise ValueError(f"{target}: not valid JSON ({e})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{target}: not an hta_fast dataset manifest")
        return data

    @property
    def ranks(self) -> list[int]:
        if self._summaries is not None:
            return list(self._summaries)
        return sorted(int(r) for r in self.manifest["ranks"])

    def __getitem__(self, rank: int) -> RankTables:
        if rank not in self.ranks:
            raise KeyError(rank)
        return RankTables(self, rank)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ranks)

    def __len__(self) -> int:
        return len(self.ranks)

    def read(self, table: str, rank: int) -> pa.Table:
        """One rank's table, read from the dataset now."""
        return _read_parquet(self._fs, part_path(self._fs, self._root, table, rank))

    def dataset(self, table: str = "events") -> Any:
        """A pyarrow.dataset over every rank of one table (`rank` is a partition column)."""
        import pyarrow.dataset as ds

        folder = _join(self._fs, self._root, *table.split("/"))
        return ds.dataset(folder, format="parquet", partitioning="hive", filesystem=self._fs)

    @cached_property
    def summaries(self) -> dict[int, RankSummary]:
        if self._summaries is not None:
            return self._summaries
        info = {int(r): v for r, v in self.manifest["ranks"].items()}
        # a dataset written before a summary table existed has none (split_by_rank: empty)
        written = self.manifest.get("summary_tables", [f"summary/{t}" for t in SUMMARY_TABLES])
        tables = {
            name: self.dataset(f"summary/{name}").to_table()
            for name in SUMMARY_TABLES
            if f"summary/{name}" in written
        }
        return split_by_rank(info, tables)

    def __repr__(self) -> str:
        return f"<TraceDataset {self.path} ranks={len(self)}>"


def open_dataset(path: str) -> TraceDataset:
    """Opens a dataset written by write_dataset, load_dir(dataset=...) or `hta-fast convert`.
    Nothing but the manifest is read until a table or the summaries are asked for."""
    ds = TraceDataset(path)
    ds.manifest  # noqa: B018 - fails here, with the path, when it is not a dataset
    return ds
