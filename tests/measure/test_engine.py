"""The measurement engine's arithmetic, on scripted timers, and its own integrity checks.

Every test asserts behaviour, never speed: CI shares its CPUs, so nothing here depends on how
fast this machine runs. The engine's checks, and the breakages each test proves it catches:

| engine check | breakage caught (test) |
|---|---|
| check before timing, after the reset | a transfer that writes nothing; a reset that writes nothing (stale destination); a check that compares nothing |
| check of the last timed sample | timed operations that do nothing while untimed ones work |
| check after timing | bytes that go wrong during the run |
"""

import time

import numpy as np
import pytest

from kvbench.errors import IntegrityError
from kvbench.measure import MonotonicTimer, Settings, Workload, measure, summarize
from kvbench.measure.engine import calibrate
from kvbench.memory.pattern import POISON, pattern_bytes


class ScriptedTimer:
    """A timer whose per-operation cost follows a script: tests the engine's arithmetic exactly."""

    name = "scripted"
    resolution_s = 1e-9

    def __init__(self, per_op_s, overhead_s=1e-9):
        self.per_op_s = list(per_op_s)
        self.per_call_overhead_s = overhead_s
        self.calls = 0

    def time(self, op, loops):
        for _ in range(loops):
            op()
        cost = self.per_op_s[min(self.calls, len(self.per_op_s) - 1)]
        self.calls += 1
        return cost * loops

    def overhead_s(self, loops):
        return self.per_call_overhead_s * loops


class Copy:
    """A real little transfer: `run` copies src into dst, `reset` poisons dst, `check` compares."""

    def __init__(self, size=4096):
        self.src = pattern_bytes(size, seed=1)
        self.dst = np.zeros(size, dtype=np.uint8)

    def run(self):
        self.dst[:] = self.src

    def reset(self):
        self.dst.fill(POISON)

    def check(self):
        if not np.array_equal(self.dst, self.src):
            raise IntegrityError(f"byte {int(np.argmax(self.dst != self.src))} differs")


def workload(timer=None, nbytes=1000, copy=None, **overrides):
    copy = copy or Copy()
    parts = {"run": copy.run, "reset": copy.reset, "check": copy.check, **overrides}
    return Workload(bytes_per_op=nbytes, timer=timer or ScriptedTimer([1e-6]), **parts)


FAST = Settings(samples=5, min_sample_s=0.0001, warmup_s=0)


def test_calibration_grows_loops_until_a_sample_is_long_enough():
    loops = calibrate(workload(timer=ScriptedTimer([1e-6])), Settings(min_sample_s=0.01))
    assert loops * 1e-6 >= 0.01
    assert loops < 0.05 / 1e-6  # does not overshoot wildly


def test_warm_up_doubles_the_operations_per_timer_call():
    timer = ScriptedTimer([1e-6])  # 1 µs per operation: 10 ms of warm-up is 10,000 operations
    measure(workload(timer=timer), Settings(samples=5, min_sample_s=0.001, warmup_s=0.01))
    assert timer.calls < 40  # ~14 to warm up, a few to calibrate, 5 samples; not one call per operation


def test_the_overhead_fraction_is_the_timer_and_loop_cost_over_a_sample():
    # 50 µs per operation; the loop costs 0.1 µs per call: 0.2 % of each operation
    m = measure(workload(timer=ScriptedTimer([50e-6], overhead_s=1e-7)), Settings(samples=5, min_sample_s=0.002,
                                                                                  warmup_s=0))
    assert m.overhead_fraction == pytest.approx((1e-9 + 1e-7 * m.loops) / (50e-6 * m.loops))
    assert not m.warnings and m.loops * m.summary.median >= 0.002


def test_an_operation_too_short_for_its_loop_is_flagged():
    # 1 µs per operation, 0.5 µs of loop cost per call: half the time is the loop's
    m = measure(workload(timer=ScriptedTimer([1e-6], overhead_s=5e-7)), Settings(samples=5, min_sample_s=0.001,
                                                                                 warmup_s=0))
    assert any(w.startswith("timer overhead") for w in m.warnings)


