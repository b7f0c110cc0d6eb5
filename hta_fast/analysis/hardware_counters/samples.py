"""The hardware counter samples of a trace: the counter events (ph C) that Kineto's CUPTI PM
sampling writes on a track of their own per device.

Kineto (libkineto/src/output_json.cpp, ChromeTraceLogger::handleCounterEvent) writes each
sampled metric as one counter event: cat "hardware_counters", name the CUPTI metric as the
user configured it (CUPTI_PM_SAMPLING_METRICS, e.g. sm__cycles_active.avg), pid the string
"GPU N Counters" (N the CUDA device), ts the sample's start, and the value under the empty
args key. The loader keeps them in the counters table (name, series "", value) with the
pid as a string id; this module turns the track name back into the device. The track holds
counters only: it is no stream and no thread of the events table.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from ...trace import Trace

__all__ = ["COUNTER_TRACK", "CounterSamples", "counter_samples", "counter_track_devices"]

# The track Kineto writes a device's hardware counters on.
COUNTER_TRACK = re.compile(r"GPU (\d+) Counters")


class CounterSamples(NamedTuple):
    """Hardware counter samples of one trace, sorted by device, metric, then time.

    device   the CUDA device of the track ("GPU N Counters")
    metric   index into metrics of the sample's metric
    ts       the sample's start (ns)
    value    the metric's value over the sample (its unit is the metric's own)
    metrics  the metric names (CUPTI's, as written in the trace), sorted
    """

    device: np.ndarray
    metric: np.ndarray
    ts: np.ndarray
    value: np.ndarray
    metrics: tuple[str, ...]

    def of(self, device: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(ts, value) of one metric on one device, in time order."""
        if name not in self.metrics:
            return self.ts[:0], self.value[:0]
        keep = (self.device == device) & (self.metric == self.metrics.index(name))
        return self.ts[keep], self.value[keep]

    def names(self, device: int) -> list[str]:
        """The metrics sampled on a device, in name order."""
        return [self.metrics[i] for i in np.unique(self.metric[self.device == device]).tolist()]


def counter_track_devices(trace: Trace) -> dict[int, int]:
    """pid (string id) -> device, for every counter track named "GPU N Counters"."""
    pids = np.unique(trace.column("counters", "pid"))
    out = {}
    for pid in pids.tolist():
        name = trace.id_name(pid)
        m = COUNTER_TRACK.fullmatch(name) if name is not None else None
        if m is not None:
            out[int(pid)] = int(m.group(1))
    return out


def counter_samples(trace: Trace) -> CounterSamples:
    """Every sample on a "GPU N Counters" track; empty where the trace has none."""
    tracks = counter_track_devices(trace)
    pid = trace.column("counters", "pid")
    rows = np.flatnonzero(np.isin(pid, np.fromiter(tracks, np.int64, len(tracks))))
    if not len(rows):
        empty = np.zeros(0, np.int64)
        return CounterSamples(empty, empty, empty, np.zeros(0), ())
    track_pids = np.fromiter(tracks, np.int64, len(tracks))
    track_devices = np.fromiter(tracks.values(), np.int64, len(tracks))
    by_pid = np.argsort(track_pids)
    device = track_devices[by_pid][np.searchsorted(track_pids[by_pid], pid[rows])]
    # Metric names by their string id: a few distinct ones over many samples.
    ids, code = np.unique(trace.column("counters", "name")[rows], return_inverse=True)
    names = trace.names_at(ids)
    rank = np.argsort(np.array(names, dtype=object), kind="stable")
    code = np.argsort(rank)[code]  # codes in name order
    ts = trace.column("counters", "ts")[rows]
    order = np.lexsort((ts, code, device))
    return CounterSamples(
        device[order],
        code[order].astype(np.int64),
        ts[order],
        trace.column("counters", "value")[rows][order].astype(np.float64),
        tuple(names[i] for i in rank.tolist()),
    )
