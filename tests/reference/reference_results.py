"""The reference tool's results on a trace, computed once and cached, for differential tests.

Runs under OUR interpreter (it never imports ``hta``): it starts
``tests/reference/run_reference.py`` with ``<repo>/.venv-ref/bin/python`` (made by
``make .venv-ref/.deps``), caches what that writes under ``<repo>/.reference-cache/<key>/`` and
reads it back as pandas objects.

    from tests.reference.reference_results import reference_results
    res = reference_results("../shared/traces/hta/trace_filter")
    res["temporal_breakdown"]            # a DataFrame, exactly as the reference returned it
    res["idle_time_breakdown"]           # a tuple (DataFrame, None)
    res["queue_length_time_series"]      # {rank: DataFrame}
    res.errors["critical_path"]          # {"type": ..., "message": ...} when the reference raised

The cache key covers each trace file's path, size and mtime, the ``--diff-with`` folder's files,
the requested analyses and the bytes of run_reference.py, so editing the script or touching a
trace recomputes. Results of the reference are made with ``PYTHONHASHSEED=0`` so that its
hash-ordered outputs (symbol ids, set iteration) are the same from run to run.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import pandas as pd

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "run_reference.py"
CACHE_DIR = REPO / ".reference-cache"
REF_PYTHON = REPO / ".venv-ref" / "bin" / "python"

PathLike = Union[str, os.PathLike]


class ReferenceUnavailable(RuntimeError):
    """The reference environment (.venv-ref) is missing."""


class ReferenceRunFailed(RuntimeError):
    """run_reference.py itself failed (not one analysis: those are recorded as errors)."""


class ReferenceResults(dict):
    """analysis name -> result, for the analyses that succeeded.

    ``errors``: name -> {"type", "message", "traceback"} for the analyses the reference raised in
    (and "load" when TraceAnalysis itself could not be built); ``skipped``: name -> reason;
    ``seconds``: name -> wall time of the reference's call; ``index``: the whole index.json;
    ``directory``: where the cached files are.
    """

    def __init__(self, index: Dict[str, Any], directory: Path) -> None:
        super().__init__()
        self.index = index
        self.directory = directory
        self.errors: Dict[str, Dict[str, Any]] = {}
        self.skipped: Dict[str, str] = {}
        self.seconds: Dict[str, float] = {}
        load = index.get("load")
        if load and load.get("status") == "error":
            self.errors["load"] = load["error"]

    def status(self, name: str) -> str:
        return self.index["analyses"][name]["status"]


def reference_python() -> Path:
    if not REF_PYTHON.exists():
        raise ReferenceUnavailable(
            f"the reference tool's environment is missing ({REF_PYTHON}); "
            "run `make .venv-ref/.deps` in the repository root to create it"
        )
    return REF_PYTHON


def _input_files(inputs: Sequence[Path]) -> List[Path]:
    files: List[Path] = []
    for p in inputs:
        if p.is_dir():
            files.extend(sorted(q for q in p.iterdir() if q.is_file()))
        else:
            files.append(p)
    return files


def _fingerprint(paths: Iterable[Path]) -> List[List[Any]]:
    out = []
    for f in paths:
        st = f.stat()
        out.append([str(f), st.st_size, st.st_mtime_ns])
    return out


def cache_key(
    inputs: Sequence[Path], analyses: Optional[Sequence[str]], diff_with: Optional[Path]
) -> str:
    h = hashlib.sha256()
    h.update(SCRIPT.read_bytes())
    h.update(
        json.dumps(
            {
                "inputs": [str(p) for p in inputs],
                "files": _fingerprint(_input_files(inputs)),
                "diff_with": str(diff_with) if diff_with else None,
                "diff_files": _fingerprint(_input_files([diff_with])) if diff_with else None,
                "analyses": sorted(analyses) if analyses else None,
            },
            sort_keys=True,
        ).encode()
    )
    return h.hexdigest()[:24]


def reference_results(
    trace_dir_or_files: Union[PathLike, Sequence[PathLike]],
    analyses: Optional[Sequence[str]] = None,
    diff_with: Optional[PathLike] = None,
    timeout: Optional[float] = None,
    refresh: bool = False,
) -> ReferenceResults:
    """The reference's results for a trace directory (or a list of trace files).

    Args:
        trace_dir_or_files: a directory (``TraceAnalysis(trace_dir=...)``) or trace files
            (``TraceAnalysis(trace_files=[...])``).
        analyses: names from ``run_reference.py --list``; all of them when None.
        diff_with: a second trace directory, for ``trace_diff``/``ops_diff``.
        timeout: seconds before the reference run is abandoned.
        refresh: recompute even when cached.
    """
    if isinstance(trace_dir_or_files, (str, os.PathLike)):
        inputs = [Path(trace_dir_or_files).resolve()]
    else:
        inputs = [Path(p).resolve() for p in trace_dir_or_files]
    if not inputs:
        raise ValueError("no trace given")
    for p in inputs:
        if not p.exists():
            raise FileNotFoundError(f"trace input {p} does not exist")
    if len(inputs) > 1 and any(p.is_dir() for p in inputs):
        raise ValueError("give one directory, or a list of files")
    diff = Path(diff_with).resolve() if diff_with is not None else None

    key = cache_key(inputs, analyses, diff)
    out = CACHE_DIR / key
    index_path = out / "index.json"
    if refresh or not _complete(index_path):
        _run(inputs, analyses, diff, out, timeout)
    return load_results(out)


def _complete(index_path: Path) -> bool:
    try:
        with open(index_path) as f:
            return bool(json.load(f).get("complete"))
    except (OSError, ValueError):
        return False


def _run(
    inputs: Sequence[Path],
    analyses: Optional[Sequence[str]],
    diff: Optional[Path],
    out: Path,
    timeout: Optional[float],
) -> None:
    python = reference_python()
    CACHE_DIR.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=CACHE_DIR, prefix=".tmp-"))
    cmd = [str(python), str(SCRIPT), "--out", str(tmp)]
    if analyses:
        cmd += ["--analyses", *analyses]
    if diff is not None:
        cmd += ["--diff-with", str(diff)]
    cmd += ["--", *(str(p) for p in inputs)]
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("PYTHONPATH", None)  # the reference must not see this repository's packages
    try:
        with open(tmp / "log.txt", "wb") as log:
            proc = subprocess.run(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(tmp), timeout=timeout
            )
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ReferenceRunFailed(f"the reference run timed out after {timeout}s: {cmd}") from exc
    if proc.returncode != 0 or not _complete(tmp / "index.json"):
        tail = (tmp / "log.txt").read_bytes()[-3000:].decode(errors="replace")
        shutil.rmtree(tmp, ignore_errors=True)
        raise ReferenceRunFailed(
            f"run_reference.py exited with {proc.returncode}: {' '.join(cmd)}\n{tail}"
        )
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)


def load_results(directory: PathLike) -> ReferenceResults:
    """Read a run_reference.py output directory back."""
    directory = Path(directory)
    with open(directory / "index.json") as f:
        index = json.load(f)
    res = ReferenceResults(index, directory)
    for name, rec in index["analyses"].items():
        res.seconds[name] = rec.get("seconds", 0.0)
        if rec["status"] == "ok":
            res[name] = decode(rec["result"], directory)
        elif rec["status"] == "skipped":
            res.skipped[name] = rec.get("reason", "")
        else:
            res.errors[name] = rec["error"]
    return res


def _label(x: Any) -> Any:
    return tuple(_label(v) for v in x) if isinstance(x, list) else x


def decode(desc: Dict[str, Any], directory: Path) -> Any:
    kind = desc["kind"]
    if kind == "none":
        return None
    if kind == "json":
        return desc["value"]
    if kind == "repr":
        return desc["value"]
    if kind == "list":
        return [decode(d, directory) for d in desc["items"]]
    if kind == "tuple":
        return tuple(decode(d, directory) for d in desc["items"])
    if kind == "dict":
        return {_label(k): decode(d, directory) for k, d in zip(desc["keys"], desc["items"])}
    if kind in ("dataframe", "series"):
        df = _read_frame(desc, directory)
        if kind == "series":
            s = df["__series__"]
            s.name = _label(desc["series_name"])
            s.attrs["reference_dtype"] = desc["series_dtype"]
            return s
        return df
    raise ValueError(f"unknown result kind {kind!r}")


def _read_frame(desc: Dict[str, Any], directory: Path) -> pd.DataFrame:
    path = directory / desc["file"]
    if desc["format"] == "pickle":
        with open(path, "rb") as f:
            return pickle.load(f)
    flat = pd.read_parquet(path)
    for name in desc.get("json_columns", []):
        flat[name] = flat[name].map(lambda v: None if v is None else json.loads(v))
    n_index = len(desc["index_names"])
    index_cols = [f"__index_{i}__" for i in range(n_index)]
    data = flat.drop(columns=index_cols)
    if n_index == 1:
        index = pd.Index(flat[index_cols[0]]).rename(_label(desc["index_names"][0]))
    else:
        index = pd.MultiIndex.from_frame(
            flat[index_cols], names=[_label(n) for n in desc["index_names"]]
        )
    data.index = index
    columns = [_label(c) for c in desc["columns"]]
    if desc.get("column_multiindex"):
        data.columns = pd.MultiIndex.from_tuples(
            columns, names=[_label(n) for n in desc["column_level_names"]]
        )
    else:
        data.columns = pd.Index(columns, dtype=object, name=_label(desc["column_level_names"][0]))
    data.attrs["reference_dtypes"] = dict(zip(map(str, columns), desc["dtypes"]))
    return data


def main(argv: Optional[List[str]] = None) -> int:
    """`python tests/reference/reference_results.py TRACE...` prints the status per analysis."""
    import argparse

    ap = argparse.ArgumentParser(description="Run/cache the reference's analyses on a trace.")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--analyses", nargs="+")
    ap.add_argument("--diff-with")
    ap.add_argument("--refresh", action="store_true")
    args = ap.parse_args(argv)
    inputs = args.inputs[0] if len(args.inputs) == 1 else args.inputs
    res = reference_results(inputs, args.analyses, args.diff_with, refresh=args.refresh)
    load = res.index.get("load", {})
    print(f"cache: {res.directory}")
    print(f"load: {load.get('status')} {load.get('seconds', 0):.2f}s ranks={load.get('ranks')}")
    for name, rec in res.index["analyses"].items():
        what = rec.get("error", {}).get("type", "") or rec.get("reason", "")
        print(f"{name:40s} {rec['status']:8s} {rec.get('seconds', 0):8.2f}s {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
