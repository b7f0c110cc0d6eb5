"""Result: what every analysis returns. One main Arrow table, optional named side tables
(a summary next to a time series, per-kernel rows next to per-type sums), and notes that
say what the numbers cannot (no communication on this rank, a stream with no kernels);
fold_rank_notes says the notes of many ranks once, for the report and the command line."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

import pyarrow as pa

from .. import interop
from ..guards.untrusted_text import html_escaped, safe_cell, safe_lines


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
        """What a person reads in a terminal: the name, the tables with their sizes, the
        first rows of the main table, the notes."""
        lines = [f"Result {self.name}: {_size(self.table)}"]
        lines += [f"  [{name!r}]: {_size(t)}" for name, t in self.tables.items()]
        if self.table.num_rows:
            lines.append(preview_text(self.table, PREVIEW_ROWS))
        lines += [f"note: {safe_lines(n)}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The same in a notebook: the main table's first rows as HTML (escaped)."""
        side = "".join(
            f"<li><code>[{html_escaped(repr(k))}]</code>: {_size(t)}</li>"
            for k, t in self.tables.items()
        )
        notes = "".join(f"<li>{html_escaped(n)}</li>" for n in self.notes)
        return (
            f"<p><b>Result {html_escaped(self.name)}</b>: {_size(self.table)}</p>"
            + (f"<ul>{side}</ul>" if side else "")
            + preview_html(self.table, PREVIEW_ROWS)
            + (f"<p>notes:</p><ul>{notes}</ul>" if notes else "")
        )


PREVIEW_ROWS = 8


def _size(table: pa.Table) -> str:
    return f"{table.num_rows:,} rows x {table.num_columns} columns"


def _cells(table: pa.Table, rows: int) -> tuple[list[str], list[list[str]]]:
    """(headers with their units, the first `rows` rows as text), trace text escaped."""
    shown = table.slice(0, rows)
    heads = []
    for f in table.schema:
        unit = (f.metadata or {}).get(b"unit")
        heads.append(f"{f.name} ({unit.decode()})" if unit else f.name)
    cols = []
    for col in shown.columns:
        cells = []
        for v in col.to_pylist():
            text = (
                ""
                if v is None
                else f"{v:,.4g}"
                if isinstance(v, float)
                else f"{v:,}"
                if isinstance(v, int) and not isinstance(v, bool)
                else str(v)
            )
            text = safe_cell(text)
            cells.append(text if len(text) <= 40 else text[:37] + "...")
        cols.append(cells)
    return heads, [list(r) for r in zip(*cols)]


def preview_text(table: pa.Table, rows: int) -> str:
    """The table's first rows, aligned, with a line saying how many more there are."""
    heads, body = _cells(table, rows)
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(heads)]
    out = ["  ".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in body]
    if table.num_rows > rows:
        out.append(f"... {table.num_rows - rows:,} more rows")
    return "\n".join(out)


def preview_html(table: pa.Table, rows: int) -> str:
    heads, body = _cells(table, rows)
    head = "".join(f"<th>{html_escaped(h)}</th>" for h in heads)
    trs = "".join(
        "<tr>" + "".join(f"<td>{html_escaped(c)}</td>" for c in r) + "</tr>" for r in body
    )
    more = f"<p>... {table.num_rows - rows:,} more rows</p>" if table.num_rows > rows else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table>{more}"


# "rank 7: ..." or, of one step, "rank 7 step 3: ..." (what follows the rank: where, text).
_RANK_NOTE = re.compile(r"^rank (\d+)((?: step \d+| the whole trace)?: )(.*)$", re.S)
# A number standing alone in a note's text (28, 1,737,902.0, 25.0), not part of a name.
_NUMBER = re.compile(r"(?<![\w.#])\d[\d,]*(?:\.\d+)?(?!\w)")
FOLD_FROM = 4  # ranks sharing a note before it is said once for all of them
SHOWN_RANKS = 8


def fold_rank_notes(notes: list[str]) -> list[str]:
    """Notes that say the same of many ranks ("rank 7: no communication kernels ...", "rank 7
    step 3: ...") said once, naming a few of the ranks and counting the rest: on thousands of
    ranks a page or a terminal would otherwise hold a line per rank. Notes whose texts
    differ only in their numbers ("rank 0: 28 waits tied", "rank 4: 33 waits tied") are
    one note too, each number that differs given as its range over them (28–33). Order:
    each note where it first appears."""
    groups: dict[tuple[str, str], list[tuple[int, list[str]]]] = {}
    keys: list[Optional[tuple[str, str]]] = []
    for n in notes:
        m = _RANK_NOTE.match(n)
        key = None if m is None else (m.group(2), _NUMBER.sub("\0", m.group(3)))
        if m is not None and key is not None:
            groups.setdefault(key, []).append((int(m.group(1)), _NUMBER.findall(m.group(3))))
        keys.append(key)
    out: list[str] = []
    said: set[tuple[str, str]] = set()
    for n, key in zip(notes, keys):
        if key is None or len(groups[key]) < FOLD_FROM:
            out.append(n)
        elif key not in said:
            said.add(key)
            ranks = sorted({rank for rank, _ in groups[key]})
            shown = ", ".join(map(str, ranks[:SHOWN_RANKS]))
            more = f" ... and {len(ranks) - SHOWN_RANKS:,} more" if len(ranks) > SHOWN_RANKS else ""
            where, template = key
            out.append(
                f"{len(ranks):,} ranks ({shown}{more}){where}{_filled(template, groups[key])}"
            )
    return out


def _filled(template: str, found: list[tuple[int, list[str]]]) -> str:
    """The template's slots (NUL) given each the number its notes share, or the range of
    the numbers they hold there (smallest–largest, as written)."""
    parts = template.split("\0")
    out = [parts[0]]
    for i, rest in enumerate(parts[1:]):
        written = {numbers[i] for _, numbers in found}
        ordered = sorted(written, key=lambda x: float(x.replace(",", "")))
        out.append(ordered[0] if len(ordered) == 1 else f"{ordered[0]}–{ordered[-1]}")
        out.append(rest)
    return "".join(out)
