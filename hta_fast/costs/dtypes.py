"""The size of a dtype: one table for every spelling a trace writes.

Traces name one dtype several ways: operator shapes record C++ types (`Input type`:
"float", "c10::Half", "long int"), collective arguments record torch's ScalarType names
("Float", "BFloat16"), NCCL kernel names end with C types or short codes ("int8_t", "f32"),
and NCCL's own enum is spelled "ncclFloat16". Each spelling maps to one canonical name, and
the canonical name to its size in bytes and the math precision it computes in (the key into
a device's peak table; None for a dtype with no peak of its own, the integers but int8).
"""

from __future__ import annotations

from typing import Optional

# canonical name: (bytes per element, math precision, the other spellings, lower case)
_DTYPES: dict[str, tuple[int, Optional[str], tuple[str, ...]]] = {
    "float64": (8, "fp64", ("double", "f64")),
    "float32": (4, "fp32", ("float", "f32")),
    "float16": (2, "fp16", ("half", "f16")),
    "bfloat16": (2, "bf16", ("bf16",)),
    "float8_e4m3fn": (1, "fp8", ("fp8_e4m3", "float8e4m3", "f8e4m3")),
    "float8_e5m2": (1, "fp8", ("fp8_e5m2", "float8e5m2", "f8e5m2")),
    "float8_e4m3fnuz": (1, "fp8", ()),
    "float8_e5m2fnuz": (1, "fp8", ()),
    "float8_e8m0fnu": (1, None, ()),
    "float4_e2m1fn_x2": (1, None, ()),  # two 4-bit values packed in each element
    "int64": (8, None, ("long", "long int", "int64_t", "i64")),
    "int32": (4, None, ("int", "int32_t", "i32")),
    "int16": (2, None, ("short", "short int", "int16_t")),
    "int8": (1, "int8", ("char", "signed char", "int8_t", "i8")),
    "uint64": (8, None, ("unsigned long", "uint64_t", "u64")),
    "uint32": (4, None, ("unsigned int", "uint32_t", "u32")),
    "uint16": (2, None, ("unsigned short", "uint16_t")),
    "uint8": (1, "int8", ("byte", "unsigned char", "uint8_t", "u8")),
    "bool": (1, None, ()),
    "complex128": (16, "fp64", ("complexdouble", "complex<double>")),
    "complex64": (8, "fp32", ("complexfloat", "complex<float>")),
    "complex32": (4, None, ("complexhalf", "complex<half>")),
    "qint32": (4, None, ()),
    "qint8": (1, None, ()),
    "quint8": (1, None, ()),
}
_CANONICAL = {
    alias: name for name, (_, _, aliases) in _DTYPES.items() for alias in (name, *aliases)
}
# Namespaces in front of a dtype's name ("c10::Half", "torch.float32", "ncclFloat16",
# "__nv_bfloat16"); stripped before the look-up.
_PREFIXES = ("torch.", "at::", "nccl", "__nv_")

# torch's ScalarType codes, as `dtype` arguments appear in Concrete Inputs.
_SCALAR_TYPES = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    8: "complex32",
    9: "complex64",
    10: "complex128",
    11: "bool",
    12: "qint8",
    13: "quint8",
    14: "qint32",
    15: "bfloat16",
    23: "float8_e5m2",
    24: "float8_e4m3fn",
    25: "float8_e5m2fnuz",
    26: "float8_e4m3fnuz",
}


def canonical(dtype: Optional[str]) -> Optional[str]:
    """The canonical name of a dtype spelling ("c10::Half" -> "float16"); None if unknown."""
    if not isinstance(dtype, str) or not dtype:
        return None
    key = dtype.strip().lower().replace("c10::", "")
    name = _CANONICAL.get(key)
    if name is None:
        for prefix in _PREFIXES:
            if key.startswith(prefix):
                return _CANONICAL.get(key[len(prefix) :])
    return name


def itemsize(dtype: Optional[str]) -> Optional[int]:
    """Bytes per element of a dtype spelling; None if unknown."""
    name = canonical(dtype)
    return None if name is None else _DTYPES[name][0]


def precision(dtype: Optional[str]) -> Optional[str]:
    """The math precision a dtype computes in ("fp32", "bf16", ...); None if it has none."""
    name = canonical(dtype)
    return None if name is None else _DTYPES[name][1]


def scalar_type_itemsize(code: int) -> Optional[int]:
    """Bytes per element of a torch ScalarType code (6 -> 4, float32); None if unknown."""
    name = _SCALAR_TYPES.get(code)
    return None if name is None else _DTYPES[name][0]
