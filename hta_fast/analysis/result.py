"""Result: what every analysis returns. One main Arrow table, optional named side tables
(a summary next to a time series, per-kernel rows next to per-type sums), and notes that
say what the numbers cannot (no communication on this rank, a stream with no kernels)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

import pyarrow as pa


class Result:
    """An analysis result.

    table    the main pyarrow Table
    tables   named side tables ({"summary": ..., "kernels": ...}); `result["summary"]`
    notes    human-readable remarks about the result, in order
    params   the parameters the analysis ran with
    """

    def __init__(self, name: str, table: pa.Table, tables: Optional[Mapping[str, pa.Table]] = None,
                 notes: Iterable[str] = (), params: Optional[Mapping[str, Any]] = None):
        self.name = name
        self.table = table
        self.tables = dict(tables or {})
        self.notes = list(notes)
        self.params = dict(params or {})

    def __getitem__(self, key: str) -> pa.Table:
        return self.table if key == self.name else self.tables[key]

    def _pick(self, which: Optional[str]) -> pa.Table:
        return self.table if which is None else self[which]

    def to_arrow(self, which: Optional[str] = None) -> pa.Table:
        return self._pick(which)

    def to_pandas(self, which: Optional[str] = None):
        """A pandas DataFrame (pandas is imported only here)."""
        return self._pick(which).to_pandas()

    def to_polars(self, which: Optional[str] = None):
        import polars as pl
        return pl.from_arrow(self._pick(which))

    def __arrow_c_stream__(self, requested_schema=None):
        return self.table.__arrow_c_stream__(requested_schema)

    def __len__(self) -> int:
        return self.table.num_rows

    def __repr__(self) -> str:
        side = f" + {sorted(self.tables)}" if self.tables else ""
        notes = f" notes={self.notes}" if self.notes else ""
        return f"<Result {self.name}: {self.table.num_rows} rows x {self.table.num_columns} cols{side}{notes}>"
