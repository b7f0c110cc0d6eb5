"""What a what-if edit declares once (hta_fast.model.whatif.declared.registry lists them): its options
on the command line, the keywords of what_if it sets, how the option values become those
keywords, a row of the docs' table of edits and, for an edit that carries no field of its
own in Edits, how it changes a rank's GPU durations.

An option is described here, not as a click object: the command line (hta_fast.cli.commands.model)
turns each Option into a click option, so the model does not depend on the command line.
An option's value that is bad input raises OptionError naming the option, which the
command line shows as click shows a bad parameter.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

if TYPE_CHECKING:
    import numpy as np

    from ....trace import Trace

# What an option's value is, on the command line: text, a number, a whole number >= 1, a
# path that exists, a file that exists, a list of ranks (3, 1,4 or 0-3), or a flag.
OPTION_TYPES = ("text", "float", "count", "path", "file", "ranks", "flag")


class OptionError(Exception):
    """A bad option value: the message and the option it is about (--scale)."""

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.message = message
        self.option = option


@dataclasses.dataclass(frozen=True)
class Option:
    """One command-line option: its flag, the name its value goes by in `build`, its help,
    metavar and type (OPTION_TYPES), whether it repeats, and its default."""

    flag: str
    dest: str
    help: str
    type: str = "text"
    metavar: Optional[str] = None
    multiple: bool = False
    default: Any = None
    show_default: bool = False

    def __post_init__(self) -> None:
        if self.type not in OPTION_TYPES:
            raise ValueError(f"Option {self.flag}: type {self.type!r} is not one of {OPTION_TYPES}")


# Per rank: (GPU event rows, ns added to each one's duration).
GpuChanges = Callable[["Trace", Mapping[str, Any]], "tuple[np.ndarray, np.ndarray]"]


@dataclasses.dataclass(frozen=True)
class EditDeclaration:
    """One what-if edit. key: its name; options: its command-line options; keywords: the
    keywords of what_if (the fields of Edits, or, for an edit without a field there, the
    keys of Edits.added) it owns; build: the option values (by Option.dest) to those
    keywords (None: not given); doc: what it does, one docs row;
    gpu_changes: for an edit without an Edits field, one rank's GPU duration changes from
    its keywords' values (the edits with a field are applied by the replay itself,
    hta_fast.model.whatif.changes and .weights); check: those values checked and
    normalized (raises ValueError)."""

    key: str
    options: tuple[Option, ...]
    keywords: tuple[str, ...]
    build: Callable[[Mapping[str, Any]], dict[str, Any]]
    doc: str
    gpu_changes: Optional[GpuChanges] = None
    check: Optional[Callable[[Mapping[str, Any]], dict[str, Any]]] = None


def factor_pairs(pairs: tuple[str, ...], option: str) -> Optional[dict[str, float]]:
    """KEY=FACTOR options as {KEY: FACTOR}; None when none was given."""
    out: dict[str, float] = {}
    for pair in pairs:
        key, sep, value = pair.rpartition("=")
        try:
            out[key] = float(value)
        except ValueError:
            key = ""
        if not sep or not key:
            raise OptionError(f"{pair!r}: expected KEY=FACTOR, e.g. COMM=0.5", option)
    return out or None


def regex_pairs(pairs: tuple[str, ...], option: str) -> Optional[dict[str, str]]:
    """REGEX[=REGEX_B] options as {REGEX: REGEX_B}; an escaped \\= stays in the pattern."""
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        parts = re.split(r"(?<!\\)=", pair, maxsplit=1)
        here = parts[0].replace("\\=", "=")
        there = parts[1].replace("\\=", "=") if len(parts) > 1 else here
        if not here or not there:
            raise OptionError(f"{pair!r}: expected REGEX or REGEX=REGEX_B", option)
        out[here] = there
    return out
