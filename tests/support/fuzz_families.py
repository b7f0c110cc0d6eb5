"""Structured mutation families for tests/loading/test_fuzz.py.

Byte-level mutations rarely build the values that broke the loader before: an integer pid
in the string-id range, a header nested a thousand deep, one event of megabytes, a key
given twice with another type, an argument beyond int64. Each family here edits a trace
at the JSON level and says what a correct load must show (`expect`), so the child process
checks more than "no crash":

  events   recover=True keeps this many complete events (the edit touched no core field)
  ids      [row, column, value]: the event at `row` (in file order) has that pid/tid, as
           written, wherever it lies in int64 (Trace.id_name: None, it is no name)
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable

STRING_ID_BASE = -(2**32)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
ID_EDGES = [
    STRING_ID_BASE,
    STRING_ID_BASE + 1,
    STRING_ID_BASE - 1,
    -(2**40),
    -(2**31) - 1,
    INT64_MIN,
    INT64_MIN + 1,
    INT64_MAX,
    -1,
]
# Argument values the loader cannot hold: beyond int64, beyond double, not JSON numbers,
# wrong types.
BAD_ARG_VALUES = [
    "1e30",
    "100000000000000000000000",
    "-9223372036854775809",
    "18446744073709551616",
    "1e999",
    "01",
    "+1",
    "1.",
    '"x"',
    "{}",
    "[1,[2]]",
    "true",
]
ARG_KEYS = [
    "bytes",
    "correlation",
    "External id",
    "device",
    "stream",
    "grid",
    "block",
    "registers per thread",
    "est. achieved occupancy %",
    "memory bandwidth (GB/s)",
    "Sequence number",
    "Input Dims",
    "Collective name",
    "In msg nelems",
    "Group size",
    "wait_on_stream",
]
HEADER_VALUES = [
    '"x"',
    "{}",
    "[1]",
    "5",
    "null",
    "1e999",
    '"\u00b2"',
    '{"rank":"--3","world_size":"\u00b2"}',
    '{"rank":{},"world_size":[]}',
    '[{"id":"x"},5,null]',
    '"-1"',
]
HEADER_KEYS = [
    "baseTimeNanoseconds",
    "distributedInfo",
    "deviceProperties",
    "computeProperties",
    "traceName",
    "schemaVersion",
    "traceEvents",
]
EVENT_KEYS = ["ts", "dur", "ph", "pid", "tid", "name", "cat", "args", "id", "s"]
EVENT_VALUES = ['"x"', "{}", "[]", "null", "1e30", "5", '"X"', '"\\u0058"', "-1099511627776"]


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Trace:
    """A seed split into header members and event texts, edited as text and rendered."""

    def __init__(self, data: bytes):
        doc = json.loads(data)
        self.events = [compact(e) for e in doc.pop("traceEvents")]
        self.parsed = json.loads("[" + ",".join(self.events) + "]")
        items = [f"{compact(k)}:{compact(v)}" for k, v in doc.items()]
        half = len(items) // 2
        self.before, self.after = items[:half], items[half:]

    def complete_rows(self) -> list[int]:
        """Indices in self.events of the ph X events (their rows in Trace.events)."""
        return [i for i, e in enumerate(self.parsed) if isinstance(e, dict) and e.get("ph") == "X"]

    def render(self) -> bytes:
        members = self.before + ['"traceEvents":[' + ",\n".join(self.events) + "]"] + self.after
        return ("{" + ",".join(members) + "}").encode()


def _with_arg(event_text: str, key: str, raw: str) -> str:
    e = json.loads(event_text)
    args = e.pop("args", {})
    args_text = compact(args) if isinstance(args, dict) else "{}"
    args_text = args_text[:-1] + ("," if args_text != "{}" else "") + f"{compact(key)}:{raw}}}"
    return compact(e)[:-1] + ("," if len(e) else "") + f'"args":{args_text}}}'


def ids_near_string_ids(t: Trace, rng: random.Random) -> tuple[list, dict]:
    rows = t.complete_rows()
    picked = rng.sample(range(len(rows)), min(len(rows), rng.choice([1, 2, 5])))
    expect: list = []
    recipe: list = []
    for k in picked:
        i = rows[k]
        e = json.loads(t.events[i])
        column = rng.choice(["pid", "tid"])
        value = rng.choice(ID_EDGES)
        e[column] = str(value) if rng.random() < 0.2 else value  # numeric strings too
        t.events[i] = compact(e)
        recipe.append((i, column, e[column]))
        expect.append([k, column, value])
    return recipe, {"ids": expect}


def deep_header(t: Trace, rng: random.Random) -> tuple[list, dict]:
    depth = rng.choice([10, 63, 64, 65, 200, 1000, 5000])
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    member = '"deep":' + opener * depth + "1" + closer * depth
    (t.before if rng.random() < 0.5 else t.after).insert(0, member)
    return [("deep", depth, opener)], {}


def huge_event(t: Trace, rng: random.Random) -> tuple[list, dict]:
    size = rng.choice([70_000, 300_000, 1_500_000])
    # plain text, false event boundaries, and escaped quotes around them
    filler = rng.choice(["x", "},{", '\\"}, {\\"ph\\":\\"X\\"'])
    name = filler * (size // len(filler))
    rows = t.complete_rows()
    i = rng.choice(rows)
    e = json.loads(t.events[i])
    t.events[i] = compact({**e, "name": ""})[:-1].replace('"name":""', f'"name":"{name}"') + "}"
    return [("huge", i, size, filler)], {"events": len(rows)}


def duplicated_event_keys(t: Trace, rng: random.Random) -> tuple[list, dict]:
    recipe = []
    for _ in range(rng.choice([1, 3])):
        i = rng.randrange(len(t.events))
        key, raw = rng.choice(EVENT_KEYS), rng.choice(EVENT_VALUES)
        text = t.events[i]
        if not text.startswith("{"):
            continue
        # the copy goes first or last: the last one wins either way
        dup = f"{compact(key)}:{raw}"
        t.events[i] = (
            "{" + dup + "," + text[1:] if rng.random() < 0.5 else text[:-1] + "," + dup + "}"
        )
        recipe.append((i, key, raw))
    return recipe, {}


def duplicated_header_keys(t: Trace, rng: random.Random) -> tuple[list, dict]:
    recipe = []
    for _ in range(rng.choice([1, 2])):
        key, raw = rng.choice(HEADER_KEYS), rng.choice(HEADER_VALUES)
        (t.before if rng.random() < 0.5 else t.after).append(f"{compact(key)}:{raw}")
        recipe.append((key, raw))
    return recipe, {}


def huge_arguments(t: Trace, rng: random.Random) -> tuple[list, dict]:
    rows = t.complete_rows()
    recipe = []
    for i in rng.sample(rows, min(len(rows), rng.choice([1, 3, 10]))):
        key, raw = rng.choice(ARG_KEYS), rng.choice(BAD_ARG_VALUES)
        t.events[i] = _with_arg(t.events[i], key, raw)
        recipe.append((i, key, raw))
    return recipe, {"events": len(rows)}


FAMILIES: dict[str, Callable[[Trace, random.Random], tuple[list, dict]]] = {
    "ids": ids_near_string_ids,
    "deep_header": deep_header,
    "huge_event": huge_event,
    "dup_event_keys": duplicated_event_keys,
    "dup_header_keys": duplicated_header_keys,
    "huge_args": huge_arguments,
}


def family_mutant(seed: bytes, family: str, rng: random.Random) -> tuple[bytes, list, dict]:
    t = Trace(seed)
    recipe, expect = FAMILIES[family](t, rng)
    return t.render(), [family] + recipe, expect
