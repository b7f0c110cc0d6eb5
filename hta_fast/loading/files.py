"""Which files make a set of traces, and which rank each file is: the one place that lists
trace files (a folder, a list, an fsspec URL) and assigns ranks, for load_dir, the
executors and the command line."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any, Iterable, Optional, Union

PathLike = Union[str, os.PathLike]
# JSON (Kineto's Chrome trace format) and Perfetto's protobuf traces; the core tells them
# apart by content, so a name only decides which files of a folder are traces.
TRACE_SUFFIXES = (
    ".json",
    ".json.gz",
    ".json.zst",
    ".json.zstd",
    ".pftrace",
    ".pftrace.gz",
    ".perfetto-trace",
    ".perfetto-trace.gz",
)

_RANK_IN_NAME = re.compile(r"(?:rank|worker|gpu|proc)[-_.]?(\d+)", re.IGNORECASE)


def rank_from_name(path: PathLike) -> Optional[int]:
    """The rank a file name states ("rank-3", "worker3", "rank_3.json"), if any."""
    m = _RANK_IN_NAME.findall(Path(path).name)
    return int(m[-1]) if m else None


def assign_rank(header_rank: Optional[int], path: str, lone_file: bool) -> int:
    """distributedInfo.rank, else the rank in the file name, else 0 for a lone file.

    A file without either among several is no fault of the file (a single-GPU trace has no
    rank): the set is what is wrong, most often a folder of separate runs. The ValueError
    says so and what to pass instead."""
    rank = header_rank if header_rank is not None else rank_from_name(path)
    if rank is None:
        if not lone_file:
            raise ValueError(
                f"{path}: no rank in distributedInfo or in the file name, and it is loaded "
                "with other trace files as one rank of a set: the files may be separate runs "
                "(single-GPU traces have no rank) or files without their ranks. Pass one "
                "file at a time, or name each file of one run with its rank (rank-0.json, "
                "rank-1.json, ...)"
            )
        rank = 0
    return rank


def claim(owners: dict[int, str], rank: int, path: str) -> None:
    """Records that `path` is `rank`; a rank claimed by two files is bad input."""
    if rank in owners:
        raise ValueError(
            f"rank {rank} is claimed by two files: {owners[rank]} and {path}. Files of one "
            "run each hold another rank: these may be separate runs (each a single-GPU trace "
            "says rank 0, or none); pass one file at a time, or one run's folder"
        )
    owners[rank] = path


def is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def filesystem(path: str) -> tuple[Any, str]:
    """(fsspec filesystem or None for a local path, the path inside it)."""
    path = os.fspath(path)
    if path.startswith("file://"):
        path = path[len("file://") :]
    if not is_url(path):
        return None, path
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            f"{path}: a URL needs fsspec (pip install fsspec, plus the "
            "filesystem's own package, s3fs for s3://)"
        ) from None
    fs, root = fsspec.core.url_to_fs(path)
    return fs, root


def trace_files(source: Union[PathLike, Iterable[PathLike]], must_exist: bool = False) -> list[str]:
    """The trace files of a folder, a file, a list of files and folders, or an fsspec URL of
    a folder, in order, each once. A folder without trace files is an error; a missing
    file is one only with must_exist (else loading it reports it, rank by rank)."""
    if isinstance(source, str) and is_url(source):
        return _url_trace_files(source)
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            inside = sorted(
                str(f) for f in path.iterdir() if f.is_file() and f.name.endswith(TRACE_SUFFIXES)
            )
            if not inside:
                raise FileNotFoundError(
                    f"{p}: no trace files ({', '.join(TRACE_SUFFIXES)}) in this folder"
                )
            files.extend(inside)
        elif must_exist and not path.exists():
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(p))
        else:
            files.append(os.fspath(p))
    return list(dict.fromkeys(files))


def _url_trace_files(url: str) -> list[str]:
    """The trace files in a folder given by fsspec URL (or the one file it names)."""
    fs, inner = filesystem(url)
    if not fs.isdir(inner):
        return [url]
    protocol = url.split("://", 1)[0]
    # ls gives paths inside the filesystem ("bucket/key"): put the protocol back
    files = sorted(
        f"{protocol}://{p.split('://', 1)[-1].lstrip('/')}"
        for p in fs.ls(inner, detail=False)
        if p.endswith(TRACE_SUFFIXES)
    )
    if not files:
        raise FileNotFoundError(f"no trace files ({', '.join(TRACE_SUFFIXES)}) in {url}")
    return files
