"""Text for a terminal: control characters from a trace (a kernel name, a file name, an error
snippet) shown as escapes, so that printing them cannot set the window title (OSC), colour
or erase the screen (CSI), or move the cursor.

Escaped: C0 controls (but newline and tab where they lay out lines), DEL and the C1 controls
(U+0080-U+009F; some terminals take U+009B as CSI). They show as \\xNN, or as \\n, \\t, \\r.
"""

from __future__ import annotations

from typing import Optional

import click

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
_CELL = {c: _NAMED.get(chr(c), f"\\x{c:02x}") for c in _CONTROLS}
_LINES = {c: e for c, e in _CELL.items() if chr(c) not in "\n\t"}


def safe_cell(text: str) -> str:
    """One table cell or one-line value: every control character escaped, newline too."""
    return text.translate(_CELL)


def safe_lines(text: str) -> str:
    """Lines of text: control characters escaped, newlines and tabs kept."""
    return text.translate(_LINES)


def echo(text: Optional[str] = None, err: bool = False) -> None:
    """click.echo of text that may hold trace text."""
    click.echo(None if text is None else safe_lines(text), err=err)
