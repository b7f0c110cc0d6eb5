"""Timestamps and ids of every length through the loader's number reading, against exact
decimal arithmetic: digits are read eight at a time where they can be, one at a time
where not, and the two must agree at every length and boundary."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hta_fast

DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=21)


def spelling(whole: str, fraction: str, negative: bool) -> str:
    whole = whole.lstrip("0") or "0"  # JSON: no leading zeros
    text = ("-" if negative else "") + whole
    return text + ("." + fraction if fraction else "")


def expected_ns(text: str) -> int | None:
    ns = (Decimal(text) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return int(ns) if -(2**63) <= ns < 2**63 else None


def load_one(field: str, value: str):
    event = '{"ph":"X","name":"a","cat":"c","pid":7,"tid":7,"ts":1,"dur":1}'
    event = event.replace(f'"{field}":1' if field != "pid" else '"pid":7', f'"{field}":{value}')
    return hta_fast.load(('{"traceEvents":[' + event + "]}").encode(), recover=True)


@settings(max_examples=300, deadline=None)
@given(whole=DIGITS, fraction=st.text(alphabet="0123456789", max_size=9), negative=st.booleans())
def test_timestamps_match_exact_decimal(whole, fraction, negative):
    text = spelling(whole, fraction, negative)
    want = expected_ns(text)
    t = load_one("ts", text)
    if want is None:
        assert t.events.num_rows == 0 and t.stat("bad_field") == 1, text
    else:
        assert t.events["ts"].to_pylist() == [want], text


@settings(max_examples=300, deadline=None)
@given(whole=DIGITS, negative=st.booleans())
def test_integer_ids_match_exact_value(whole, negative):
    text = spelling(whole, "", negative)
    t = load_one("pid", text)
    value = int(text)
    if not -(2**63) <= value < 2**63:
        assert t.events.num_rows == 0, text
    else:  # any int64, the range names are stored in too: as written
        assert t.events["pid"].to_pylist() == [value], text


SPACE = st.sampled_from(["", " ", "\n    ", "\t", "  \r\n"])


@settings(max_examples=300, deadline=None)
@given(
    whole=DIGITS,
    fraction=st.text(alphabet="0123456789", max_size=5),
    negative=st.booleans(),
    after_ts=SPACE,
    after_id=SPACE,
    id_digits=DIGITS,
)
def test_numbers_followed_by_whitespace_and_brackets(
    whole, fraction, negative, after_ts, after_id, id_digits
):
    # The writers' spellings are read from 8-byte words past the value's end: what follows
    # (whitespace, the closing brace of args, the next key) must not change the value.
    ts = spelling(whole, fraction, negative)
    ext = spelling(id_digits, "", False)
    event = (
        '{"ph": "X", "name": "a", "cat": "c", "pid": 7, "tid": 7, "ts": ' + ts + after_ts
        + ', "dur": 1, "args": {"External id": ' + ext + after_id + "}}"
    )  # fmt: skip
    t = hta_fast.load(('{"traceEvents": [' + event + "]}").encode(), recover=True)
    want_ts = expected_ns(ts)
    if want_ts is None:
        assert t.events.num_rows == 0, event
        return
    assert t.events["ts"].to_pylist() == [want_ts], event
    want_ext = int(ext) if int(ext) < 2**63 else -1  # out of range: read as missing (recover)
    assert t.events["external_id"].to_pylist() == [None if want_ext < 0 else want_ext], event


@pytest.mark.parametrize(
    "text, ns",
    [("0", 0), ("-0", 0), ("0.5", 500), ("-0.001", -1), ("10", 10_000), ("01", None),
     ("00", None), ("-01", None), ("01.5", None), ("1.", None), ("-", None), ("1e3", 10**6),
     ("9223372036854775.807", 2**63 - 1), ("9223372036854775.808", None),
     ("-9223372036854775.808", -(2**63)), ("12345678901234567", 12345678901234567000)],
)  # fmt: skip
def test_edge_spellings(text, ns):
    # JSON allows no leading zero before a digit; the loader holds to it at every length.
    t = load_one("ts", text)
    if ns is None or not -(2**63) <= ns < 2**63:
        assert t.events.num_rows == 0 and t.stat("bad_field") == 1, text
    else:
        assert t.events["ts"].to_pylist() == [ns], text
    ids = load_one("pid", text)
    if "." in text or "e" in text or ns is None or not -(2**63) <= ns // 1000 < 2**63:
        return
    assert ids.events["pid"].to_pylist() == [ns // 1000], text


@settings(max_examples=400, deadline=None)
@given(
    whole=DIGITS,
    fraction=st.text(alphabet="0123456789", max_size=12),
    negative=st.booleans(),
    exponent=st.one_of(st.none(), st.integers(-30, 30)),
)
def test_doubles_match_correctly_rounded_values(whole, fraction, negative, exponent):
    # Counter values (and kernels' occupancy, bandwidth): up to 2^53 digits with a short
    # fraction are divided by an exact power of ten; the rest go through from_chars. Both
    # must give the correctly rounded double, as Python's float does, sign of zero included.
    text = spelling(whole, fraction, negative) + ("" if exponent is None else f"e{exponent}")
    event = '{"ph":"C","name":"c","pid":1,"tid":1,"ts":1,"args":{"v":' + text + "}}"
    t = hta_fast.load(('{"traceEvents":[' + event + "]}").encode())
    got = t.counters.column("value")[0].as_py()
    assert got == float(text)
    assert math.copysign(1, got) == math.copysign(1, float(text))
