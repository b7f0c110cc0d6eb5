"""hta_fast._arrow's conversions give what pyarrow's own give (pa.array, Table.from_pylist,
to_numpy), without importing pandas; and the small commands run without pandas."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hta_fast._arrow import array_of, as_numpy, present_values, starts_with, table_from_rows
from tests.support.paths import SHARED_TRACES

SHARED = SHARED_TRACES
SMALL = SHARED / "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"

ints = st.integers(-(2**63), 2**63 - 1)
floats = st.floats(allow_nan=False)
texts = st.text(max_size=8)


@pytest.mark.parametrize("element", [ints, floats, texts, st.booleans()])
@settings(deadline=None)
@given(data=st.data())
def test_array_of_a_list_is_pa_array(element, data):
    values = data.draw(st.lists(st.one_of(st.none(), element), max_size=20))
    expected = pa.array(values)
    got = array_of(values)
    assert got.to_pylist() == expected.to_pylist()
    if expected.type != pa.null():
        assert got.type == expected.type


@settings(deadline=None)
@given(st.lists(st.one_of(st.integers(-(2**53), 2**53), floats), min_size=1, max_size=20))
def test_ints_among_floats_count_as_floats(values):
    assert array_of(values).equals(pa.array(values))


@pytest.mark.parametrize(
    "dtype", ["int8", "uint16", "int32", "int64", "float32", "float64", "bool"]
)
@settings(deadline=None)
@given(data=st.data())
def test_array_of_numpy_and_back(dtype, data):
    values = data.draw(st.lists(st.integers(0, 100), max_size=20))
    arr = np.array(values).astype(dtype)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(arr), max_size=len(arr))), bool)
    got, expected = array_of(arr, mask=mask), pa.array(arr, mask=mask)
    assert got.equals(expected)
    for offset in range(min(3, len(arr))):
        left, right = (
            as_numpy(got.slice(offset)),
            expected.slice(offset).to_numpy(zero_copy_only=False),
        )
        np.testing.assert_array_equal(left, right)
        assert left.dtype == right.dtype
    chunked = pa.chunked_array([expected, expected])
    np.testing.assert_array_equal(as_numpy(chunked), chunked.to_numpy())


def test_casts_safely_to_the_type_asked():
    assert array_of(np.array([1, 2]), pa.float32()).type == pa.float32()
    with pytest.raises(pa.ArrowInvalid):
        array_of(np.array([1.5]), pa.int64())


def test_other_types_go_through_pyarrow():
    assert array_of([[1], [2, 3]]).type == pa.list_(pa.int64())
    np.testing.assert_array_equal(as_numpy(pa.array(["a", None])), np.array(["a", None], object))


def test_table_from_rows_is_from_pylist():
    rows = [{"a": 1, "b": "x", "c": None, "d": True}, {"a": 2, "b": None, "c": 2.5, "d": False}]
    assert table_from_rows(rows).equals(pa.Table.from_pylist(rows))


@pytest.mark.skipif(not SMALL.exists(), reason="shared traces not present")
@pytest.mark.parametrize("command", [["info"], ["doctor", "--fail-under-utilization", "0"]])
def test_small_commands_do_not_import_pandas(command):
    """pandas is a third of a second of start-up: a command that does not use it must not
    import it, not even through pyarrow's conversions."""
    probe = (
        "import sys, json\nfrom hta_fast.cli import main\n"
        f"try:\n    main(['-q', *{command[:1]!r}, {str(SMALL)!r}, *{command[1:]!r}])\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    imported = set(json.loads(out.stdout.splitlines()[-1]))
    assert "pandas" not in imported
    if command == ["info"]:  # a command that only loads: no compute kernels, no masked arrays
        probe = probe.replace("m.split('.')[0]", "m")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        assert not {"pyarrow.compute", "numpy.ma"} & set(json.loads(out.stdout.splitlines()[-1]))


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), ints), max_size=30), st.integers(0, 5))
def test_present_values_are_the_non_nulls_exactly(values, offset):
    arr = pa.array(values, pa.int64()).slice(min(offset, len(values)))
    np.testing.assert_array_equal(
        present_values(arr), np.array(arr.drop_null().to_pylist(), np.int64)
    )
    chunked = pa.chunked_array([arr, arr], pa.int64())
    assert len(present_values(chunked)) == 2 * (len(arr) - arr.null_count)


@settings(deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.text(alphabet="abé", max_size=4)), max_size=12),
    st.integers(0, 12),
    st.sampled_from(["", "a", "ab", "é", "bé", "abab"]),
    st.sampled_from([pa.string(), pa.large_string()]),
)
def test_starts_with_is_compute_s(values, offset, prefix, string_type):
    import pyarrow.compute as pc

    arr = pa.array(values, string_type).slice(min(offset, len(values)))
    expected = pc.fill_null(pc.starts_with(arr, prefix), False).to_pylist()
    assert starts_with(arr, prefix).tolist() == expected
    assert starts_with(pa.chunked_array([arr, arr], string_type), prefix).tolist() == expected * 2


@settings(deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=20))
def test_rank_info_counts_distinct_values_as_unique_does(values):
    from hta_fast.loading.rank_info import _distinct

    assert _distinct(np.array(values, np.int64)) == len(np.unique(values))
