"""The byte layouts a trace comes in, and a loaded trace as plain values to compare.

Layouts:  native  - the Kineto writer ("\\n  {" per event, header keys after the array)
          indent  - json.dumps(indent=2)
          line    - the whole file on one line, no spaces
          bare    - a top-level JSON array of events (no header, so no base time)
Each is loaded with the default chunking and with chunk_size=256, on 1 and 2 threads.
"""

from __future__ import annotations

import itertools
import json

from tests.support.layout_trace import BASE, DEVICE_PROPERTIES, DISTRIBUTED_INFO, Raw, all_events


def _placeholders(obj, raws):
    if isinstance(obj, Raw):
        raws.append(str(obj))
        return f"@@RAW{len(raws) - 1}@@"
    if isinstance(obj, dict):
        return {
            (_placeholders(k, raws) if isinstance(k, Raw) else k): _placeholders(v, raws)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_placeholders(v, raws) for v in obj]
    return obj


def dumps(obj, **kw) -> str:
    """json.dumps, with Raw values spliced in verbatim."""
    raws: list[str] = []
    text = json.dumps(_placeholders(obj, raws), ensure_ascii=False, **kw)
    for i, raw in enumerate(raws):
        text = text.replace(f'"@@RAW{i}@@"', raw, 1)
    return text


def header_after():
    return {
        "deviceProperties": DEVICE_PROPERTIES,
        "distributedInfo": DISTRIBUTED_INFO,
        "traceName": "x",
        "baseTimeNanoseconds": BASE,
    }


def write_native(events) -> str:
    """The Kineto writer: a leading newline, "\\n  {" per event, several keys a line,
    args one level deeper, header keys (deviceProperties comma-first) after the array."""

    def event(ev):
        head = [f"{dumps(k)}: {dumps(v)}" for k, v in ev.items() if k not in ("ts", "dur", "args")]
        lines = ["  {", "    " + ", ".join(head) + ("," if len(ev) > len(head) else "")]
        times = [f"{dumps(k)}: {dumps(ev[k])}" for k in ("ts", "dur") if k in ev]
        if times:
            lines.append("    " + ", ".join(times) + ("," if "args" in ev else ""))
        if "args" in ev:
            lines.append('    "args": {')
            lines.append(
                ",\n".join(
                    f"      {dumps(k)}: {dumps(v, separators=(', ', ': '))}"
                    for k, v in ev["args"].items()
                )
            )
            lines.append("    }")
        lines.append("  }")
        return "\n".join(lines)

    devs = "\n  ,".join(
        "{" + ", ".join(f"{dumps(k)}: {dumps(v)}" for k, v in d.items()) + "}"
        for d in DEVICE_PROPERTIES
    )
    return (
        '\n{\n  "schemaVersion": 1,\n  "traceEvents": [\n'
        + ",\n".join(event(e) for e in events)
        + '\n],\n  "deviceProperties": [\n  '
        + devs
        + "\n  ],\n"
        + '  "distributedInfo": '
        + dumps(DISTRIBUTED_INFO)
        + ",\n"
        + '  "traceName": "x",\n  "baseTimeNanoseconds": '
        + str(BASE)
        + "\n}\n"
    )


def write_indent(events) -> str:
    return dumps({"schemaVersion": 1, "traceEvents": events, **header_after()}, indent=2)


def write_line(events) -> str:
    return dumps(
        {"schemaVersion": 1, "traceEvents": events, **header_after()}, separators=(",", ":")
    )


def write_bare(events) -> str:
    return dumps(events, indent=1)


WRITERS = {"native": write_native, "indent": write_indent, "line": write_line, "bare": write_bare}
CONFIGS = [dict(chunk_size=c, threads=t) for c, t in itertools.product((0, 256), (1, 2))]


def layout_texts() -> dict[str, bytes]:
    """The trace in every layout, each checked to be valid JSON with all the events."""
    events = all_events()
    out = {name: w(events).encode() for name, w in WRITERS.items()}
    for name, text in out.items():  # every layout is valid JSON with the same events
        doc = json.loads(text)
        assert len(doc if name == "bare" else doc["traceEvents"]) == len(events)
    return out


def base_of(layout):
    return 0 if layout == "bare" else BASE


def canonical(t, layout):
    """Every table as Python values, ts made relative, raw JSON text parsed."""
    out = {}
    base = base_of(layout)
    for name in ("events", "flows", "counters", "instants", "meta_events", "kernel_args"):
        d = getattr(t, name).to_pydict()
        if "ts" in d:
            d["ts"] = [v - base for v in d["ts"]]
        out[name] = d
    ops = t.op_args.to_pydict()
    for col in ("input_dims", "input_type", "input_strides", "concrete_inputs"):
        ops[col] = [None if v is None else json.loads(v) for v in ops[col]]
    out["op_args"] = ops
    out["strings_of_ids"] = {
        v: t.id_name(v)
        for col in ("pid", "tid")
        for v in out["events"][col]
        if t.id_name(v) is not None
    }
    stats = dict(zip(t.stats["name"].to_pylist(), t.stats["count"].to_pylist()))
    stats.pop("speculative_split_retry")
    out["stats"] = stats
    return out


KEYS = sorted(itertools.product(WRITERS, (0, 256), (1, 2)))
