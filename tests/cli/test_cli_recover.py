"""--recover on the command line: suggested only where it helps, and it says what it did.

The core marks each error it raises as recoverable or not (TraceFormatError.recoverable);
the CLI suggests --recover from that mark, and with --recover prints one line on stderr
summing what the loader dropped or repaired (Trace.stats).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

EVENT = {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hta_fast", *args], capture_output=True, text=True, timeout=120
    )


def error_line(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 2, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    return lines[0]


def recover_lines(res: subprocess.CompletedProcess) -> list[str]:
    assert res.returncode == 0, res.stderr
    return [line for line in res.stderr.splitlines() if "--recover:" in line]


def trace_with(tmp_path, *events: bytes, header: bytes = b"") -> str:
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents":[' + b",".join(events) + b"]" + header + b"}")
    return str(path)


GOOD = json.dumps(EVENT).encode()
BAD_UTF8 = GOOD.replace(b'"op"', b'"op\xff"')


def test_invalid_utf8_recovers_as_suggested(tmp_path):
    path = trace_with(tmp_path, GOOD, BAD_UTF8)
    line = error_line(run("info", "--json", path))
    assert "UTF-8" in line and "--recover" in line
    res = run("info", "--json", "--recover", path)
    assert json.loads(res.stdout)["ranks"][0]["events"] == 2
    assert recover_lines(res) == [
        "hta-fast: WARNING: --recover: 1 rank(s); dropped or repaired: invalid_utf8 1 "
        "(see Trace.stats)"
    ]


def test_bad_field_and_bad_argument_counted(tmp_path):
    bad_ts = json.dumps(dict(EVENT, ts="x")).encode()
    bad_arg = json.dumps(dict(EVENT, args={"bytes": 1e30})).encode().replace(b"1e+30", b"1e30")
    path = trace_with(tmp_path, GOOD, bad_ts, bad_arg)
    line = error_line(run("info", path))
    assert 'key "ts"' in line and "--recover" in line
    (summary,) = recover_lines(run("info", "--json", "--recover", path))
    assert "bad_field 1" in summary and "bad_arg 1" in summary


def test_clean_file_says_nothing_was_dropped(tmp_path):
    (summary,) = recover_lines(run("info", "--recover", trace_with(tmp_path, GOOD)))
    assert summary.endswith("--recover: 1 rank(s) read whole, nothing dropped or repaired")


@pytest.mark.parametrize(
    "header",
    [
        b',"x":' + b"[" * 1000 + b"]" * 1000,  # nested too deep
        b',"baseTimeNanoseconds":"soon"',  # the time base of every timestamp
        b',"traceEvents":[]',  # two event arrays
    ],
)
def test_no_recover_suggested_where_it_cannot_help(tmp_path, header):
    path = trace_with(tmp_path, GOOD, header=header)
    assert "--recover" not in error_line(run("info", path))
    assert "--recover" not in error_line(run("info", "--recover", path))


def test_no_recover_suggested_for_broken_json(tmp_path):
    # a syntax error inside the events is no bad event that can be skipped
    path = trace_with(tmp_path, GOOD, b'{"ph":"X",,}')
    assert "--recover" not in error_line(run("info", path))
    assert "--recover" not in error_line(run("info", "--recover", path))


def test_truncated_recovers_and_says_so(tmp_path):
    path = tmp_path / "cut.json"
    path.write_bytes(b'{"traceEvents":[' + b",".join([GOOD] * 50)[:-20])
    assert "--recover" in error_line(run("info", str(path)))
    (summary,) = recover_lines(run("info", "--recover", str(path)))
    assert "truncated_file 1" in summary and "truncated_tail_bytes" in summary
