"""The typed boundary between the C++ core and Python: hta_fast/_core.pyi is the contract.

stubtest checks the stub against the compiled module (classes, fields, read-only properties);
what it cannot see here is checked with `ast`: the parameters of pybind11 functions (which
carry their signature only in their docstring) and the values of enum members. Then the
contract's content: loads return a LoadedTrace with read-only fields, errors carry codes and
offsets (None when unknown), and the column specs declared in C++ describe exactly the
columns a load returns."""

from __future__ import annotations

import ast
import enum
import math
import subprocess
import sys

import numpy as np
import pytest

import hta_fast
from hta_fast import _core, schema
from hta_fast.errors import NOT_A_TRACE, ErrorCode, TraceFormatError
from tests.support.paths import REPO

ROOT = REPO
STUB = ast.parse((ROOT / "hta_fast" / "_core.pyi").read_text())
TRACE = (
    b'{"schemaVersion": 1, "traceEvents": ['
    b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2},'
    b'{"ph": "s", "cat": "ac2g", "name": "f", "id": 3, "pid": 1, "tid": 1, "ts": 1}],'
    b' "baseTimeNanoseconds": 1000}'
)


def stub_class(name: str) -> ast.ClassDef:
    return next(n for n in STUB.body if isinstance(n, ast.ClassDef) and n.name == name)


