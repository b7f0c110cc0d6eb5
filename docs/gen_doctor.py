"""Writes docs/doctor.md's tables of causes, the causes and the edits the model replays, from
each cause's record (hta_fast.doctor.causes.REGISTRY, Cause.doc), in the registry's order.

    python docs/gen_doctor.py           # rewrite those tables in docs/doctor.md
    python docs/gen_doctor.py --check   # exit 1 when docs/doctor.md is not what this writes

Each table goes between its markers in docs/doctor.md (`<!-- NAME: ... -->` and
`<!-- end NAME -->`); the rest of the page is written by hand.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from gen_api import write_or_check

from hta_fast.doctor.causes import REGISTRY

OUT = Path(__file__).parent / "doctor.md"


def causes_table() -> str:
    """What each cause means, how its cost per step is estimated, what usually helps."""
    lines = [
        "| id | what it means | how its cost per step is estimated | what usually helps |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{c.key}` | {c.doc.means} | {c.doc.cost} | {c.doc.helps} |" for c in REGISTRY]
    return "\n".join(lines)


def edits_table() -> str:
    """The edit the model replays for each cause, or why there is none."""
    lines = ["| cause | edit replayed |", "|---|---|"]
    lines += [f"| {c.key} | {c.doc.edit} |" for c in REGISTRY]
    return "\n".join(lines)


TABLES = {"causes": causes_table, "edits": edits_table}


def render(page: str) -> str:
    """The page with each table between its markers replaced by what the records say."""
    for name, table in TABLES.items():
        marker = re.compile(rf"(<!-- {name}: [^\n]*-->\n)(.*?)(<!-- end {name} -->)", re.S)
        found = list(marker.finditer(page))
        if len(found) != 1:
            raise SystemExit(f"{OUT}: no single pair of '{name}' markers")
        at = found[0]
        page = page[: at.start(2)] + table() + "\n" + page[at.end(2) :]
    return page


def main() -> int:
    return write_or_check(OUT, render(OUT.read_text()), "gen_doctor.py", __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
