"""The load cache: `load(path, cache=True)` keeps a saved trace (hta_fast.saved_trace) per
source file and options, and rebuilds it when the source, the options, the schema or the
package version change, or when the entry is found damaged.

Entries live in HTA_FAST_CACHE_DIR, else $XDG_CACHE_HOME/hta_fast, else ~/.cache/hta_fast.
Processes may fill the cache at once: each writes its entry beside the final one and swaps it
in (saved_trace.write), so a reader sees a whole entry or none; the last writer wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
import zlib
from pathlib import Path
from typing import Any, Optional, Union

from .. import saved_trace
from .._core import __version__
from ..guards import atomic_folder
from ..schema import SCHEMA_VERSION
from ..trace import Trace, open_saved

# The source's first and last MiB are checksummed: a file rewritten in place with its size
# and mtime kept (a copy with `cp -p`, a tool that restores mtime) is still seen as changed,
# for the cost of reading 2 MiB however big the trace. CRC-32 (about 0.2 ms a MiB, five times
# quicker than blake2b) is enough: this finds accidents, ctime and inode back it, and whoever
# can write the trace can change what it says anyway.
_PROBE_BYTES = 1 << 20


def default_cache_dir() -> Path:
    env = os.environ.get("HTA_FAST_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hta_fast"


def _source_identity(path: str) -> dict[str, Any]:
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        head = zlib.crc32(fh.read(_PROBE_BYTES))
        tail = 0
        if st.st_size > _PROBE_BYTES:
            fh.seek(max(_PROBE_BYTES, st.st_size - _PROBE_BYTES))
            tail = zlib.crc32(fh.read(_PROBE_BYTES))
    return {
        "path": os.path.abspath(path),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        # Changed by any write, and not settable by the writer (os.utime sets it to now).
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        "head_tail_crc32": [head, tail],
    }


def _entry_dir(path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict) -> Path:
    key = json.dumps([os.path.abspath(path), options], sort_keys=True).encode()
    return Path(cache_dir or default_cache_dir()) / hashlib.sha1(key).hexdigest()[:20]


def lookup(
    path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict
) -> Optional[Trace]:
    """The cached trace for `path`, or None when there is none, it is stale or it is damaged
    (then with a warning: store() rebuilds it)."""
    entry = _entry_dir(path, cache_dir, options)
    if not entry.is_dir():
        return None
    manifest = saved_trace.read_manifest(entry)
    if manifest is None:
        _damaged(entry, path, "its manifest cannot be read")
        return None
    fresh = (
        manifest.get("schema_version") == SCHEMA_VERSION
        and manifest.get("package_version") == __version__
        and manifest.get("source") == _source_identity(path)
        and manifest.get("options") == options
    )
    if not fresh:
        return None
    try:
        return open_saved(entry)
    except Exception as e:  # noqa: BLE001 - whatever is wrong with an entry, the load goes on
        _damaged(entry, path, f"{type(e).__name__}: {e}")
        return None


def _damaged(entry: Path, path: str, why: str) -> None:
    warnings.warn(
        f"hta_fast cache entry {entry} for {path} is damaged ({why}); rebuilding it",
        stacklevel=4,
    )


def store(
    trace: Trace, path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict
) -> None:
    """Writes (or replaces) the entry; a cache that cannot be written only warns: the trace
    is loaded all the same."""
    try:
        saved_trace.write(
            _entry_dir(path, cache_dir, options),
            trace._raw,
            {**trace.saved_facts(), "source": _source_identity(path), "options": options},
            owned=True,  # the cache names its entries: whatever is at one is an entry
        )
    except OSError as e:
        warnings.warn(f"hta_fast cache: could not keep {path} ({e})", stacklevel=3)


# --- a rank's dataset files, kept beside the trace ---------------------------------------------
# A worker's second load of a file (load_dir to a dataset with cache=True) reads the trace from
# its entry in milliseconds, but encoding its tables to Parquet again costs more than the parse
# did (0.25 s against 0.16 for a 50 MB .json.gz): so the rank's files are kept too, per
# compression, and copied into the next dataset. Fresh on the same terms as the trace's entry.
PARTS_MANIFEST = "parts.json"


def _parts_dir(path: str, cache_dir: Optional[Union[str, os.PathLike]], key: dict) -> Path:
    return _entry_dir(path, cache_dir, {"dataset_parts": key})


def _parts_facts(path: str, key: dict) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "package_version": __version__,
        "source": _source_identity(path),
        "key": key,
    }


def lookup_parts(
    path: str, cache_dir: Optional[Union[str, os.PathLike]], key: dict
) -> Optional[tuple[dict[str, Path], dict[str, Any]]]:
    """The kept dataset files of `path` (a table's name, as write_rank names it, to its file)
    and the facts kept with them, or None when there are none or they are stale."""
    entry = _parts_dir(path, cache_dir, key)
    try:
        manifest = json.loads((entry / PARTS_MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if {k: manifest.get(k) for k in ("schema_version", "package_version", "source", "key")} != (
        _parts_facts(path, key)
    ):
        return None
    files = {name: entry / f"{i}.parquet" for i, name in enumerate(manifest["tables"])}
    if not all(f.is_file() for f in files.values()):
        return None
    return files, manifest.get("facts", {})


def store_parts(
    path: str,
    cache_dir: Optional[Union[str, os.PathLike]],
    key: dict,
    files: dict[str, Any],
    fetch: Any,
    facts: dict[str, Any],
) -> None:
    """Keeps a rank's dataset files (table name -> where it was written; fetch(src, dst)
    copies one here) and JSON-able facts about them; a cache that cannot be written only
    warns."""
    entry = _parts_dir(path, cache_dir, key)
    tmp: Optional[Path] = None
    try:
        tmp = Path(atomic_folder.staging_beside(str(entry), "parts"))
        names = list(files)
        for i, name in enumerate(names):
            fetch(files[name], str(tmp / f"{i}.parquet"))
        manifest = {**_parts_facts(path, key), "tables": names, "facts": facts}
        (tmp / PARTS_MANIFEST).write_text(json.dumps(manifest))
        atomic_folder.install(str(tmp), str(entry.absolute()))
    except OSError as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        warnings.warn(f"hta_fast cache: could not keep {path}'s dataset files ({e})", stacklevel=3)
