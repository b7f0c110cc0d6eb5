"""Result: what every analysis returns. One main Arrow table, optional named side tables
(a summary next to a time series, per-kernel rows next to per-type sums), and notes that
say what the numbers cannot (no communication on this rank, a stream with no kernels)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

import pyarrow as pa

from .. import interop


class Result:
    """An analysis result.

    table    the main pyarrow Table
    tables   named side tables ({"summary": ..., "kernels": ...}); `result["summary"]`
    notes    human-readable remarks about the result, in order
    params   the parameters the analysis ran with
    """

    def __init__(
        self,
        name: str,
        table: pa.Table,
        tables: Optional[Mapping[str, pa.Table]] = None,
        notes: Iterable[str] = (),
        params: Optional[Mapping[str, Any]] = None,
    ):
        self.name = name
        self.table = table
        self.tables = dict(tables or {})
        self.notes = list(notes)
        self.params = dict(params or {})

    def __getitem__(self, key: str) -> pa.Table:
        return self.table if key == self.name else self.tables[key]

    def _pick(self, which: Optional[str]) -> pa.Table:
        return self.table if which is None else self[which]

    def named_tables(self) -> dict[str, pa.Table]:
        """The main table under the result's name, and the side tables under theirs."""
        return {self.name: self.table, **self.tables}

    def to_arrow(self, which: Optional[str] = None) -> pa.Table:
        """The main table, or the side table named `which`."""
        return self._pick(which)

    def to_pandas(self, which: Optional[str] = None) -> Any:
        """A pandas DataFrame (pandas is imported only here); integer columns with nulls
        are pandas nullable integers (see hta_fast.interop.to_pandas)."""
        return interop.to_pandas(self._pick(which))

    def to_polars(self, which: Optional[str] = None) -> Any:
        """A Polars DataFrame (Polars is optional: an ImportError says how to install it)."""
        return interop.to_polars(self._pick(which))

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """The main table as an Arrow C stream (PyCapsule), for any Arrow consumer."""
        return self.table.__arrow_c_stream__(requested_schema)

    def __len__(self) -> int:
        return self.table.num_rows

    def __repr__(self) -> str:
        side = f" + {sorted(self.tables)}" if self.tables else ""
        notes = f" notes={self.notes}" if self.notes else ""
        return f"<Result {self.name}: {self.table.num_rows} rows x {self.table.num_columns} cols{side}{notes}>"
