"""Broken input: every case raises TraceFormatError (strict) with a useful reason and, where
one is meaningful, the byte offset computed here from the text; recover=True keeps exactly
what can be kept and counts what it dropped. Here: input that is not a trace, bad encodings,
the header, error codes and paths; bad fields in test_bad_input_fields.py, compressed, cut
and trailing input in test_bad_input_truncation.py."""

from __future__ import annotations

import gzip
import os

import pytest

import hta_fast
from hta_fast import TraceFormatError
from hta_fast.errors import ErrorCode
from tests.support.bad_input import CONFIGS, Doc, ev_text, examples, load_error


# --- not a trace at all ---------------------------------------------------------------
def test_empty_file(tmp_path):
    p = tmp_path / "empty.json"
    p.write_bytes(b"")
    for src in (p, b""):
        e = load_error(src)
        assert e.offset == 0
        assert "empty" in e.reason
    assert load_error(p).path == str(p)
    assert str(p) in str(load_error(p))


@pytest.mark.parametrize("text", [b" ", b"\n\n  \t\r\n", b" " * 70000])
def test_whitespace_only(text):
    e = load_error(text)
    # the file holds no JSON value: say so (not "ends inside the trace header")
    assert "empty" in e.reason or "no JSON" in e.reason, e.reason
    assert e.offset in (0, len(text))


@pytest.mark.parametrize(
    "text,offset",
    [
        (b"hello", 0),
        (b"\n  hello", 3),
        (b"nul", 0),
        (b"<html>", 0),
        (b"\xff", 0),
        (b"\x89PNG\r\n", 0),
        (b"  \xe9t\xe9", 2),
        (b"\x00\x00\x00", 0),
    ],
)
def test_not_json(text, offset):
    # binary or non-ASCII first bytes too: the reason must still be a readable str
    e = load_error(text)
    assert e.offset == offset
    assert "JSON" in e.reason


def test_utf8_byte_order_mark():
    # some Windows tools write a BOM: load the trace, or refuse it with TraceFormatError
    text = b"\xef\xbb\xbf" + b'{"traceEvents":[' + ev_text(0).encode() + b"]}"
    try:
        t = hta_fast.load(text)
    except TraceFormatError as e:
        assert e.offset == 0
        return
    assert t.events["name"].to_pylist() == ["op0"]


@pytest.mark.parametrize(
    "text,why",
    [
        (b'{"a": 1}', "traceEvents"),
        (b'{"a": {"traceEvents": []}}', "traceEvents"),  # not at the top level
        (b'{"a": "\\"traceEvents\\": ["}', "traceEvents"),  # only inside a string
        (b"{}", "traceEvents"),
        (b"[1,2,3]", "not a trace"),
        (b"[[1,2]]", "not a trace"),
        (b'["a", "b"]', "not a trace"),
        (b"[null]", "not a trace"),
        (b'"str"', "JSON trace"),
        (b"42", "JSON trace"),
        (b"null", "JSON trace"),
        (b"true", "JSON trace"),
    ],
)
def test_json_that_is_not_a_trace(text, why):
    e = load_error(text)
    assert why in e.reason, e.reason
    assert e.offset is None or 0 <= e.offset <= len(text)


@pytest.mark.parametrize("value", [b"5", b"{}", b'{"ph": "X"}', b'"x"', b"null", b"true"])
def test_trace_events_not_an_array(value):
    text = b'{"schemaVersion": 1, "traceEvents": ' + value + b', "traceName": "x"}'
    e = load_error(text)
    assert "traceEvents" in e.reason and "array" in e.reason and e.key == "traceEvents"
    assert e.offset == text.index(b"traceEvents") + len(b'traceEvents": ')


@pytest.mark.parametrize("cut", [1, 5, 20, 36])
def test_cut_inside_the_header_before_events(cut):
    text = b'{"schemaVersion": 1, "traceName": "x", "traceEvents": [' + ev_text(0).encode() + b"]}"
    assert cut < text.index(b"[")
    for recover in (False, True):
        e = load_error(text[:cut], recover=recover)
        assert e.offset == cut
        assert "header" in e.reason


