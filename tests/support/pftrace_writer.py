"""A Kineto JSON event list written as a Perfetto protobuf trace with Perfetto's own Python
protos (tests/loading/test_pftrace.py, benchmarks/bench_pftrace.py)."""

from __future__ import annotations

import json
from typing import Any, Iterable, Optional

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

SEQ = 1
TE = pb.TrackEvent

# What the flows written here do not carry: Perfetto flows have no name or category, and so
# bind by correlation only (table_rows(..., flow_drops=FLOW_DROPS) leaves these out).
FLOW_DROPS = ("cat", "name", "event")


def _ns(us: float) -> int:
    return int(round(us * 1000))


def _annotation(a: Any, name: str, value: Any) -> bool:
    """Fills a DebugAnnotation from a JSON argument; False for a value with no protobuf form."""
    if name:
        a.name = name
    if isinstance(value, bool):
        a.bool_value = value
    elif isinstance(value, int):
        if value > 2**63 - 1:
            a.uint_value = value
        else:
            a.int_value = value
    elif isinstance(value, float):
        a.double_value = value
    elif isinstance(value, str):
        a.string_value = value
    elif isinstance(value, list) and value and all(type(v) is int for v in value):
        for v in value:
            a.array_values.add().int_value = v
    elif isinstance(value, (list, dict)):
        a.legacy_json_value = json.dumps(value)
    else:
        return False
    return True


class Writer:
    """Packets of one sequence, with names interned (and the interning reset every
    `reset_every` packets) when asked."""

    def __init__(self, intern: bool, reset_every: int) -> None:
        self.trace = pb.Trace()
        self.intern = intern
        self.reset_every = reset_every
        self.count = 0
        self.iids: dict[tuple[str, str], int] = {}

    def packet(self) -> Any:
        p = self.trace.packet.add()
        p.trusted_packet_sequence_id = SEQ
        if self.count == 0 or (self.reset_every and self.count % self.reset_every == 0):
            p.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
            self.iids.clear()
        else:
            p.sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        self.count += 1
        return p

    def _iid(self, p: Any, kind: str, text: str) -> int:
        """The iid of `text`, interned in this packet if new since the last reset."""
        key = (kind, text)
        if key not in self.iids:
            self.iids[key] = len([k for k in self.iids if k[0] == kind]) + 1
            entry = getattr(p.interned_data, kind).add()
            entry.iid = self.iids[key]
            entry.name = text
        return self.iids[key]

    def event(
        self,
        ts_ns: int,
        kind: int,
        track: int,
        name: Optional[str] = None,
        cat: Optional[str] = None,
        args: Optional[dict[str, Any]] = None,
    ) -> Any:
        p = self.packet()
        p.timestamp = ts_ns
        e = p.track_event
        e.type = kind
        e.track_uuid = track
        if name is not None:
            if self.intern:
                e.name_iid = self._iid(p, "event_names", name)
            else:
                e.name = name
        if cat is not None:
            if self.intern:
                e.category_iids.append(self._iid(p, "event_categories", cat))
            else:
                e.categories.append(cat)
        for k, v in (args or {}).items():
            a = e.debug_annotations.add()
            if not _annotation(a, "" if self.intern else k, v):
                del e.debug_annotations[-1]
            elif self.intern:
                a.name_iid = self._iid(p, "debug_annotation_names", k)
        return e


