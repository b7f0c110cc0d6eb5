"""Kineto's hardware counters (CUPTI PM sampling): the samples on each device's
"GPU N Counters" track, and the measured SM-active share beside the computed busy share."""

from .samples import COUNTER_TRACK, CounterSamples, counter_samples, counter_track_devices
from .sm_active import (
    DISAGREE_POINTS,
    SM_ACTIVE_PCT,
    SM_CYCLES,
    SmActiveVsBusy,
    sm_active_series,
    sm_active_vs_busy,
    time_weighted_mean,
)

__all__ = [
    "COUNTER_TRACK",
    "CounterSamples",
    "counter_samples",
    "counter_track_devices",
    "DISAGREE_POINTS",
    "SM_ACTIVE_PCT",
    "SM_CYCLES",
    "SmActiveVsBusy",
    "sm_active_series",
    "sm_active_vs_busy",
    "time_weighted_mean",
]
