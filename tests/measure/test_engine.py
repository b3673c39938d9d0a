import time

import pytest

from kvbench.errors import IntegrityError
from kvbench.measure import MonotonicTimer, Settings, Workload, measure, summarize
from kvbench.measure.engine import calibrate


class ScriptedTimer:
    """A timer whose per-operation cost follows a script: tests the engine's arithmetic exactly."""

    name = "scripted"
    resolution_s = 1e-9

    def __init__(self, per_op_s):
        self.per_op_s = list(per_op_s)
        self.calls = 0

    def time(self, op, loops):
        for _ in range(loops):
            op()
        cost = self.per_op_s[min(self.calls, len(self.per_op_s) - 1)]
        self.calls += 1
        return cost * loops

    def overhead_s(self, loops):
        return 1e-9 * loops


def workload(run=lambda: None, check=lambda: None, timer=None, nbytes=1000):
    return Workload(bytes_per_op=nbytes, run=run, reset=lambda: None, check=check, timer=timer or MonotonicTimer())


def test_calibration_grows_loops_until_a_sample_is_long_enough():
    loops = calibrate(workload(timer=ScriptedTimer([1e-6])), Settings(min_sample_s=0.01))
    assert loops * 1e-6 >= 0.01
    assert loops < 0.05 / 1e-6  # does not overshoot wildly


def test_warm_up_doubles_the_operations_per_timer_call():
    timer = ScriptedTimer([1e-6])  # 1 µs per operation: 10 ms of warm-up is 10,000 operations
    measure(workload(timer=timer), Settings(samples=5, min_sample_s=0.001, warmup_s=0.01))
    assert timer.calls < 40  # ~14 to warm up, a few to calibrate, 5 samples; not one call per operation


def spin(ns):
    def run():
        end = time.perf_counter_ns() + ns
        while time.perf_counter_ns() < end:
            pass

    return run


def test_overhead_stays_under_one_percent_on_the_real_clock():
    m = measure(workload(run=spin(50_000)), Settings(samples=5, min_sample_s=0.002, warmup_s=0))
    assert m.overhead_fraction < 0.01 and not m.warnings
    assert m.summary.median == pytest.approx(50e-6, rel=0.5)
    assert m.loops * m.summary.median >= 0.002


def test_an_operation_too_short_for_a_python_loop_is_flagged():
    m = measure(workload(run=lambda: None), Settings(samples=5, min_sample_s=0.001, warmup_s=0))
    assert any(w.startswith("timer overhead") for w in m.warnings)


def test_measure_reports_per_operation_seconds_and_rates():
    m = measure(workload(timer=ScriptedTimer([1e-3]), nbytes=10**9), Settings(samples=5, min_sample_s=0.002, warmup_s=0))
    assert len(m.samples_s) == 5
    assert m.summary.median == pytest.approx(1e-3)
    assert m.gbps()["median"] == pytest.approx(1000.0)  # 1e9 bytes in 1 ms = 1000 GB/s
    assert m.verified and m.warnings == ()


def test_a_noisy_case_is_flagged():
    timer = ScriptedTimer([1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 2e-3, 1e-3, 3e-3, 1e-3])
    m = measure(workload(timer=timer), Settings(samples=5, min_sample_s=0.0005, warmup_s=0))
    assert any(w.startswith("noisy") for w in m.warnings)


def test_wrong_bytes_fail_the_measurement():
    def check():
        raise IntegrityError("byte 7 differs")

    with pytest.raises(IntegrityError, match="byte 7"):
        measure(workload(check=check), Settings(samples=5, min_sample_s=0.0001, warmup_s=0))


def test_corruption_during_timing_is_caught_by_the_second_check():
    state = {"checks": 0}

    def check():
        state["checks"] += 1
        if state["checks"] == 2:
            raise IntegrityError("destination zero")

    with pytest.raises(IntegrityError, match="after timing"):
        measure(workload(check=check), Settings(samples=5, min_sample_s=0.0001, warmup_s=0))


def test_fewer_than_five_samples_is_refused():
    with pytest.raises(ValueError, match="at least 5"):
        Settings(samples=3)


def test_summary_percentiles():
    s = summarize([float(x) for x in range(1, 12)])
    assert (s.median, s.min, s.max, s.count) == (6.0, 1.0, 11.0, 11)
    assert s.p10 == pytest.approx(2.0) and s.p90 == pytest.approx(10.0)
    assert s.cv == pytest.approx(s.stdev / 6.0)
