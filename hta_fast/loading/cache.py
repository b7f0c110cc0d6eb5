"""The load cache: `load(path, cache=True)` keeps a saved trace (hta_fast.saved_trace) per
source file and options, and rebuilds it when the source, the options, the schema or the
package version change.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional, Union

import pyarrow as pa

from .. import saved_trace
from .._core import __version__
from ..schema import SCHEMA_VERSION
from ..trace import Trace, open_saved


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


def lookup(
    path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict
) -> Optional[Trace]:
    """The cached trace for `path`, or None when there is none or it is stale."""
    entry = _entry_dir(path, cache_dir, options)
    manifest = saved_trace.read_manifest(entry)
    if manifest is None:
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
    except (OSError, ValueError, pa.ArrowInvalid):
        return None


def store(
    trace: Trace, path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict
) -> None:
    saved_trace.write(
        _entry_dir(path, cache_dir, options),
        trace._raw,
        {**trace.saved_facts(), "source": _source_identity(path), "options": options},
    )