# --- encoding -----------------------------------------------------------------------
@pytest.mark.parametrize("raw", [b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe6\xbc"])
@pytest.mark.parametrize("k", [0, 900])
def test_invalid_utf8_in_a_name(raw, k):
    n = 1000
    events = [ev_text(i).encode() for i in range(n)]
    events[k] = events[k].replace(f'"op{k}"'.encode(), b'"op' + raw + b'"')
    doc = Doc(events)
    bad_at = doc.text.index(raw)
    # recover=True reads each bad sequence as U+FFFD, as Python's errors="replace" does
    repaired = ("op" + raw.decode("utf-8", errors="replace"),)
    for c in CONFIGS:
        e = load_error(doc.text, **c)
        assert "UTF-8" in e.reason and e.code is ErrorCode.bad_json and e.recoverable
        # the offset must point into the event that holds the bad bytes, not at the start
        # of whatever chunk it fell in
        assert doc.starts[k] <= e.offset <= bad_at, (c, e.offset, doc.starts[k], bad_at)
        t = hta_fast.load(doc.text, recover=True, **c)
        names = t.events["name"].to_pylist()
        assert names == [f"op{i}" if i != k else repaired[0] for i in range(n)], c
        assert t.stat("invalid_utf8") == repaired[0].count("\ufffd") and t.stat("bad_field") == 0
        assert examples(t, "invalid_utf8")[0]["offset"] == bad_at, c
        assert examples(t, "invalid_utf8")[0]["text"].startswith("\ufffd")
        # every later offset is where it was: the repair shifts the text, not the offsets
        assert examples(t, "invalid_utf8")[-1]["offset"] < bad_at + len(raw)


def test_invalid_utf8_offsets_after_a_repair():
    # a bad field after the repaired bytes is still reported at its own offset
    events = [ev_text(0, name="a\udcff").encode(), ev_text(1, ts="x").encode()]
    text = Doc(events).text.replace(b"\\udcff", b"\xff")
    doc_starts = [text.index(b'{"ph"'), text.index(b'{"ph"', text.index(b'{"ph"') + 1)]
    t = hta_fast.load(text, recover=True, threads=1)
    assert t.events["name"].to_pylist() == ["a\ufffd"]
    assert [x["offset"] for x in examples(t, "bad_field")] == [doc_starts[1]]


def test_invalid_utf8_in_the_header():
    text = b'{"traceName":"r\xff","traceEvents":[' + ev_text(0).encode() + b"]}"
    e = load_error(text)
    assert e.code is ErrorCode.bad_json and e.key == "traceName" and e.recoverable
    assert "UTF-8" in e.reason and "traceName" in e.reason
    t = hta_fast.load(text, recover=True)
    assert t.meta.header["traceName"] == "r\ufffd" and t.stat("invalid_utf8") == 1


@pytest.mark.parametrize("name", [b'"\\ud800"', b'"a\\udc00b"', b'"\\x"', b'"\\u12"', b'"a\x01b"'])
def test_bad_strings_raise(name):
    doc = Doc(
        [ev_text(0).encode(), b'{"ph":"X","name":' + name + b',"pid":1,"tid":1,"ts":1,"dur":1}']
    )
    for recover in (False, True):
        try:
            t = hta_fast.load(doc.text, recover=recover)
        except TraceFormatError as e:
            assert doc.starts[0] <= e.offset <= doc.array_end
            continue
        # kept only if skipped as a bad field
        assert recover and t.events["name"].to_pylist() == ["op0"]


# --- the header: parsed once, by the core ---------------------------------------------
def header_doc(before: bytes = b"", after: bytes = b"") -> bytes:
    return b"{" + before + b'"traceEvents":[' + ev_text(0).encode() + b"]" + after + b"}"


@pytest.mark.parametrize("where", ["before", "after"])
def test_header_nested_too_deep(tmp_path, where):
    # one parse (the core's), with one depth limit: not a RecursionError in Python
    deep = b'"x":' + b"[" * 1000 + b"]" * 1000
    text = header_doc(before=deep + b",") if where == "before" else header_doc(after=b"," + deep)
    p = tmp_path / "deep.json"
    p.write_bytes(text)
    e = load_error(p)
    assert e.code is ErrorCode.too_deep and e.path == str(p) and str(p) in str(e)
    assert e.offset is None and "at byte" not in str(e)


def test_header_nested_within_the_limit():
    t = hta_fast.load(header_doc(after=b',"x":' + b"[" * 50 + b"]" * 50))
    assert t.events["name"].to_pylist() == ["op0"]


@pytest.mark.parametrize(
    "header",
    [
        (b'"baseTimeNanoseconds":5,', b',"baseTimeNanoseconds":"x"'),
        (b'"baseTimeNanoseconds":"x",', b',"baseTimeNanoseconds":5'),
        (b'"baseTimeNanoseconds":5,"baseTimeNanoseconds":[1],', b""),
    ],
)
def test_duplicated_header_key_with_a_wrong_type(tmp_path, header):
    # every occurrence is checked, whichever one a dict would keep
    p = tmp_path / "dup.json"
    p.write_bytes(header_doc(*header))
    e = load_error(p)
    assert e.code is ErrorCode.bad_field and "baseTimeNanoseconds" in e.reason
    assert str(p) in str(e) and e.offset is None


def test_duplicated_header_key_the_last_wins():
    # as in Python's json: the header dict and the base time added to ts agree
    t = hta_fast.load(header_doc(b'"baseTimeNanoseconds":5000,', b',"baseTimeNanoseconds":7000'))
    assert t.meta.header["baseTimeNanoseconds"] == 7000 == t.meta.base_time_ns
    assert t.events["ts"].to_pylist() == [7000]
    with pytest.warns(UserWarning, match="distributedInfo is 'x', not an object; ignored"):
        t = hta_fast.load(header_doc(b'"distributedInfo":{"rank":3},', b',"distributedInfo":"x"'))
    assert t.meta.header["distributedInfo"] == "x" and t.meta.rank is None


# --- error codes --------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,code",
    [
        (b"", ErrorCode.empty),
        (b"  \n", ErrorCode.empty),
        (b"hello", ErrorCode.not_json),
        (b"42", ErrorCode.not_json),
        (b'{"a": 1}', ErrorCode.not_a_trace),
        (b"[1, 2]", ErrorCode.not_a_trace),
        (b'{"traceEvents": 5}', ErrorCode.bad_field),
        (b'{"traceEvents":[' + ev_text(0).encode(), ErrorCode.truncated),
        (b'{"traceEvents":[' + ev_text(0, ts="x").encode() + b"]}", ErrorCode.bad_field),
        (b'{"traceEvents":[' + ev_text(0).encode() + b",,]}", ErrorCode.bad_json),
        (b'{"traceEvents":[]} x', ErrorCode.bad_json),
        (gzip.compress(b'{"traceEvents":[]}')[:-6], ErrorCode.truncated),
        (b"\x1f\x8b" + b"garbage" * 10, ErrorCode.corrupt_stream),
    ],
)
def test_error_codes(text, code):
    e = load_error(text)
    assert e.code is code, (e.code, e.reason)


@pytest.mark.parametrize(
    "text", [b'{"a": 1}', b"[1, 2]", b'{"traceEvents":[], "baseTimeNanoseconds": "x"}']
)
def test_unknown_offsets_are_none(text):
    # no single byte is to blame: no "at byte 0" in the message
    e = load_error(text)
    assert e.offset is None and "at byte" not in str(e)


# --- paths --------------------------------------------------------------------------
def test_nonexistent_path(tmp_path):
    with pytest.raises(FileNotFoundError):
        hta_fast.load(tmp_path / "nope.json")
    with pytest.raises(FileNotFoundError):
        hta_fast.load(str(tmp_path / "nope.json.gz"))


def test_directory(tmp_path):
    with pytest.raises((OSError, TraceFormatError)) as ei:
        hta_fast.load(tmp_path)
    assert str(tmp_path) in str(ei.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    p = tmp_path / "t.json"
    p.write_bytes(b"[" + ev_text(0).encode() + b"]")
    p.chmod(0)
    with pytest.raises(PermissionError):
        hta_fast.load(p)
