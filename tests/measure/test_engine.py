"""The measurement engine's arithmetic, on scripted timers, and its own integrity checks.

Every test asserts behaviour, never speed: CI shares its CPUs, so nothing here depends on how
fast this machine runs. The engine's checks, and the breakages each test proves it catches:

| engine check | breakage caught (test) |
|---|---|
| check before timing, after the reset | a transfer that writes nothing; a reset that writes nothing (stale destination); a check that compares nothing |
| check of the last timed sample | timed operations that do nothing while untimed ones work |
| each operation of a sample alone, poisoned and checked (untimed) | an executor alternating halves of the destination |
| the other side of a pair, as the case | a pair side that copies nothing |
| check after timing | bytes that go wrong during the run |
"""

import time

import numpy as np
import pytest

from kvbench.errors import IntegrityError
from kvbench.measure import MonotonicTimer, Settings, Workload, measure, summarize
from kvbench.measure import engine
from kvbench.measure.engine import PROVE_OPS, Pair, calibrate
from kvbench.measure.stats import median_ci, relative_half_width
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
    assert len(m.samples_s) >= 5  # at least `samples`; a steady case stops once its precision is known
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


@pytest.mark.parametrize("phase,message", [("last sample", "after the timed operations"),
                                           ("one by one", "after operation 2 of"), ("after timing", "after timing")])
def test_corruption_during_or_after_timing_is_caught(phase, message, monkeypatch):
    monkeypatch.setattr(engine, "PROVE_S", 1e9)  # every operation proven, however busy the machine: a fixed count
    copy = Copy()
    proven = min(calibrate(workload(), FAST), PROVE_OPS)  # the scripted timer calibrates the same every time
    # checks, in order: the proof (must fail), the first verify, the last sample, each proven
    # operation, the proof after timing (must fail), the last verify
    bad = {"last sample": 3, "one by one": 5, "after timing": 5 + proven}[phase]
    state = {"checks": 0}

    def check():
        state["checks"] += 1
        if state["checks"] in (1, 4 + proven, bad):
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


def test_catches_an_executor_that_alternates_halves_of_the_destination():
    """Each timed operation writes one half (first, second, first, ...): over a loop of two or more
    both halves hold the bytes, so a check after the whole loop passes; a check after each
    operation does not. Its own `verify` (a fuller path, as storage's every-request one) is sound."""
    copy, calls = Copy(), {"n": 0}
    half = copy.src.size // 2

    def alternating():
        calls["n"] += 1
        part = slice(0, half) if calls["n"] % 2 else slice(half, None)
        copy.dst[part] = copy.src[part]

    def verify():
        copy.reset()
        copy.run()
        copy.check()

    with pytest.raises(IntegrityError, match="after operation 1 of"):
        measure(workload(copy=copy, run=alternating, verify=verify), FAST)


class Steps:
    """A scripted clock shared by two workloads: each side's operation costs what its script says."""

    def __init__(self, a_s, b_s):
        self.scripts = {"a": list(a_s), "b": list(b_s)}
        self.order = []

    def timer(self, side):
        steps = self

        class SideTimer(ScriptedTimer):
            def time(self, op, loops):
                for _ in range(loops):
                    op()
                script = steps.scripts[side]
                steps.order.append(side)
                cost = script[min(self.calls, len(script) - 1)]
                self.calls += 1
                return cost * loops

        return SideTimer([0.0])


def paired(steps, settings=FAST):
    a = workload(timer=steps.timer("a"), nbytes=1000)
    a.pair = Pair({"strategy": "contiguous"}, workload(timer=steps.timer("b"), nbytes=1000))
    return measure(a, settings)


def test_a_pair_is_sampled_interleaved_and_its_ratio_taken_per_pair():
    # the two sides drift together (a busy neighbour): each pair's ratio stays 0.5, the medians' would not
    slow = [1e-3 * (1 + (i % 3)) for i in range(200)]
    steps = Steps([2 * t for t in slow], slow)
    m = paired(steps)
    record = m.record()["paired"]
    assert record["against"] == {"strategy": "contiguous"}
    assert record["median"] == pytest.approx(0.5) and record["p10"] == pytest.approx(0.5)
    assert record["p90"] == pytest.approx(0.5) and record["pairs"] == len(m.samples_s)
    sampled = [s for s in steps.order[-2 * len(m.samples_s):]]
    assert sampled[:4] == ["a", "b", "b", "a"]  # A B, B A: neither side always goes second