def to_pftrace(
    events: Iterable[dict[str, Any]], intern: bool = False, reset_every: int = 0
) -> bytes:
    """A Perfetto Trace of the same run as a Kineto JSON event list.

    Process and thread M events become process and thread tracks; X events slice begin/end
    pairs on their thread's track (a slice that does not nest goes to a child track of the
    thread, as the SDK's async tracks do); i events instants; C events one counter track
    per series under a track named by the event; s/f flows the flow_ids /
    terminating_flow_ids of the slice on their thread that begins at their ts."""
    events = list(events)
    w = Writer(intern, reset_every)
    uuid = iter(range(1000, 10**12))
    meta: dict[tuple[str, int, int], Any] = {}
    threads: set[tuple[int, int]] = set()
    for ev in events:
        if ev.get("ph") == "M":
            meta[(ev["name"], ev["pid"], ev.get("tid", 0))] = ev["args"]
        elif "pid" in ev and "tid" in ev:
            threads.add((ev["pid"], ev["tid"]))
    for (what, pid, tid), _ in meta.items():
        if what.startswith("thread_"):
            threads.add((pid, tid))
    pids = sorted({pid for pid, _ in threads} | {pid for (_, pid, _) in meta}, key=str)

    def valid_id(x: Any) -> bool:
        return type(x) is int and -(2**31) <= x < 2**31

    process_track: dict[int, int] = {}
    for pid in pids:
        if not valid_id(pid):
            continue
        p = w.packet()
        d = p.track_descriptor
        d.uuid = process_track[pid] = next(uuid)
        d.process.pid = pid
        args = meta.get(("process_name", pid, 0))
        if args:
            d.process.process_name = args["name"]
        if ("process_sort_index", pid, 0) in meta:
            d.process.legacy_sort_index = meta[("process_sort_index", pid, 0)]["sort_index"]
        if ("process_labels", pid, 0) in meta:
            d.process.process_labels.extend(meta[("process_labels", pid, 0)]["labels"].split(","))
    thread_track: dict[tuple[int, int], int] = {}
    for pid, tid in sorted(threads, key=str):
        if not (valid_id(pid) and valid_id(tid)):
            continue
        p = w.packet()
        d = p.track_descriptor
        d.uuid = thread_track[(pid, tid)] = next(uuid)
        d.parent_uuid = process_track[pid]
        d.thread.pid = pid
        d.thread.tid = tid
        if ("thread_name", pid, tid) in meta:
            d.thread.thread_name = meta[("thread_name", pid, tid)]["name"]
        if ("thread_sort_index", pid, tid) in meta:
            d.thread.legacy_sort_index = meta[("thread_sort_index", pid, tid)]["sort_index"]

    flows_at: dict[tuple[int, int, int], list[tuple[str, int]]] = {}
    for ev in events:
        if ev.get("ph") in ("s", "f"):
            key = (ev["pid"], ev["tid"], _ns(ev["ts"]))
            flows_at.setdefault(key, []).append((ev["ph"], ev["id"]))

    # Slices, per thread, in begin order (the longer first where two begin together).
    slices: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for ev in events:
        if ev.get("ph") == "X" and (ev["pid"], ev["tid"]) in thread_track:
            slices.setdefault((ev["pid"], ev["tid"]), []).append(ev)
    for key, evs in slices.items():
        evs.sort(key=lambda e: (_ns(e["ts"]), -_ns(e.get("dur", 0))))
        # (track, stack of open ends): the thread's own track first
        lanes: list[tuple[int, list[int]]] = [(thread_track[key], [])]
        for ev in evs:
            start = _ns(ev["ts"])
            end = start + _ns(ev.get("dur", 0))
            for track, stack in lanes:
                while stack and stack[-1] <= start:
                    w.event(stack.pop(), TE.TYPE_SLICE_END, track)
                if not stack or stack[-1] >= end:
                    break
            else:
                d = w.packet().track_descriptor
                d.uuid = next(uuid)
                d.parent_uuid = thread_track[key]
                lanes.append((d.uuid, []))
                track, stack = lanes[-1]
            e = w.event(
                start, TE.TYPE_SLICE_BEGIN, track, ev.get("name"), ev.get("cat"), ev.get("args")
            )
            for ph, fid in flows_at.pop((key[0], key[1], start), []):
                (e.flow_ids if ph == "s" else e.terminating_flow_ids).append(fid)
            stack.append(end)
        for track, stack in lanes:
            while stack:
                w.event(stack.pop(), TE.TYPE_SLICE_END, track)

    global_track: Optional[int] = None
    counter_tracks: dict[tuple[int, int, str, str], int] = {}
    for ev in events:
        ph = ev.get("ph")
        if ph == "i":
            scope = ev.get("s", "t")
            if scope == "t":
                track = thread_track.get((ev.get("pid"), ev.get("tid")), 0)
            elif scope == "p":
                track = process_track.get(ev.get("pid"), 0)
            else:
                if global_track is None:
                    global_track = next(uuid)
                    w.packet().track_descriptor.uuid = global_track
                track = global_track
            if not track:
                continue  # on an id Perfetto cannot hold
            w.event(
                _ns(ev["ts"]), TE.TYPE_INSTANT, track, ev.get("name"), ev.get("cat"), ev.get("args")
            )
        elif ph == "C":
            parent = thread_track.get((ev.get("pid"), ev.get("tid")), 0)
            numbers = {k: v for k, v in ev.get("args", {}).items() if type(v) in (int, float)}
            if not parent:
                continue
            for series, value in numbers.items():
                key4 = (ev["pid"], ev["tid"], ev["name"], series)
                if key4 not in counter_tracks:
                    group = (ev["pid"], ev["tid"], ev["name"], "")
                    if group not in counter_tracks:
                        d = w.packet().track_descriptor
                        d.uuid = counter_tracks[group] = next(uuid)
                        d.parent_uuid = parent
                        d.name = ev["name"]
                    d = w.packet().track_descriptor
                    d.uuid = counter_tracks[key4] = next(uuid)
                    d.parent_uuid = counter_tracks[group]
                    d.name = series
                    d.counter.SetInParent()
                p = w.packet()
                p.timestamp = _ns(ev["ts"])
                p.track_event.type = TE.TYPE_COUNTER
                p.track_event.track_uuid = counter_tracks[key4]
                p.track_event.double_counter_value = float(value)
    return w.trace.SerializeToString()
