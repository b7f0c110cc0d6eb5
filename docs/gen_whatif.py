"""Writes the table of what-if edits in docs/model.md (between its whatif-edits markers) from
the edits' declarations (hta_fast.model.whatif.declared.registry).

    python docs/gen_whatif.py           # rewrite the table in docs/model.md
    python docs/gen_whatif.py --check   # exit 1 when docs/model.md's table is not what this writes
"""

from __future__ import annotations

import sys
from pathlib import Path

from gen_api import write_or_check

from hta_fast.model.whatif.declared.declaration import EditDeclaration, Option
from hta_fast.model.whatif.declared.registry import EDITS, MODULE

OUT = Path(__file__).parent / "model.md"
BEGIN = "<!-- whatif-edits: begin (written by docs/gen_whatif.py) -->"
END = "<!-- whatif-edits: end -->"
# What an option's value is called where it declares no metavar.
VALUE = {
    "text": "TEXT",
    "float": "F",
    "count": "N",
    "path": "PATH",
    "file": "FILE",
    "ranks": "RANKS",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _option(option: Option) -> str:
    value = "" if option.type == "flag" else f" {option.metavar or VALUE[option.type]}"
    repeat = " (repeatable)" if option.multiple else ""
    return f"`{_cell(option.flag + value)}`{repeat}"


def _row(edit: EditDeclaration) -> str:
    options = "<br>".join(_option(o) for o in edit.options) or "(library only)"
    keywords = ", ".join(f"`{k}`" for k in edit.keywords)
    module = f"`{MODULE[edit.key]}`"
    return f"| {edit.key} | {options} | {keywords} | {_cell(edit.doc)} | {module} |"


def table() -> str:
    """The table, one row per declared edit in the registry's order."""
    lines = [
        "| edit | `hta-fast whatif` | `what_if` keywords | what it does | declared in |",
        "|---|---|---|---|---|",
    ]
    return "\n".join(lines + [_row(e) for e in EDITS])


def render(page: str) -> str:
    """The page with the table between its markers replaced."""
    head, sep, rest = page.partition(BEGIN)
    _, sep_end, tail = rest.partition(END)
    if not sep or not sep_end:
        raise SystemExit(f"{OUT}: the markers {BEGIN!r} and {END!r} are missing")
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main() -> int:
    return write_or_check(OUT, render(OUT.read_text()), "gen_whatif.py", __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
