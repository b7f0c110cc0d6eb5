"""Header values of any type: a TraceFormatError naming the key, or ignored with a warning;
never a bare ValueError or TypeError, and never one file's header aborting a folder load.

baseTimeNanoseconds shifts every timestamp, so a bad one is an error; distributedInfo,
its rank and world_size, and deviceProperties only describe the run, so a bad one is left
out with a warning (the rank then comes from the file name)."""

from __future__ import annotations

import json
import warnings

import pytest

import hta_fast
from hta_fast import TraceFormatError
from hta_fast.errors import ErrorCode
from hta_fast.trace import TraceMeta

EVENT = b'{"ph":"X","name":"op","pid":1,"tid":1,"ts":1,"dur":1}'


def doc(before: bytes = b"", after: bytes = b"") -> bytes:
    return b"{" + before + b'"traceEvents":[' + EVENT + b"]" + after + b"}"


IGNORED = [
    (b'"distributedInfo":"x",', "distributedInfo"),
    (b'"distributedInfo":[1],', "distributedInfo"),
    (b'"deviceProperties":5,', "deviceProperties"),
    (b'"deviceProperties":{"id":0},', "deviceProperties"),
    (b'"distributedInfo":{"rank":"\xc2\xb2"},', "distributedInfo.rank"),  # "²".isdigit()
    (b'"distributedInfo":{"rank":"--3"},', "distributedInfo.rank"),
    (b'"distributedInfo":{"rank":{}},', "distributedInfo.rank"),
    (b'"distributedInfo":{"rank":1.5},', "distributedInfo.rank"),
    (b'"distributedInfo":{"world_size":"\xc2\xb2"},', "distributedInfo.world_size"),
    (b'"distributedInfo":{"world_size":-2},', "distributedInfo.world_size"),
    # a duplicated key whose last copy has the wrong type
    (b'"distributedInfo":{"rank":3},"distributedInfo":"x",', "distributedInfo"),
    (b'"deviceProperties":[{"id":0}],"deviceProperties":5,', "deviceProperties"),
]


@pytest.mark.parametrize("before,key", IGNORED, ids=lambda x: repr(x)[:40])
def test_bad_descriptive_value_is_ignored_with_a_warning(before, key):
    with pytest.warns(UserWarning, match=f"trace header {key} is .*; ignored"):
        t = hta_fast.load(doc(before))
    assert t.events["name"].to_pylist() == ["op"]
    assert t.meta.rank is None or key != "distributedInfo.rank"
    assert isinstance(t.meta.devices, list) and isinstance(t.meta.distributed, dict)


def test_good_values_read_without_warning():
    before = b'"distributedInfo":{"rank":"3","world_size":8},"deviceProperties":[{"id":0}],'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = hta_fast.load(doc(before))
    assert (t.meta.rank, t.meta.world_size, t.meta.devices) == (3, 8, [{"id": 0}])


@pytest.mark.parametrize(
    "after",
    [
        b',"baseTimeNanoseconds":"x"',
        b',"baseTimeNanoseconds":{}',
        b',"baseTimeNanoseconds":5,"baseTimeNanoseconds":"x"',
        b',"baseTimeNanoseconds":5,"baseTimeNanoseconds":{"a":1}',
        b',"baseTimeNanoseconds":5,"baseTimeNanoseconds":[1]',
    ],
)
def test_bad_base_time_names_the_key(after):
    for recover in (False, True):
        with pytest.raises(TraceFormatError) as e:
            hta_fast.load(doc(after=after), recover=recover)
        assert e.value.key == "baseTimeNanoseconds" and e.value.code is ErrorCode.bad_field
        assert "baseTimeNanoseconds" in e.value.reason and not e.value.recoverable


@pytest.mark.parametrize(
    "header",
    [{"baseTimeNanoseconds": "x"}, {"baseTimeNanoseconds": {}}, {"baseTimeNanoseconds": 2.5}],
)
def test_from_header_of_another_source(header):
    # a header from elsewhere (base_time_ns None: read from the header) raises the same way
    with pytest.raises(TraceFormatError) as e:
        TraceMeta.from_header(header, "saved", 0)
    assert e.value.key == "baseTimeNanoseconds" and e.value.path == "saved"


@pytest.mark.parametrize("header", [{"baseTimeNanoseconds": "123"}, {"baseTimeNanoseconds": 7.0}])
def test_from_header_reads_integral_base_times(header):
    assert TraceMeta.from_header(header, None, 0).base_time_ns == int(
        float(header["baseTimeNanoseconds"])
    )


@pytest.mark.parametrize("where", ["before", "after"])
def test_deep_header_names_its_key(where):
    deep = b'"deep":' + b"[" * 1000 + b"]" * 1000
    text = doc(before=deep + b",") if where == "before" else doc(after=b"," + deep)
    with pytest.raises(TraceFormatError) as e:
        hta_fast.load(text)
    assert e.value.code is ErrorCode.too_deep and e.value.key == "deep"
    assert 'key "deep"' in e.value.reason


def test_header_number_beyond_64_bits_names_its_key():
    with pytest.raises(TraceFormatError) as e:
        hta_fast.load(doc(after=b',"huge":1e999'))
    assert e.value.key == "huge" and e.value.code is ErrorCode.bad_field


# --- a folder of ranks: one bad header leaves out one rank -----------------------------------
BAD_FILES = {
    "deep": doc(before=b'"x":' + b"[" * 1000 + b"]" * 1000 + b","),
    "base_time": doc(after=b',"baseTimeNanoseconds":5,"baseTimeNanoseconds":"x"'),
    "two_event_arrays": doc(after=b',"traceEvents":[]'),
}


def rank_file(rank: int, before: bytes = b"") -> bytes:
    info = json.dumps({"rank": rank, "world_size": 3}).encode()
    return doc(b'"distributedInfo":' + info + b"," + before)


@pytest.mark.parametrize("bad", sorted(BAD_FILES))
def test_folder_load_skips_a_bad_file(tmp_path, bad):
    (tmp_path / "rank0.json").write_bytes(rank_file(0))
    (tmp_path / "rank1.json").write_bytes(BAD_FILES[bad])
    (tmp_path / "rank2.json").write_bytes(rank_file(2))
    with pytest.raises(TraceFormatError):
        hta_fast.load_dir(tmp_path)
    with pytest.warns(UserWarning, match="rank1.json"):
        traces = hta_fast.load_dir(tmp_path, partial=True)
    assert traces.ranks == [0, 2]


def test_folder_load_with_odd_descriptive_values(tmp_path):
    # a rank that cannot be read from the header comes from the file name, with a warning
    (tmp_path / "rank0.json").write_bytes(rank_file(0))
    (tmp_path / "rank1.json").write_bytes(doc(b'"distributedInfo":{"rank":"\xc2\xb2"},'))
    with pytest.warns(UserWarning, match="distributedInfo.rank"):
        traces = hta_fast.load_dir(tmp_path)
    assert traces.ranks == [0, 1]
