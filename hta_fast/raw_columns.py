"""What a Trace is built over: one trace's columns as numpy arrays with their sentinels, the
string pool, and what the loader counted.

A load gets these fields from the core's LoadedTrace (`RawColumns.of`), a save reads them
back from its files (hta_fast.saved_trace), so a Trace reads both the same way."""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from ._core import STRING_ID_BASE, LoadedTrace

# (name, severity, description, count, [(byte offset, snippet), ...]), as the core lists them.
LoadStat = tuple[str, str, str, int, Sequence[Sequence]]


@dataclasses.dataclass(frozen=True)
class RawColumns:
    tables: Mapping[str, Mapping[str, np.ndarray]]  # table -> column -> values (sentinels)
    string_offsets: np.ndarray  # int64 large_string offsets of the pool
    string_data: np.ndarray  # uint8 bytes of the pool
    stats: Sequence[LoadStat]
    timings: Mapping[str, float]  # seconds per load stage; empty for a save
    # pid/tid/flow id values that are names: string_id_base - (string index), each in
    # [string_id_floor, string_id_base]; no integer id of the trace lies there
    string_id_base: int = STRING_ID_BASE
    string_id_floor: int = STRING_ID_BASE + 1

    @staticmethod
    def of(loaded: LoadedTrace) -> "RawColumns":
        """The columns of one load (the arrays are shared, not copied)."""
        return RawColumns(
            loaded.tables,
            loaded.string_offsets,
            loaded.string_data,
            loaded.stats,
            loaded.timings,
            loaded.string_id_base,
            loaded.string_id_floor,
        )
