"""The synthetic trace that tests/loading/test_layouts*.py write in every byte layout.

The events, their spellings (int / three-decimal / exponent / string timestamps, string
pids, hostile names) and the answers (ns values, links, nesting, steps, stats) are fixed
by construction here; nothing is derived from the loader under test.
"""

from __future__ import annotations

FILLER = 1000  # plain events before the interesting ones (> 64 KiB in every layout)
BASE = 1_700_000_000_000_000_123  # > 2**53 and odd: a double would lose it
US = 1000  # ns per µs


class Raw(str):
    """JSON text written as-is (number spellings, pre-escaped strings)."""


# --- the trace --------------------------------------------------------------------------
# Names that defeat a naive `},{` splitter or a naive string reader.
HOSTILE = [
    "}, {",
    '},{"ph":"X"',
    '}, {"ph": "X", "ts": 1, "dur": 2, "name": "fake"}, {',
    'quote " inside',
    'back\\slash \\ and \\\\ and \\"',
    "漢字 é real utf-8",
    "] and [ brackets ]] [[",
    '[{"a": 1}], [{"b": 2}]',
    "tab\tnewline\ncr\r",
    "\u2028 line separator \u2029",
    "emoji 😀 outside the BMP",
    "x" * 700 + "}, {" + "y" * 5000,  # longer than a 256-byte chunk, with a fake boundary
]
# Pre-escaped spellings: (JSON text, decoded value).
ESCAPED = [
    ('"caf\\u00e9 \\u6f22"', "café 漢"),
    ('"\\ud83d\\ude00 pair"', "😀 pair"),
    ('"\\"}, {\\"ph\\": \\"X\\"\\u007d,\\u007b"', '"}, {"ph": "X"},{'),
    ('"slash \\/ \\b\\f"', "slash / \b\f"),
]

DEVICE_PROPERTIES = [  # header after traceEvents, itself an array of objects
    {
        "id": 0,
        "name": "NVIDIA H100 }, {",
        "totalGlobalMem": 85031714816,
        "computeMajor": 9,
        "computeMinor": 0,
        "numSms": 132,
        "nested": [{"a": [1, 2]}, {"b": {"c": []}}],
    },
    {
        "id": 1,
        "name": "NVIDIA H100",
        "totalGlobalMem": 85031714816,
        "computeMajor": 9,
        "computeMinor": 0,
        "numSms": 132,
    },
]
DISTRIBUTED_INFO = {
    "backend": "nccl",
    "rank": 3,
    "world_size": 8,
    "pg_config": [{"pg_name": "0", "ranks": [0, 1]}, {"pg_name": "1", "ranks": []}],
}


