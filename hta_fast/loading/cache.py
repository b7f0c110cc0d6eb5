"""Saved traces: Arrow IPC files of the raw columns plus a manifest.

`Trace.save(dir)` writes one; `load(dir)` reads one back (memory-mapped, no parsing);
`load(path, cache=True)` keeps one per source file and rebuilds it when the source, the
options, the schema or the package version change.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from .. import __version__
from ..schema import SCHEMA_VERSION
from ..trace import TABLES, Trace, TraceMeta

MANIFEST = "manifest.json"


def default_cache_dir() -> Path:
    env = os.environ.get("HTA_FAST_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hta_fast"


def _source_identity(path: str) -> dict[str, Any]:
    st = os.stat(path)
    return {"path": os.path.abspath(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _entry_dir(path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict) -> Path:
    key = json.dumps([os.path.abspath(path), options], sort_keys=True).encode()
    return Path(cache_dir or default_cache_dir()) / hashlib.sha1(key).hexdigest()[:20]


def _write_table(path: Path, columns: dict[str, np.ndarray]) -> None:
    table = pa.table({name: pa.array(values) for name, values in columns.items()})
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _read_table(path: Path) -> dict[str, np.ndarray]:
    table = ipc.open_file(pa.memory_map(str(path), "r")).read_all()
    return {name: table.column(name).combine_chunks().to_numpy(zero_copy_only=False)
            for name in table.column_names}


def save(trace: Trace, directory: os.PathLike | str, source: Optional[dict] = None,
         options: Optional[dict] = None) -> None:
    """Writes `trace` to `directory` (created; an existing save there is replaced)."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename, so a reader never sees half a save.
    tmp = Path(tempfile.mkdtemp(prefix=".saving-", dir=directory.parent))
    try:
        raw = trace._raw
        for name in TABLES:
            _write_table(tmp / f"{name}.arrow", raw["tables"][name])
        _write_table(tmp / "strings.arrow", {"offsets": raw["string_offsets"]})
        (tmp / "string_data.bin").write_bytes(raw["string_data"].tobytes())
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "package_version": __version__,
            "source": source,
            "options": options,
            "rank": trace.rank,
            "header": trace.meta.header,
            "json_bytes": trace.meta.json_bytes,
            "path": trace.meta.path,
            "stats": raw["stats"],
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest))
        if directory.exists():
            shutil.rmtree(directory)
        tmp.rename(directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def is_saved(directory: os.PathLike | str) -> bool:
    return (Path(directory) / MANIFEST).is_file()


def open_saved(directory: os.PathLike | str) -> Trace:
    """Reads a trace written by `save` (tables memory-mapped)."""
    directory = Path(directory)
    manifest = json.loads((directory / MANIFEST).read_text())
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{directory}: saved with schema {manifest.get('schema_version')}, "
                         f"this hta_fast reads schema {SCHEMA_VERSION}")
    raw = {
        "tables": {name: _read_table(directory / f"{name}.arrow") for name in TABLES},
        "string_offsets": _read_table(directory / "strings.arrow")["offsets"],
        "string_data": np.fromfile(directory / "string_data.bin", dtype=np.uint8),
        "stats": [tuple(r) for r in manifest["stats"]],
        "json_bytes": manifest["json_bytes"],
        "timings": {},
    }
    meta = TraceMeta.from_header(manifest["header"], manifest["path"], manifest["json_bytes"])
    return Trace(raw, meta, manifest.get("rank"))


def lookup(path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict) -> Optional[Trace]:
    """The cached trace for `path`, or None when there is none or it is stale."""
    entry = _entry_dir(path, cache_dir, options)
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    fresh = (manifest.get("schema_version") == SCHEMA_VERSION
             and manifest.get("package_version") == __version__
             and manifest.get("source") == _source_identity(path)
             and manifest.get("options") == options)
    if not fresh:
        return None
    try:
        return open_saved(entry)
    except (OSError, ValueError, pa.ArrowInvalid):
        return None


def store(trace: Trace, path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict) -> None:
    save(trace, _entry_dir(path, cache_dir, options), source=_source_identity(path),
         options=options)
