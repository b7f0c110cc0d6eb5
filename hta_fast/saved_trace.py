"""A loaded trace's columns as Arrow IPC files plus a manifest (Trace.save writes it,
hta_fast.load reads it back with the tables memory-mapped). The cache keeps its entries in
this form; it adds the source's identity and the load options to the manifest."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ._core import __version__
from ._named_tables import TABLES
from .raw_columns import RawColumns
from .schema import SCHEMA_VERSION

MANIFEST = "manifest.json"


def _write_table(path: Path, columns: Mapping[str, np.ndarray]) -> None:
    table = pa.table({name: pa.array(values) for name, values in columns.items()})
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _read_table(path: Path) -> dict[str, np.ndarray]:
    table = ipc.open_file(pa.memory_map(str(path), "r")).read_all()
    return {
        name: table.column(name).combine_chunks().to_numpy(zero_copy_only=False)
        for name in table.column_names
    }


def write(directory: os.PathLike | str, raw: RawColumns, facts: dict[str, Any]) -> None:
    """Writes a trace's raw columns and `facts` (rank, header, json_bytes, base_time_ns, path;
    a cache entry adds source and options) to `directory` (created; an existing save there is
    replaced)."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename, so a reader never sees half a save.
    tmp = Path(tempfile.mkdtemp(prefix=".saving-", dir=directory.parent))
    try:
        for name in TABLES:
            _write_table(tmp / f"{name}.arrow", raw.tables[name])
        _write_table(tmp / "strings.arrow", {"offsets": raw.string_offsets})
        (tmp / "string_data.bin").write_bytes(raw.string_data.tobytes())
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "package_version": __version__,
            **facts,
            "stats": list(raw.stats),
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


def read_manifest(directory: os.PathLike | str) -> Optional[dict[str, Any]]:
    """The manifest of a save, or None when there is none or it is not JSON."""
    try:
        manifest = json.loads((Path(directory) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def read(directory: os.PathLike | str) -> tuple[RawColumns, dict[str, Any]]:
    """(raw columns, manifest) of a save; ValueError when it was saved with another schema."""
    directory = Path(directory)
    manifest = json.loads((directory / MANIFEST).read_text())
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"{directory}: saved with schema {manifest.get('schema_version')}, "
            f"this hta_fast reads schema {SCHEMA_VERSION}"
        )
    raw = RawColumns(
        tables={name: _read_table(directory / f"{name}.arrow") for name in TABLES},
        string_offsets=_read_table(directory / "strings.arrow")["offsets"],
        string_data=np.fromfile(directory / "string_data.bin", dtype=np.uint8),
        stats=[tuple(r) for r in manifest["stats"]],
        timings={},
    )
    return raw, manifest