@pytest.mark.parametrize("noisy_side", ["pair", "both"])
def test_a_case_with_a_pair_stops_at_its_target_only_when_the_ratio_is_as_precise(noisy_side):
    """Issue 44.4: the case's own side steady (its median ±0 % at once), the pair's noisy (the ratio ±100 %):
    sampling goes on to the time budget, never "precision target reached" at the minimum samples; the
    record says how precise the ratio got. `both`: the sides drift apart together, same answer."""
    steady = [1e-3] * 5000
    noisy = [1e-3 * (0.5, 2.0, 1.0, 3.0, 0.7)[i % 5] for i in range(5000)]
    own = steady if noisy_side == "pair" else [1e-3 * (1 + 0.5 * (i % 2)) for i in range(5000)]
    budget = Settings(samples=5, min_sample_s=0.0001, warmup_s=0, max_time_s=0.2)
    m = paired(Steps(own, noisy), budget)
    assert m.stopped == "time budget (0.2 s) spent", m.stopped
    assert len(m.samples_s) > 2 * budget.samples
    record = m.record()
    assert record["paired"]["precision"] > budget.precision
    if noisy_side == "pair":
        assert record["precision"]["reached"] == 0  # the case alone would have stopped at once
    # the control: a pair as steady as the case stops at its target, at the minimum samples
    calm = paired(Steps(steady, [2e-3] * 5000), budget)
    assert calm.stopped == "precision target reached" and len(calm.samples_s) <= budget.samples + 2


@pytest.mark.parametrize("pair_over_case,stops_early", [(2.0, True), (0.8, False)],
                         ids=["ratio-far-from-its-threshold", "ratio-on-its-threshold"])
def test_a_case_resampled_against_a_threshold_stops_once_its_ratio_is_clear_of_it(pair_over_case, stops_early):
    """Accept's re-sampling (issue 37): the ratio noisy (pairs 0.5–3 x its level) and a precision out of reach.
    Its level at 2 x against a 0.8 x threshold: sampling stops as soon as the ratio's 99 % interval holds
    no 0.8, long before the budget, and the 95 % interval accept then judges is clear of it too. Its level
    at 0.8 x (half its pairs either side, none on it): it samples on to the budget."""
    own = [1e-3] * 5000
    jitter = (0.5, 2.0, 0.9, 1.1, 3.0, 0.7)  # the ratio's median at pair_over_case: 3 pairs below it, 3 above
    other = [1e-3 * pair_over_case * jitter[i % len(jitter)] for i in range(5000)]
    budget = Settings(samples=5, min_sample_s=0.0001, warmup_s=0, max_time_s=0.5, precision=0.001,
                      ratio_bounds=(0.8,))
    m = paired(Steps(own, other), budget)
    low, high = median_ci(m.ratios())
    if stops_early:
        assert m.stopped == "paired ratio's interval clear of 0.8" and not low < 0.8 < high, (m.stopped, low, high)
        assert len(m.samples_s) < 100
    else:
        assert m.stopped == "time budget (0.5 s) spent", m.stopped


def test_a_ratio_whose_95_interval_clears_its_threshold_before_its_99_does_samples_on():
    """Issue 58.4: re-sampling stops on the ratio's 99 % interval, not the 95 % one the verdict uses. Three
    pairs in ten below 0.8 x, the rest spread from 1.2 to 4 x, against a 0.8 x threshold: the 95 % interval clears 0.8 at about
    25-30 pairs, the 99 % one only at 39-49. With a budget of about 35 pairs the case samples on to its
    budget; a rule that stopped on the 95 % interval stops early, "clear of 0.8"."""
    own = [1e-3] * 5000
    pattern = (2.0, 0.5, 3.0, 1.5, 0.6, 2.5, 1.2, 0.7, 4.0, 1.8)  # 3 in 10 below 0.8, the rest spread above
    other = [1e-3 * pattern[i % len(pattern)] for i in range(5000)]
    budget = Settings(samples=5, min_sample_s=0.0001, warmup_s=0, max_time_s=0.09, precision=0.001,
                      ratio_bounds=(0.8,))
    m = paired(Steps(own, other), budget)
    assert m.stopped == "time budget (0.09 s) spent", m.stopped
    ratios = m.ratios()
    # the case is one where the two intervals disagree: some look's 95 % interval was clear while its 99 % was not
    disagree = [n for n in range(8, len(ratios)) if not _straddles(median_ci(ratios[:n]), 0.8)
                and _straddles(median_ci(ratios[:n], 0.99), 0.8)]
    assert disagree, "no look at which the 95 % and 99 % intervals disagree about 0.8"