def X(name, ts, dur, cat, /, pid=1, tid=1, args=None, **expect):
    """A complete event and what the loader must make of it (rel_ts/dur in ns)."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts}
    if dur is not None:
        ev["dur"] = dur
    if args is not None:
        ev["args"] = args
    return ev, expect


def build_events():
    """[(event, expect)] in file order. expect: name, ts, dur (relative ns), and where
    they matter: step, parent (a name), partner (a name), want_pid/want_tid (ints),
    pid_name/tid_name (string ids)."""
    out = []
    add = out.append
    # Filler first: the loader reads its first 64 KiB in one block, so only events past it
    # are cut at chunk_size; the interesting events below must come after it.
    for i in range(FILLER):
        add(
            X(
                f"filler{i}",
                Raw(str(5000 + i)),
                Raw("0.5"),
                "cpu_op",
                pid=9,
                tid=9,
                ts=(5000 + i) * US,
                dur=500,
                step=None,
                parent=None,
            )
        )
    # Steps: ProfilerStep#3 = [0, 1000) µs, ProfilerStep#4 = [1000, 2000) µs.
    add(
        X(
            "ProfilerStep#3",
            Raw("0"),
            Raw("1000"),
            "user_annotation",
            ts=0,
            dur=1000 * US,
            step=3,
            parent=None,
        )
    )
    add(
        X(
            "aten::mm",
            Raw("90.000"),
            Raw("60.000"),
            "cpu_op",
            args={
                "External id": 3,
                "Input Dims": [[2, 3], [3, 4]],
                "x": [{"a": 1}, {"b": 2}],
                "nested": {"o": {"p": [1, {"q": "}, {"}], "r": {}}},
                "Input type": ["float", "c10::Half"],
            },
            ts=90 * US,
            dur=60 * US,
            step=3,
            parent="ProfilerStep#3",
        )
    )
    # A launch whose kernel has no correlation: linked only by the ac2g flow id 77.
    add(
        X(
            "cudaLaunchKernel",
            Raw("100"),
            Raw("10"),
            "cuda_runtime",
            args={"correlation": 11, "External id": 3},
            ts=100 * US,
            dur=10 * US,
            step=3,
            parent="aten::mm",
            partner="kernel_via_flow",
        )
    )
    # A graph launch with three kernels sharing its correlation.
    add(
        X(
            "cudaGraphLaunch",
            Raw("200.250"),
            Raw("20.5"),
            "cuda_runtime",
            args={"correlation": 9, "stream": 7},
            ts=200_250,
            dur=20_500,
            step=3,
            parent="ProfilerStep#3",
            partner="graph_k0",
        )
    )
    # Hostile names on the CPU thread, siblings under ProfilerStep#3.
    for i, name in enumerate(HOSTILE):
        add(
            X(
                name,
                Raw(str(300 + 10 * i)),
                Raw("5"),
                "cpu_op",
                args={"External id": 100 + i, "k": [{"}": "{"}, {"],": "[,"}]},
                ts=(300 + 10 * i) * US,
                dur=5 * US,
                step=3,
                parent="ProfilerStep#3",
            )
        )
    for i, (text, decoded) in enumerate(ESCAPED):
        add(
            X(
                Raw(text),
                Raw(str(450 + 10 * i)),
                Raw("5"),
                "cpu_op",
                ts=(450 + 10 * i) * US,
                dur=5 * US,
                step=3,
                parent="ProfilerStep#3",
                name=decoded,
            )
        )
    add(
        X(
            "ProfilerStep#4",
            Raw("1000"),
            Raw("1000"),
            "user_annotation",
            ts=1000 * US,
            dur=1000 * US,
            step=4,
            parent=None,
        )
    )
    add(
        X(
            "cudaLaunchKernel#2",
            Raw("1100"),
            Raw("5"),
            "cuda_runtime",
            args={"correlation": 12},
            ts=1100 * US,
            dur=5 * US,
            step=4,
            parent="ProfilerStep#4",
            partner="kernel_step4",
        )
    )
    add(
        X(
            "late_op",
            Raw("2500"),
            Raw("1"),
            "cpu_op",
            ts=2500 * US,
            dur=1 * US,
            step=None,
            parent=None,
        )
    )
    # Number spellings, on their own thread.
    add(
        X(
            "exp_op",
            Raw("1.5e3"),
            Raw("2.5E-1"),
            "cpu_op",
            tid=2,
            ts=1_500_000,
            dur=250,
            step=4,
            parent=None,
        )
    )
    add(
        X(
            "str_ts",
            Raw('"123.5"'),
            Raw('"6"'),
            "cpu_op",
            tid=2,
            ts=123_500,
            dur=6 * US,
            step=3,
            parent=None,
        )
    )
    add(X("no_dur", Raw("130"), None, "cpu_op", tid=2, ts=130 * US, dur=0, step=3, parent=None))
    add(
        X(
            "half_up",
            Raw("140.0005"),
            Raw("0.0004"),
            "cpu_op",
            tid=2,
            ts=140_001,
            dur=0,
            step=3,
            parent=None,
        )
    )
    add(
        X(
            "exp_plus",
            Raw("1.6E+2"),
            Raw("1e0"),
            "cpu_op",
            tid=2,
            ts=160 * US,
            dur=1 * US,
            step=3,
            parent=None,
        )
    )
    add(
        X(
            "many_decimals",
            Raw("170.123456789"),
            Raw("0.0015"),
            "cpu_op",
            tid=2,
            ts=170_123,
            dur=2,
            step=3,
            parent=None,
        )
    )
    # GPU side: pid = device 0, tid = stream 7.
    add(
        X(
            "kernel_via_flow",
            Raw("120"),
            Raw("5"),
            "kernel",
            pid=0,
            tid=7,
            args={"device": 0, "stream": 7, "grid": [1, 2, 3], "block": [128, 1, 1]},
            ts=120 * US,
            dur=5 * US,
            step=3,
            partner="cudaLaunchKernel",
        )
    )
    add(
        X(
            "graph_k2",
            Raw("260"),
            Raw("4"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 9, "device": 0, "stream": 7},
            ts=260 * US,
            dur=4 * US,
            step=3,
            partner="cudaGraphLaunch",
        )
    )
    add(
        X(
            "graph_k0",
            Raw("230.125"),
            Raw("4"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 9, "device": 0, "stream": 7},
            ts=230_125,
            dur=4 * US,
            step=3,
            partner="cudaGraphLaunch",
        )
    )
    add(
        X(
            "graph_k1",
            Raw("245"),
            Raw("4"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 9, "device": 0, "stream": 7},
            ts=245 * US,
            dur=4 * US,
            step=3,
            partner="cudaGraphLaunch",
        )
    )
    # Launched in step 4, runs inside the step 5 window's time: takes the launch's step.
    add(
        X(
            "kernel_step4",
            Raw("2600"),
            Raw("3"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 12},
            ts=2600 * US,
            dur=3 * US,
            step=4,
            partner="cudaLaunchKernel#2",
        )
    )
    add(
        X(
            "kernel_unlinked",
            Raw("3000"),
            Raw("3"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 999},
            ts=3000 * US,
            dur=3 * US,
            step=None,
            partner=None,
        )
    )
    # String pids / tids.
    add(
        X(
            "span_a",
            Raw("10"),
            Raw("1"),
            "Trace",
            pid="Spans",
            tid="stream 7",
            ts=10 * US,
            dur=US,
            pid_name="Spans",
            tid_name="stream 7",
        )
    )
    add(
        X(
            "span_b",
            Raw("11"),
            Raw("1"),
            "Trace",
            pid="Spans",
            tid="",
            ts=11 * US,
            dur=US,
            pid_name="Spans",
            tid_name="",
        )
    )
    add(
        X(
            "span_c",
            Raw("12"),
            Raw("1"),
            "Trace",
            pid="",
            tid="Spans",
            ts=12 * US,
            dur=US,
            pid_name="",
            tid_name="Spans",
        )
    )
    add(
        X(
            "numeric_string_ids",
            Raw("13"),
            Raw("1"),
            "Trace",
            pid="12",
            tid="13",
            ts=13 * US,
            dur=US,
            want_pid=12,
            want_tid=13,
        )
    )
    add(
        X(
            "overhead",
            Raw("14"),
            Raw("1"),
            "overhead",
            pid=-1,
            tid=-1,
            ts=14 * US,
            dur=US,
            want_pid=-1,
            want_tid=-1,
        )
    )
    return out


OTHER_EVENTS = [
    # flows: start on the launch, finish on the kernel (bp e)
    {"ph": "s", "id": 77, "pid": 1, "tid": 1, "ts": Raw("100"), "cat": "ac2g", "name": "ac2g"},
    {
        "ph": "f",
        "id": 77,
        "pid": 0,
        "tid": 7,
        "ts": Raw("120"),
        "cat": "ac2g",
        "name": "ac2g",
        "bp": "e",
    },
    # counters: one row per numeric arg, the string arg counted
    {
        "ph": "C",
        "name": "Memory",
        "pid": 1,
        "tid": 1,
        "ts": Raw("50"),
        "args": {"allocated": 1024, "reserved": Raw("2048.5"), "label": "not a number"},
    },
    # metadata
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3 }, {"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main thread"}},
    {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "args": {"sort_index": 5}},
    # instant
    {"ph": "i", "s": "t", "name": "inst", "pid": 1, "tid": 1, "ts": Raw("55"), "cat": "x"},
    # phases the loader does not read
    {"ph": "B", "name": "begin", "pid": 1, "tid": 1, "ts": Raw("60")},
    {"ph": "E", "name": "end", "pid": 1, "tid": 1, "ts": Raw("61")},
    {"ph": "Z", "name": "unknown phase", "pid": 1, "tid": 1, "ts": Raw("62")},
]


def all_events():
    """File order: complete events interleaved with the others."""
    xs = [ev for ev, _ in build_events()]
    out = []
    others = list(OTHER_EVENTS)
    for i, ev in enumerate(xs):
        out.append(ev)
        if i % 3 == 1 and others:
            out.append(others.pop(0))
    return out + others