def test_the_real_clock_times_what_it_runs():
    """Correctness only: three spins of 50 µs take at least 150 µs (a lower bound load cannot break)."""
    def spin():
        end = time.perf_counter_ns() + 50_000
        while time.perf_counter_ns() < end:
            pass

    assert MonotonicTimer().time(spin, 3) >= 3 * 50e-6


def test_measure_reports_per_operation_seconds_and_rates():
    m = measure(workload(timer=ScriptedTimer([1e-3]), nbytes=10**9), Settings(samples=5, min_sample_s=0.002,
                                                                               warmup_s=0))
    assert len(m.samples_s) == 5
    assert m.summary.median == pytest.approx(1e-3)
    assert m.gbps()["median"] == pytest.approx(1000.0)  # 1e9 bytes in 1 ms = 1000 GB/s
    assert m.verified and m.warnings == ()


def test_a_noisy_case_is_flagged():
    timer = ScriptedTimer([1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 2e-3, 1e-3, 3e-3, 1e-3])
    m = measure(workload(timer=timer), Settings(samples=5, min_sample_s=0.0005, warmup_s=0))
    assert any(w.startswith("noisy") for w in m.warnings)


def test_fewer_than_five_samples_is_refused():
    with pytest.raises(ValueError, match="at least 5"):
        Settings(samples=3)


def test_summary_percentiles():
    s = summarize([float(x) for x in range(1, 12)])
    assert (s.median, s.min, s.max, s.count) == (6.0, 1.0, 11.0, 11)
    assert s.p10 == pytest.approx(2.0) and s.p90 == pytest.approx(10.0)
    assert s.cv == pytest.approx(s.stdev / 6.0)


# --- the engine's checks, each shown to catch its breakages ------------------------------------

def test_catches_a_transfer_that_writes_nothing():
    with pytest.raises(IntegrityError, match="differs"):
        measure(workload(run=lambda: None), FAST)


def test_catches_a_reset_that_writes_nothing_a_stale_destination():
    copy = Copy()
    copy.run()  # the destination already holds the right bytes, and the reset leaves them there
    with pytest.raises(IntegrityError, match="passed on a destination the reset had just poisoned"):
        measure(workload(copy=copy, reset=lambda: None, run=lambda: None), FAST)


def test_catches_a_check_that_compares_nothing():
    with pytest.raises(IntegrityError, match="the reset or the check is broken"):
        measure(workload(check=lambda: None), FAST)


def test_catches_timed_operations_that_do_nothing():
    class TimerThatSkips(ScriptedTimer):
        """Runs the operation only when the engine verifies, never inside a sample."""

        def time(self, op, loops):
            self.calls += 1
            return 1e-6 * loops

    with pytest.raises(IntegrityError, match="after the timed operations"):
        measure(workload(timer=TimerThatSkips([1e-6])), FAST)


def test_catches_bytes_that_go_wrong_during_the_run():
    copy = Copy()
    runs = {"n": 0}

    def run():  # right for the first operations, then a stuck byte
        runs["n"] += 1
        copy.run()
        if runs["n"] > 3:
            copy.dst[-1] ^= 0xFF

    with pytest.raises(IntegrityError, match="after the timed operations|after timing"):
        measure(workload(copy=copy, run=run), FAST)


@pytest.mark.parametrize("bad_check,message", [(3, "after the timed operations"), (5, "after timing")])
def test_corruption_during_or_after_timing_is_caught(bad_check, message):
    copy = Copy()
    state = {"checks": 0}

    def check():  # checks 1 and 4 are the proofs on a poisoned destination: they must fail
        state["checks"] += 1
        if state["checks"] in (1, 4, bad_check):
            raise IntegrityError("destination poisoned")

    with pytest.raises(IntegrityError, match=message):
        measure(workload(copy=copy, check=check), FAST)


def test_a_workloads_own_verify_runs_after_the_proof_that_its_check_can_fail():
    copy, calls = Copy(), []

    def verify():
        calls.append("verify")
        copy.run()
        copy.check()

    measure(workload(copy=copy, verify=verify), FAST)
    assert calls == ["verify", "verify"]  # before and after timing