@pytest.mark.slow  # runs mypy.stubtest
def test_stubtest_passes():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "hta_fast._core",
            "--allowlist",
            str(ROOT / "tests" / "core_stubtest_allowlist.txt"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def _runtime_parameters(fn) -> list[list[str]]:
    """Parameter names of each overload, from the signature pybind11 writes in the docstring."""
    lines = [line.split(". ", 1)[-1] for line in (fn.__doc__ or "").splitlines()]
    name = fn.__name__
    sigs = [line for line in lines if line.startswith(f"{name}(") and "*args" not in line]
    out = []
    for sig in sigs:
        tree = ast.parse(f"def {sig.split(' -> ')[0]}: pass")
        out.append([a.arg for a in tree.body[0].args.args if a.arg != "self"])
    return out


def _stub_functions() -> list:
    """(runtime function, its stub) for the module's functions, the submodules' (stubbed as
    classes of static methods: ops -> _Ops, graph -> _Graph) and the graph's methods."""
    params = [
        pytest.param(getattr(_core, n.name), n, id=n.name)
        for n in STUB.body
        if isinstance(n, ast.FunctionDef)
    ]
    for owner, cls in (
        (_core.ops, "_Ops"),
        (_core.graph, "_Graph"),
        (_core.graph.Graph, "_DependencyGraph"),
    ):
        for n in stub_class(cls).body:
            if isinstance(n, ast.FunctionDef) and not any(
                ast.unparse(d) == "property" for d in n.decorator_list
            ):
                params.append(pytest.param(getattr(owner, n.name), n, id=f"{cls}.{n.name}"))
    return params


@pytest.mark.parametrize("fn,stub", _stub_functions())
def test_function_parameters_match_the_stub(fn, stub):
    declared = [a.arg for a in stub.args.args if a.arg != "self"]
    overloads = _runtime_parameters(fn)
    assert overloads, fn.__doc__
    assert all(params == declared for params in overloads), (overloads, declared)


def _stub_enums() -> list[ast.ClassDef]:
    return [
        n
        for n in STUB.body
        if isinstance(n, ast.ClassDef)
        and any(ast.unparse(b) in ("enum.Enum", "enum.IntEnum") for b in n.bases)
    ]


SUBMODULE_ENUMS = ("_EdgeType", "_SyncKind")


@pytest.mark.parametrize("cls", _stub_enums(), ids=lambda c: c.name)
def test_enum_members_match_the_stub(cls):
    declared = {
        t.targets[0].id: ast.literal_eval(t.value) for t in cls.body if isinstance(t, ast.Assign)
    }
    # The graph submodule's enums are stubbed as _EdgeType / _SyncKind (aliased in _Graph).
    runtime = getattr(_core.graph, cls.name[1:]) if cls.name in SUBMODULE_ENUMS else None
    runtime = runtime or getattr(_core, cls.name)
    assert issubclass(runtime, enum.Enum)
    assert {m.name: m.value for m in runtime} == declared


def test_every_stub_name_exists_at_runtime():
    for node in STUB.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and not node.name.startswith("_"):
            assert hasattr(_core, node.name), node.name


# --- the load ---------------------------------------------------------------------------
def test_load_returns_a_loaded_trace_with_read_only_fields():
    loaded = _core.load_bytes(TRACE)
    assert isinstance(loaded, _core.LoadedTrace)
    fields = [n.name for n in stub_class("LoadedTrace").body if isinstance(n, ast.FunctionDef)]
    assert fields
    for name in fields:
        getattr(loaded, name)
        with pytest.raises(AttributeError):
            setattr(loaded, name, None)
    assert loaded.header == {"schemaVersion": 1, "baseTimeNanoseconds": 1000}
    assert loaded.base_time_ns == 1000
    assert loaded.tables["events"]["ts"].tolist() == [2000]
    assert loaded.json_bytes == len(TRACE) and loaded.array_format is False


def test_meta_comes_from_the_core_header():
    t = hta_fast.load(TRACE)
    assert t.meta.header == {"schemaVersion": 1, "baseTimeNanoseconds": 1000}
    assert t.meta.base_time_ns == 1000


# --- errors -----------------------------------------------------------------------------
def test_format_error_carries_code_offset_and_reason():
    with pytest.raises(_core.FormatError) as ei:
        _core.load_bytes(b"hello")
    e = ei.value
    assert isinstance(e, ValueError)
    assert e.code is ErrorCode.not_json and e.offset == 0 and e.args == (e.reason,)


def test_unknown_offset_is_none_all_the_way_up(tmp_path):
    p = tmp_path / "t.json"
    p.write_bytes(b'{"traceName": "x"}')
    with pytest.raises(TraceFormatError) as ei:
        hta_fast.load(p)
    e = ei.value
    assert e.code is ErrorCode.not_a_trace and e.code in NOT_A_TRACE
    assert e.offset is None and "at byte" not in str(e) and str(p) in str(e)


def test_error_codes_are_declared_once_in_the_core():
    assert ErrorCode is _core.ErrorCode
    assert {c.name for c in ErrorCode} >= {
        "empty",
        "not_json",
        "not_a_trace",
        "truncated",
        "bad_field",
        "too_deep",
    }


def test_no_python_code_reads_error_kinds_from_messages():
    for path in (ROOT / "hta_fast").rglob("*.py"):
        text = path.read_text()
        assert "reason.startswith" not in text, path
        assert ".args[0].startswith" not in text, path


# --- columns ----------------------------------------------------------------------------
def test_column_specs_describe_exactly_the_loaded_columns():
    loaded = _core.load_bytes(TRACE)
    declared = {(s.table, s.name): s for s in _core.column_specs()}
    returned = {(t, c): v for t, cols in loaded.tables.items() for c, v in cols.items()}
    assert declared.keys() == returned.keys()
    for key, spec in declared.items():
        values = returned[key]
        assert values.dtype == np.dtype(spec.type), key
        if spec.role is _core.ColumnRole.enum:
            assert spec.labels and spec.sentinel is None, key
        if values.dtype.kind == "f" and spec.sentinel is not None:
            assert math.isnan(spec.sentinel), key
    assert schema.COLUMNS.keys() == declared.keys()


def test_enums_are_the_cores():
    assert schema.EventKind is _core.EventKind and schema.KernelClass is _core.KernelClass
    assert issubclass(schema.EventKind, enum.IntEnum)
    assert schema.KernelClass["COMM"] == 2 and schema.EventKind.kernel == 6
    labels = dict(schema.COLUMNS[("events", "kind")].labels)
    assert labels == {k.value: k.name for k in schema.EventKind}
    assert schema.EventKind.kernel in schema.GPU_KINDS
    assert schema.EventKind.cpu_op not in schema.GPU_KINDS


def test_arrow_tables_follow_the_specs():
    t = hta_fast.load(TRACE)
    assert t.events["kind"].to_pylist() == ["kernel"]
    assert t.events["kernel_class"].to_pylist() == ["COMP"]
    assert t.flows["phase"].to_pylist() == ["s"]
    assert t.flows["event"].to_pylist() == [None]  # sentinel -> null
    assert t.events.schema.field("ts").metadata[b"unit"] == b"ns"
    assert schema.STRING_ID_BASE == -(1 << 32)


def test_a_save_and_a_cache_entry_read_back_as_loaded(tmp_path):
    # a save holds the same raw columns (RawColumns) and the base time the core applied
    p = tmp_path / "t.json"
    p.write_bytes(TRACE)
    t = hta_fast.load(p)
    t.save(tmp_path / "saved")
    for back in (
        hta_fast.load(tmp_path / "saved"),
        hta_fast.load(p, cache=True, cache_dir=tmp_path / "cache"),
        hta_fast.load(p, cache=True, cache_dir=tmp_path / "cache"),
    ):
        assert back.meta == t.meta
        for name, table in t.named_tables().items():
            assert getattr(back, name).equals(table), name
        assert back.stats.equals(t.stats)
