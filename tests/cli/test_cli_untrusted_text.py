"""Text from a trace on the command line's outputs: control characters (a terminal title set
by OSC, colours, erasing the screen) are shown as escapes on text output, and CSV cells that
a spreadsheet would run as formulas are written as text."""

from __future__ import annotations

import csv
import sys

import pyarrow as pa
from click.testing import CliRunner

from hta_fast.cli import cli
from tests.support.kineto_builder import KinetoBuilder

TITLE = "\x1b]0;pwned\x07kern"  # OSC 0: sets the terminal window's title
COLOUR = "\x1b[31mred\x1b[0m"
ERASE = "\x1b[2J\x1b[Hcleared"
C1 = "csi\x9b31m_del\x7f_bell\x07"
FORMULAS = ['=HYPERLINK("https://evil.example/","x")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1)"]
RAW = ("\x1b", "\x07", "\x9b", "\x7f")


def _trace(tmp_path, names, filename="t.json"):
    b = KinetoBuilder()
    for s in range(2):
        t0 = s * 10_000
        b.step(s, t0, 10_000)
        for j, name in enumerate(names):
            b.cpu_op(f"aten::{name}", t0 + j * 100, 90)
            b.kernel(name, t0 + j * 100 + 10, t0 + 100 + j * 400, 300)
    path = tmp_path / filename
    path.write_bytes(b.to_bytes())
    return path


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _no_raw_controls(text: str) -> None:
    found = [c for c in RAW if c in text]
    assert not found, f"raw control characters {found!r} in:\n{text!r}"


def test_analyze_text_output_escapes_control_characters(tmp_path):
    path = _trace(tmp_path, [TITLE, COLOUR, ERASE, C1])
    res = _run("analyze", path, "-a", "kernel_breakdown", "--limit", "0")
    assert res.exit_code == 0, res.output
    _no_raw_controls(res.output)
    assert "\\x1b]0;pwned\\x07kern" in res.output
    assert "\\x1b[31mred\\x1b[0m" in res.output
    assert "csi\\x9b31m_del\\x7f_bell\\x07" in res.output


def test_info_and_errors_escape_control_characters(tmp_path):
    path = _trace(tmp_path, ["k"], filename="t\x1b[2J.json")
    res = _run("info", path)
    assert res.exit_code == 0
    _no_raw_controls(res.output)
    assert "t\\x1b[2J.json" in res.output
    broken = tmp_path / "b\x1b]0;x\x07.json"
    broken.write_text('{"traceEvents": [')
    res = CliRunner().invoke(cli, ["info", str(broken)])
    assert res.exit_code == 2
    _no_raw_controls(res.output)


def test_doctor_text_output_escapes_control_characters(tmp_path, monkeypatch):
    from tests.support import fake_doctor

    finding = fake_doctor.launch_bound_finding()
    finding.title = f"launch bound: {TITLE}"
    monkeypatch.setitem(
        sys.modules, "hta_fast.doctor", fake_doctor.module(utilization=0.4, findings=[finding])
    )
    path = _trace(tmp_path, ["k"])
    res = CliRunner().invoke(cli, ["doctor", str(path)])  # output: stdout and stderr
    assert res.exit_code == 1, res.output
    _no_raw_controls(res.output)
    assert "FAIL: launch_bound: launch bound: \\x1b]0;pwned\\x07kern" in res.output


def test_csv_cells_that_would_be_formulas_are_text(tmp_path):
    path = _trace(tmp_path, [*FORMULAS, "\tpadded", "plain_kernel"])
    out = tmp_path / "out"
    res = _run("analyze", path, "-a", "kernel_breakdown", "--format", "csv", "-o", out)
    assert res.exit_code == 0, res.output
    with open(out / "kernel_breakdown.kernels.csv", newline="") as fh:
        names = [row["name"] for row in csv.DictReader(fh)]
    for name in FORMULAS + ["\tpadded"]:
        assert "'" + name in names, (name, names)
    assert "plain_kernel" in names  # only what a spreadsheet would run is changed
    assert not [n for n in names if n[:1] in ("=", "+", "-", "@", "\t", "\r")]


def test_csv_leaves_numbers_and_nulls_alone(tmp_path):
    from hta_fast.cli.output import write_tables

    table = pa.table(
        {
            "delta": pa.array([-3, 4], pa.int64()),
            "ratio": pa.array([-1.5, None], pa.float64()),
            "name": pa.array(["-x", None]),
            "kind": pa.array(["=a", "b"]).dictionary_encode(),
        }
    )
    (path,) = write_tables({"t": table}, "csv", str(tmp_path))
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[1] == ["-3", "-1.5", "'-x", "'=a"]
    assert rows[2] == ["4", "", "", "b"]
