"""Trace text is untrusted: names of kernels, ops, files and annotations come from whoever
wrote the trace. The one place that says how such text is made inert where it reaches
people: a terminal (control characters shown as escapes, so printing cannot set the window
title with OSC, colour or erase the screen with CSI, or move the cursor) and a plotly figure
(tags and entities escaped, so a label cannot become a live link or restyle the page).
Spreadsheet cells are neutralised where CSV is written (cli/output.py).

Terminal escapes cover the C0 controls (but newline and tab where they lay out lines), DEL
and the C1 controls (U+0080-U+009F; some terminals take U+009B as CSI); they show as \\xNN,
or as \\n, \\t, \\r.
"""

from __future__ import annotations

from typing import Any

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
_CELL = {c: _NAMED.get(chr(c), f"\\x{c:02x}") for c in _CONTROLS}
_LINES = {c: e for c, e in _CELL.items() if chr(c) not in "\n\t"}


def safe_cell(text: str) -> str:
    """One table cell or one-line value for a terminal: every control character escaped,
    newline too."""
    return text.translate(_CELL)


def safe_lines(text: str) -> str:
    """Lines of text for a terminal: control characters escaped, newlines and tabs kept."""
    return text.translate(_LINES)


def html_escaped(text: str, quote: bool = True) -> str:
    """Text for HTML: & < > (with quote, " and ' too) as entities, as html.escape does;
    spelled out here because the html module brings its entity table (~1 ms), and every
    command that prints a Result imports this module."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;").replace("'", "&#x27;") if quote else text


def plotly_text(text: Any) -> Any:
    """A string as plotly.js shows it literally (its tags and entities escaped: plotly
    decodes &lt; &gt; &amp; back to the characters); anything else unchanged."""
    return html_escaped(text, quote=False) if isinstance(text, str) else text
