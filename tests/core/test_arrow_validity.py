"""_core.validity, the Arrow validity bitmap of a column with a sentinel for null, against
numpy's packbits of the same mask: every dtype the columns use, every length (the last,
partial byte), nulls anywhere or nowhere."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from hta_fast import _core


def sentinel(dtype) -> np.generic:
    """-1 in the dtype (255 for uint8); floats' nulls are NaN whatever the sentinel."""
    return np.array(-1).astype(dtype)[()]


def expected_bits(values: np.ndarray) -> np.ndarray | None:
    null = np.isnan(values) if values.dtype.kind == "f" else values == sentinel(values.dtype)
    if not null.any():
        return None
    return np.packbits(~null, bitorder="little")


@given(
    dtype=st.sampled_from([np.int64, np.int32, np.uint8, np.float32, np.float64]),
    nulls=st.lists(st.booleans(), max_size=70),
)
def test_validity_is_the_packed_mask_of_non_nulls(dtype, nulls):
    values = np.arange(1, len(nulls) + 1).astype(dtype)
    values[np.array(nulls, bool)] = np.nan if np.dtype(dtype).kind == "f" else sentinel(dtype)
    got = _core.validity(values, sentinel(dtype))
    want = expected_bits(values)
    if want is None:
        assert got is None
    else:
        assert got is not None
        np.testing.assert_array_equal(np.asarray(got), want)


def test_a_null_only_in_the_last_partial_byte_is_seen():
    values = np.arange(1, 20, dtype=np.int64)
    values[-1] = -1
    bits = np.asarray(_core.validity(values, np.int64(-1)))
    assert len(bits) == 3 and bits[-1] == 0b011
