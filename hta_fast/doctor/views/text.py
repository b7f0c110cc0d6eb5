"""How the doctor writes numbers for people: long lists, evidence values (durations:
frame.fields.duration_text)."""

from __future__ import annotations

from typing import Any, Sequence, Union

Number = Union[int, float, str, None]

# How many items of a long list of ranks or steps the text shows.
LIST_LIMIT = 8


def short_list(xs: Sequence[Any], limit: int = LIST_LIMIT) -> str:
    """The first `limit` items, then how many more: "0, 1, 2 ... and 1,021 more". Text
    output on a thousand ranks stays a line; JSON output keeps every item."""
    shown = ", ".join(str(x) for x in xs[:limit])
    return shown + (f" ... and {len(xs) - limit:,} more" if len(xs) > limit else "")
