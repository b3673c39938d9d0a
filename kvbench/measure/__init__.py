"""Timing, warm-up, calibration, repeats, statistics and the integrity check."""

from kvbench.measure.engine import Settings, Workload, measure
from kvbench.measure.measurement import Measurement
from kvbench.measure.stats import Summary, summarize
from kvbench.measure.timer import MonotonicTimer, Timer

__all__ = ["Measurement", "MonotonicTimer", "Settings", "Summary", "Timer", "Workload", "measure", "summarize"]
