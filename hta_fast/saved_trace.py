"""A loaded trace's columns as Arrow IPC files plus a manifest (Trace.save writes it,
hta_fast.load reads it back with the tables memory-mapped). The cache keeps its entries in
this form; it adds the source's identity and the load options to the manifest.

A save is written beside its folder and swapped in (hta_fast.guards.atomic_folder): a reader never
sees half of one. It replaces only a folder that is a save already (its manifest names
FORMAT), an empty one, or one the caller owns (the cache's entries)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ._arrow import array_of, as_numpy
from ._core import __version__
from ._named_tables import TABLES
from .guards import atomic_folder
from .raw_columns import RawColumns
from .schema import SCHEMA_VERSION

MANIFEST = "manifest.json"
FORMAT = "hta_fast.saved_trace"
# Every file of a save, and nothing else.
FILES = frozenset(
    {*(f"{name}.arrow" for name in TABLES), "strings.arrow", "string_data.bin", MANIFEST}
)


def _write_table(path: Path, columns: Mapping[str, np.ndarray]) -> None:
    table = pa.table({name: array_of(values) for name, values in columns.items()})
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _read_table(path: Path) -> dict[str, np.ndarray]:
    table = ipc.open_file(pa.memory_map(str(path), "r")).read_all()
    return {name: as_numpy(table.column(name).combine_chunks()) for name in table.column_names}


def write(
    directory: os.PathLike | str,
    raw: RawColumns,
    facts: dict[str, Any],
    *,
    owned: bool = False,
) -> None:
    """Writes a trace's raw columns and `facts` (rank, header, json_bytes, base_time_ns, path;
    a cache entry adds source and options) to `directory` (created). A save already there is
    replaced; anything else is, only when the caller owns the folder (`owned`), else
    FileExistsError."""
    directory = Path(directory)
    if not owned and directory.is_dir() and any(directory.iterdir()) and not is_ours(directory):
        raise FileExistsError(
            f"{directory} exists and is not a trace saved by hta_fast (no {MANIFEST} naming "
            f"the format {FORMAT!r}, or other files in it); refusing to replace it"
        )
    tmp = Path(atomic_folder.staging_beside(str(directory), "saving"))
    try:
        for name in TABLES:
            _write_table(tmp / f"{name}.arrow", raw.tables[name])
        _write_table(tmp / "strings.arrow", {"offsets": raw.string_offsets})
        (tmp / "string_data.bin").write_bytes(raw.string_data.tobytes())
        manifest = {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "package_version": __version__,
            **facts,
            "stats": list(raw.stats),
            "string_ids": [raw.string_id_base, raw.string_id_floor],
            # Sizes, so that a file cut short (a full disk, a copy cut off) is found when read.
            "file_bytes": {p.name: p.stat().st_size for p in sorted(tmp.iterdir())},
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest))
        atomic_folder.install(str(tmp), str(os.path.abspath(directory)))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def is_ours(directory: os.PathLike | str) -> bool:
    """Whether `directory` is a save (finished: it is swapped in whole) and holds nothing else.
    A save from before manifests named FORMAT counts when its files are exactly a save's and
    its manifest has a save's keys."""
    directory = Path(directory)
    names = {p.name for p in directory.iterdir()}
    manifest = read_manifest(directory)
    if manifest is None or not names <= FILES:
        return False
    if manifest.get("format") == FORMAT:
        return True
    return (
        "format" not in manifest
        and names == FILES
        and {"schema_version", "package_version", "stats"} <= set(manifest)
    )


def is_saved(directory: os.PathLike | str) -> bool:
    return (Path(directory) / MANIFEST).is_file()


def read_manifest(directory: os.PathLike | str) -> Optional[dict[str, Any]]:
    """The manifest of a save, or None when there is none or it is not JSON."""
    try:
        manifest = json.loads((Path(directory) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def read(directory: os.PathLike | str) -> tuple[RawColumns, dict[str, Any]]:
    """(raw columns, manifest) of a save; ValueError when it was saved with another schema or
    is damaged (a file of another size than written, string offsets past the string data)."""
    directory = Path(directory)
    manifest = json.loads((directory / MANIFEST).read_text())
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"{directory}: saved with schema {manifest.get('schema_version')}, "
            f"this hta_fast reads schema {SCHEMA_VERSION}"
        )
    for name, size in (manifest.get("file_bytes") or {}).items():
        actual = (directory / name).stat().st_size
        if actual != size:
            raise ValueError(f"{directory / name}: {actual} bytes, written as {size}: damaged")
    raw = RawColumns(
        tables={name: _read_table(directory / f"{name}.arrow") for name in TABLES},
        string_offsets=_read_table(directory / "strings.arrow")["offsets"],
        string_data=np.fromfile(directory / "string_data.bin", dtype=np.uint8),
        stats=[tuple(r) for r in manifest["stats"]],
        timings={},
        string_id_base=int(manifest["string_ids"][0]),
        string_id_floor=int(manifest["string_ids"][1]),
    )
    offsets = raw.string_offsets
    if len(offsets) and (
        offsets[0] < 0 or offsets[-1] > len(raw.string_data) or np.any(np.diff(offsets) < 0)
    ):
        raise ValueError(f"{directory}: string offsets do not fit the string data: damaged")
    return raw, manifest
