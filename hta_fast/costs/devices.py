"""The device table: peak math throughput per precision and memory bandwidth of GPUs, keyed
by the name a trace's deviceProperties give (see devices.json for the numbers and their
sources). A user file in the same format overrides or extends it: its entries are tried
first.
"""

from __future__ import annotations

import dataclasses
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

if TYPE_CHECKING:
    from ..trace import Trace

TABLE = Path(__file__).with_name("devices.json")
PRECISIONS = ("fp64", "fp64_matrix", "fp32", "fp32_matrix", "tf32", "bf16", "fp16", "fp8", "int8")


@dataclasses.dataclass(frozen=True)
class Device:
    """key          the table's name for it ("H100-SXM")
    tflops          dense peak TFLOP/s by precision ("fp32", "bf16", ...; see PRECISIONS)
    memory_gbps     peak memory bandwidth, GB/s (10^9 B/s)
    source          the vendor document the numbers come from
    provenance      figure ("memory_gbps", "fp32", "launch_floor_ns", ...) -> where it comes
                    from, for each figure that source does not print (derived, a
                    whitepaper, measured, ...)
    launch_floor_ns the shortest time a kernel takes on it whatever its work (launch and
                    teardown), where measured on a trace recorded there (None: unknown);
                    kernel prediction moves the latency part of a kernel's time to it
    cache_mb        the last-level cache in front of device memory, MB (L2; AMD's Infinity
                    Cache), where a source gives it: data held there moves without memory
                    traffic, so a memory-bound call may beat memory_gbps by that much
    stands_in       where the table has no figures of this device's own: which entry's
                    figures price it and why (None: its own figures)
    """

    key: str
    vendor: str
    tflops: Mapping[str, float]
    memory_gbps: float
    source: str
    provenance: Optional[Mapping[str, str]] = None
    launch_floor_ns: Optional[float] = None
    cache_mb: Optional[float] = None
    # set on an entry whose figures are another entry's: why that one stands in for it
    stands_in: Optional[str] = None

    def figure_source(self, figure: str) -> str:
        """Where one figure ("memory_gbps" or a precision) comes from: its provenance note,
        else the datasheet of `source`."""
        return (self.provenance or {}).get(figure, f"datasheet: {self.source}")

    def peak_flops(self, precision: str, matrix: bool, allow_tf32: bool = False) -> float:
        """Peak FLOP/s for work in `precision`, on matrix units when `matrix` (GEMMs,
        convolutions, attention) and the device has them. FP32 GEMMs use TF32 peaks only
        when allow_tf32 (PyTorch's default leaves it off for matmuls). Falls back to the
        vector peak of the precision, then to FP32's; 0 when nothing is known."""
        t = self.tflops
        order: list[str] = []
        if matrix:
            if precision == "fp32":
                order += (["tf32"] if allow_tf32 else []) + ["fp32_matrix"]
            elif precision == "fp64":
                order.append("fp64_matrix")
        order += [precision, "fp32"]
        for p in order:
            if t.get(p):
                return float(t[p]) * 1e12
        return 0.0

    @property
    def memory_bytes_per_s(self) -> float:
        return float(self.memory_gbps) * 1e9


@dataclasses.dataclass(frozen=True)
class _Entry:
    device: Device
    pattern: re.Pattern
    min_memory_gb: Optional[float]
    max_memory_gb: Optional[float]
    sms: Optional[int]
    # deviceProperties fields (computeMajor, numSms, ...) and a memory range that identify
    # the device where a trace leaves its name empty (ROCm builds of vLLM write "")
    identify: Optional[Mapping[str, Any]] = None

    def matches(self, props: Mapping[str, Any]) -> bool:
        """Whether the device's name matches (with the memory and SM bounds)."""
        name = str(props.get("name", "")).lower()
        if not name.strip() or not self.pattern.search(name):
            return False
        gb = _memory_gb(props)
        if self.min_memory_gb is not None and (gb is None or gb < self.min_memory_gb):
            return False
        if self.max_memory_gb is not None and (gb is None or gb > self.max_memory_gb):
            return False
        if self.sms is not None and props.get("numSms") != self.sms:
            return False
        return True

    def identifies(self, props: Mapping[str, Any]) -> Optional[str]:
        """For a device whose name matches no entry: the fields that identify it as this
        one (every identifying field as listed, its memory in the listed range), or None."""
        if not self.identify:
            return None
        gb = _memory_gb(props)
        low, high = self.identify.get("memory_gb", (None, None))
        if gb is None or (low is not None and gb < low) or (high is not None and gb > high):
            return None
        fields = {k: v for k, v in self.identify.items() if k != "memory_gb"}
        if not fields or any(props.get(k) != v for k, v in fields.items()):
            return None
        said = ", ".join(f"{k} {v}" for k, v in fields.items())
        return f"{said}, totalGlobalMem {gb:.0f} GB (in {low:g}-{high:g})"


def _memory_gb(props: Mapping[str, Any]) -> Optional[float]:
    mem = props.get("totalGlobalMem")
    return mem / 1e9 if isinstance(mem, (int, float)) else None


