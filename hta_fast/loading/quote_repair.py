"""Unescaped quotes inside JSON strings, the repair --recover makes.

Kineto escaped quotes in names only from 2026 (its JSON writer's name escaping); older
traces wrote a name as it came, so a quote inside one (a compiled region's label, a Python
call `f("a")` in a record_function name) ends the string early and the file is not JSON.
With recover=True such a file is read again with each inner quote escaped, and every
repaired byte offset is counted (the stat "repaired_quote", its examples the offsets and
the repaired text).

Which quotes are inner: in JSON a quote opens a string after `[`, `{`, `,` or `:` and
closes one before `,`, `:`, `}` or `]` (whitespace aside). A quote with something else on
both sides can be neither: it sits inside a string. That string is the value after the
last `":` before it, and it ends at the first quote followed by the next key (`, "key":`)
or by `}` or `]`; every unescaped quote between is escaped. A name whose inner quotes all
look like openers or closers (`f(a", b)`) is not found, and the load fails as before.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import zlib
from typing import Optional

# a quote with neither an opener's left (after whitespace) nor a closer's right
INNER = re.compile(rb'[^\s\[{,:\\]\s*(")(?=\s*[^\s,:}\]])')
# a quote that closes a value: the next key, or the end of the object or array, follows
CLOSER = re.compile(rb'(?<!\\)"(?=\s*(?:,\s*"[^"\\\n]{0,200}"\s*:|[}\]]))')
UNESCAPED = re.compile(rb'(?<!\\)"')
EXAMPLES = 10  # repaired offsets kept as examples
# The repair reads the whole text into memory: a larger file keeps the parser's error.
LARGEST_FILE = 2 << 30

_OPENERS = {b"\x1f\x8b": gzip.decompress, b"BZh": bz2.decompress, b"\xfd7zXZ": lzma.decompress}


def json_text(data: bytes) -> Optional[bytes]:
    """The JSON text of a file's bytes: as they are, or decompressed (gzip, bzip2, xz);
    None for another compression (zstd: its text is not reachable without the core) or a
    stream that does not decompress whole (the parser's error stands for it)."""
    for magic, decompress in _OPENERS.items():
        if data.startswith(magic):
            try:
                return decompress(data)
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError):
                return None
    if data.startswith(b"\x28\xb5\x2f\xfd"):  # zstd
        return None
    return data


def repair_quotes(text: bytes) -> tuple[bytes, list[int]]:
    """The text with each inner quote escaped, and the byte offset (in `text`) of each."""
    parts: list[bytes] = []
    offsets: list[int] = []
    done = 0  # text before this is copied (or repaired) already
    for m in INNER.finditer(text):
        quote = m.start(1)
        if quote < done:
            continue  # inside a value repaired already
        key_end = text.rfind(b'":', done, quote)
        if key_end < 0:
            continue
        start = text.find(b'"', key_end + 2, quote + 1)
        end = CLOSER.search(text, quote + 1)
        if start < 0 or start >= quote or end is None:
            continue
        inner = [q.start() for q in UNESCAPED.finditer(text, start + 1, end.start())]
        if not inner:
            continue
        parts.append(text[done : start + 1])
        at = start + 1
        for q in inner:
            parts += [text[at:q], b"\\"]
            at = q
            offsets.append(q)
        parts.append(text[at : end.start()])
        done = end.start()
    parts.append(text[done:])
    return b"".join(parts), offsets


def repaired_stat(text: bytes, offsets: list[int]) -> tuple[str, str, str, int, list[tuple]]:
    """The load stat of these repairs: name, severity, description, count and examples
    (offset, the text around the quote)."""
    examples = [
        (q, text[max(q - 20, 0) : q + 20].decode("utf-8", "replace")) for q in offsets[:EXAMPLES]
    ]
    return (
        "repaired_quote",
        "warning",
        "an unescaped quote inside a string, escaped (recover; traces before 2026 did not "
        "escape names)",
        len(offsets),
        examples,
    )