def _straddles(interval, bound):
    return interval is not None and interval[0] < bound < interval[1]


def test_a_ratio_threshold_is_positive():
    with pytest.raises(ValueError, match="ratio_bounds"):
        Settings(ratio_bounds=(0.0,))


def test_a_pair_whose_other_side_is_broken_fails_the_case():
    a = workload()
    a.pair = Pair({"strategy": "contiguous"}, workload(run=lambda: None))
    with pytest.raises(IntegrityError, match="differs"):
        measure(a, FAST)


def test_sampling_goes_on_until_the_median_is_precise_enough():
    # noisy at first, then steady: the rule keeps sampling past the minimum until ±1 % is reached
    timer = ScriptedTimer([1e-3, 3e-3, 1e-3, 2e-3, 1e-3, 3e-3, 2e-3, 3e-3] + [1.5e-3] * 100)
    m = measure(workload(timer=timer), Settings(samples=5, min_sample_s=0.0005, warmup_s=0, max_time_s=60))
    assert m.stopped == "precision target reached"
    assert m.precision is not None and m.precision <= 0.01 and len(m.samples_s) > 8
    assert m.record()["precision"] == {"reached": m.precision, "target": 0.01, "samples": len(m.samples_s),
                                       "stopped": "precision target reached"}


def test_sampling_stops_when_the_time_budget_is_spent():
    noisy = [1e-3 * (1 + (i % 5)) for i in range(1000)]  # never within ±1 %
    m = measure(workload(timer=ScriptedTimer(noisy)), Settings(samples=5, min_sample_s=0.001, warmup_s=0,
                                                                max_time_s=0.05))
    assert m.stopped == "time budget (0.05 s) spent" and m.precision > 0.01
    # the budget counts timed seconds: it stops where one more sample of the average length would pass it
    timed = [s * m.loops for s in m.samples_s]
    assert sum(timed) <= 0.05 + max(timed) and sum(timed) >= 0.05 - 2 * max(timed)


def test_by_default_the_budget_is_what_the_minimum_samples_take():
    """Without max_time_s a case samples as before the rule: `samples` samples, no more, and says why."""
    noisy = [1e-3 * (1 + (i % 5)) for i in range(1000)]
    m = measure(workload(timer=ScriptedTimer(noisy)), Settings(samples=7, min_sample_s=0.01, warmup_s=0))
    assert len(m.samples_s) == 7 and m.stopped == "time budget (0.07 s) spent"


def test_a_looser_target_stops_sooner():
    script = [1e-3 * (1 + 0.02 * (i % 7)) for i in range(1000)]
    loose = measure(workload(timer=ScriptedTimer(script)), Settings(samples=5, min_sample_s=0.001, warmup_s=0,
                                                                    precision=0.05, max_time_s=60))
    tight = measure(workload(timer=ScriptedTimer(script)), Settings(samples=5, min_sample_s=0.001, warmup_s=0,
                                                                    precision=0.001, max_time_s=0.03))
    assert loose.stopped == "precision target reached" and tight.stopped.startswith("time budget")
    assert len(loose.samples_s) < len(tight.samples_s)


def test_the_median_ci_uses_order_statistics():
    assert relative_half_width([1.0] * 5) is None  # five samples cannot bound the median with 95 %
    assert median_ci([3.0, 1.0, 2.0, 6.0, 5.0, 4.0]) == (1.0, 6.0)  # n = 6: min and max (96.9 %)
    values = [float(x) for x in range(1, 101)]
    lo, hi = median_ci(values)
    assert (lo, hi) == (40.0, 61.0)  # the textbook ranks for n = 100
    assert relative_half_width(values) == pytest.approx((61 - 40) / 2 / 50.5)
    assert median_ci(values, 0.99) == (37.0, 64.0)  # wider: the engine stops on it when it looks after every pair
    assert median_ci([1.0] * 7, 0.99) is None  # seven values cannot bound the median with 99 %


def test_operations_past_the_first_two_are_proven_only_while_the_proof_is_short(monkeypatch):
    """A reset far dearer than an operation (storage poisoning every request on disk) must not make the
    proof run for minutes: two operations always (an alternation shows in two), more while time allows."""
    monkeypatch.setattr(engine, "PROVE_S", 0.0)
    copy, resets = Copy(), {"n": 0}

    def reset():
        resets["n"] += 1
        copy.reset()

    m = measure(workload(copy=copy, reset=reset), FAST)
    # the proofs before and after timing, the last sample, two operations proven one by one
    assert m.loops > 2 and resets["n"] == 1 + 1 + 2 + 1