class DeviceTable:
    """Entries in match order. `DeviceTable.load(user_file)` puts a user's entries first."""

    def __init__(self, entries: list[_Entry]):
        self.entries = entries

    @staticmethod
    def load(user_file: Union[str, Path, None] = None) -> "DeviceTable":
        entries = list(_builtin())
        if user_file is not None:
            entries = _read(Path(user_file)) + entries
        return DeviceTable(entries)

    def match(self, props: Mapping[str, Any]) -> Optional[Device]:
        """The device a trace's deviceProperties entry describes, or None: by name, else
        (a name empty or in no entry, as ROCm builds of vLLM write) by its other fields."""
        found = self._match(props)
        return found[0] if found else None

    def how_matched(self, props: Mapping[str, Any]) -> Optional[str]:
        """How `match` chose where that is not the device's own name and figures: the
        fields that identified an unnamed device, the entry whose figures stand in. None
        when matched plainly by name, or not at all."""
        found = self._match(props)
        if not found:
            return None
        dev, fields = found
        parts = []
        if fields:
            name = str(props.get("name", ""))
            said = "name empty" if not name.strip() else f"name {name!r} in no entry"
            parts.append(f"{dev.key} identified from deviceProperties ({said}): {fields}")
        if dev.stands_in:
            parts.append(f"{dev.key} {dev.stands_in}")
        return "; ".join(parts) or None

    def _match(self, props: Mapping[str, Any]) -> Optional[tuple[Device, Optional[str]]]:
        for e in self.entries:
            if e.matches(props):
                return e.device, None
        for e in self.entries:
            fields = e.identifies(props)
            if fields:
                return e.device, fields
        return None

    def get(self, name: str) -> Device:
        """A device by table key ("H100-SXM", case-insensitive) or by a device name as a
        trace spells it ("NVIDIA H100 80GB HBM3"). ValueError names the known keys."""
        for e in self.entries:
            if e.device.key.lower() == name.lower():
                return e.device
        found = self.match({"name": name})
        if found is None:
            raise ValueError(
                f"unknown device {name!r}; known: {', '.join(e.device.key for e in self.entries)}"
            )
        return found

    def keys(self) -> list[str]:
        return [e.device.key for e in self.entries]


def trace_device(
    trace: Trace, table: Optional[DeviceTable] = None, device_id: int = 0
) -> Optional[Device]:
    """The device of a trace (its deviceProperties entry `device_id`, else its first)."""
    props = _trace_props(trace, device_id)
    return (table or DeviceTable.load()).match(props) if props is not None else None


def trace_device_note(
    trace: Trace, table: Optional[DeviceTable] = None, device_id: int = 0
) -> Optional[str]:
    """`DeviceTable.how_matched` for the device `trace_device` returns."""
    props = _trace_props(trace, device_id)
    return (table or DeviceTable.load()).how_matched(props) if props is not None else None


def _trace_props(trace: Trace, device_id: int) -> Optional[Mapping[str, Any]]:
    devices = trace.meta.devices
    props = next(
        (d for d in devices if isinstance(d, dict) and d.get("id") == device_id),
        devices[0] if devices else None,
    )
    return props if isinstance(props, dict) else None


@lru_cache(maxsize=1)
def _builtin() -> tuple[_Entry, ...]:
    return tuple(_read(TABLE))


def _read(path: Path) -> list[_Entry]:
    try:
        doc = json.loads(path.read_text())
        rows = doc["devices"]
        own = [r for r in rows if "stands_in" not in r]
        entries = {id(r): _entry(r) for r in own}
        known = {e.device.key: e.device for e in entries.values()}
        if path != TABLE:
            known = {**{e.device.key: e.device for e in _builtin()}, **known}
        for r in rows:
            if "stands_in" in r:
                entries[id(r)] = _stand_in(r, known)
        return [entries[id(r)] for r in rows]
    except FileNotFoundError:
        raise ValueError(f"{path}: device table file not found") from None
    except (ValueError, KeyError, TypeError, re.error) as e:
        expected = '{"devices": [{"key", "match", "memory_gbps", "tflops"}, ...]}'
        raise ValueError(
            f"{path}: not a device table ({type(e).__name__}: {e}); expected {expected}"
        ) from None


def _stand_in(r: Mapping[str, Any], known: Mapping[str, Device]) -> _Entry:
    """An entry priced with another entry's figures (`stands_in`: its key; `why`)."""
    other = known.get(str(r["stands_in"]))
    if other is None:
        raise ValueError(f"device {r['key']!r}: stands_in {r['stands_in']!r} is no entry")
    why = str(r.get("why", "")).strip()
    note = f"is priced with {other.key}'s figures" + (f": {why}" if why else "")
    dev = dataclasses.replace(other, key=str(r["key"]), stands_in=note)
    return _Entry(dev, re.compile(str(r["match"])), None, None, None)


def _entry(r: Mapping[str, Any]) -> _Entry:
    tflops = {k: float(v) for k, v in r["tflops"].items()}
    unknown = set(tflops) - set(PRECISIONS)
    if unknown:
        raise ValueError(f"device {r['key']!r}: unknown precision(s) {sorted(unknown)}")
    provenance = {str(k): str(v) for k, v in r.get("provenance", {}).items()}
    if r.get("cache_mb") is not None:
        if not r.get("cache_source"):
            raise ValueError(f"device {r['key']!r}: cache_mb without its cache_source")
        provenance["cache_mb"] = str(r["cache_source"])
    unknown = set(provenance) - set(PRECISIONS) - {"memory_gbps", "launch_floor_ns", "cache_mb"}
    if unknown:
        raise ValueError(f"device {r['key']!r}: provenance of unknown figure(s) {sorted(unknown)}")
    dev = Device(
        key=str(r["key"]),
        vendor=str(r.get("vendor", "")),
        tflops=tflops,
        memory_gbps=float(r["memory_gbps"]),
        source=str(r.get("source", "")),
        provenance=provenance,
        launch_floor_ns=None if r.get("launch_floor_ns") is None else float(r["launch_floor_ns"]),
        cache_mb=None if r.get("cache_mb") is None else float(r["cache_mb"]),
    )
    return _Entry(
        dev,
        re.compile(str(r.get("match", re.escape(dev.key.lower())))),
        r.get("min_memory_gb"),
        r.get("max_memory_gb"),
        r.get("sms"),
        r.get("identify"),
    )
