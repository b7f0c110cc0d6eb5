"""SQL over traces: DuckDB over a trace's own tables and any analysis result by name.

    from hta_fast.sql import query
    top = query(trace_set, "SELECT name, sum(dur) AS ns FROM kernels GROUP BY 1 ORDER BY 2 DESC")

`catalog` says which tables a query can name (docs/query.md lists them with their columns);
`run` executes a query on a sealed connection (no files, no extensions: trace text and
the SQL itself are untrusted).
"""

from .catalog import TABLES, TableInfo, tables
from .run import query

__all__ = ["query", "tables", "TABLES", "TableInfo"]
