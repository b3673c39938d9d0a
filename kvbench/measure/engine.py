"""The shared timing core: verify, warm up, calibrate, sample until precise, verify again.

Each verification first proves the check can fail (it must reject the freshly poisoned
destination: a reset that writes nothing or a check that compares nothing is caught here). The
last timed sample runs on a poisoned destination and is checked, so the timed operations
themselves are proven to move the bytes; then as many operations as that sample timed run again
untimed, each on a poisoned destination and checked, so no single operation can leave part of the
destination to another (an executor alternating halves of it passes a check after the whole
loop, never one after each operation).

Calibration follows torch.utils.benchmark's blocked_autorange: grow the number of
operations per sample until the sample is long enough that the timer's resolution is
negligible; the loop's own per-call overhead is measured and flagged when above 1 %.

Sampling stops at the precision target, as nvbench's stdrel criterion does with its noise: once
the median's 95 % confidence interval is within ±`precision` of it (and the paired ratio's too),
or when the case's time budget `max_time_s` (seconds of timed sampling, both sides of a pair
counted) is spent, never before `samples` samples. A case re-sampled because a verdict's threshold
sat inside its paired ratio's interval (`ratio_bounds`, accept's re-sampling) also stops once the
ratio's 99 % interval holds none of them: the verdict no longer depends on more samples. 99 %, not
the 95 % the verdict then uses, because looking after every pair gives chance many tries: a ratio
that sits on its threshold would clear a 95 % interval at some look far more often than 1 in 20. A case with
a `pair` times its other side interleaved with it (A B, B A, ...: the same warm-up, the same
moment), so the ratio is taken per pair of samples, not between two medians taken apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvbench.errors import IntegrityError
from kvbench.measure.measurement import Measurement, Paired
from kvbench.measure.stats import CV_WARN, median_ci, relative_half_width, straddled, summarize
from kvbench.measure.timer import MonotonicTimer, Timer

MAX_OVERHEAD = 0.01
STOP_CONFIDENCE = 0.99  # of the paired ratio's interval that must clear `ratio_bounds` to stop early
MAX_SAMPLES = 10_000  # a case that never reaches its target stops here even with an endless budget
PROVE_OPS = 256  # at most this many operations are proven one by one after the samples (each reset and checked)
PROVE_S = 2.0  # past the first two (an alternation shows in two), only while under these wall seconds:
# a reset can cost far more than an operation (storage writes poison every request's ranges on disk)


@dataclass(frozen=True)
class Settings:
    """How hard to measure: at least `samples` (≥ 5) samples of ≥ `min_sample_s` seconds each, more
    until the median's 95 % confidence interval is within ±`precision` (a fraction) of it or
    `max_time_s` seconds of sampling are spent."""

    samples: int = 7
    min_sample_s: float = 0.02
    warmup_s: float = 0.05
    max_loops: int = 1 << 20
    precision: float = 0.01
    max_time_s: float | None = None  # None: samples × min_sample_s, what a case sampled before the rule
    ratio_bounds: tuple[float, ...] = ()  # thresholds the paired ratio is judged against: stop once clear of them

    def __post_init__(self) -> None:
        if self.samples < 5:
            raise ValueError(f"samples={self.samples}: at least 5 samples are needed for p10/p90")
        if not 0 < self.precision < 1:
            raise ValueError(f"precision={self.precision}: give a fraction between 0 and 1 (0.01 is ±1 %)")
        if any(not b > 0 for b in self.ratio_bounds):
            raise ValueError(f"ratio_bounds={self.ratio_bounds}: a ratio's threshold is a positive number")
        if self.max_time_s is not None and not self.max_time_s > 0:
            raise ValueError(f"max_time_s={self.max_time_s}: give a positive number of seconds")

    @property
    def budget_s(self) -> float:
        """Seconds of timed sampling a case may spend short of its precision target."""
        return self.max_time_s if self.max_time_s is not None else self.samples * self.min_sample_s


@dataclass
class Workload:
    """One case ready to time.

    `run` does one operation and returns when it is complete (or, behind a CUDA timer, enqueues
    it); `reset` poisons the destination (`memory.pattern.POISON`, which no source byte holds);
    `check` raises `IntegrityError` when the destination does not hold what the last operation
    should have left. `verify`, where given, is a fuller check than reset + run + check (e.g.
    every prepared I/O request rather than one) and replaces it before and after timing.
    """

    bytes_per_op: int
    run: Callable[[], None]
    reset: Callable[[], None]
    check: Callable[[], None]
    timer: Timer = field(default_factory=MonotonicTimer)
    verify: Callable[[], None] | None = None
    requests: int = 0  # single operations to time one by one after the samples: the latency one request sees
    pair: Pair | None = None  # the other side of the ratio this case reports, timed interleaved with it


@dataclass
class Pair:
    """The other side of a ratio, on the same sizes: `against` names it by the parameters where it
    differs from the case (recorded with the result), `workload` moves its bytes."""

    against: dict[str, Any]
    workload: Workload


def verify(workload: Workload) -> None:
    """Poison the destination and prove the check sees it; move the bytes once and check them (or
    the workload's own fuller verify after the same proof)."""
    workload.reset()
    try:
        workload.check()
    except IntegrityError:
        pass  # as it must: the destination holds poison, not the bytes
    else:
        raise IntegrityError("the check passed on a destination the reset had just poisoned: the reset or the "
                             "check is broken, so nothing this case moves could be verified")
    if workload.verify is not None:
        workload.verify()
        return
    workload.run()
    workload.check()


def _loop_cap(timer: Timer, settings: Settings) -> int:
    return min(settings.max_loops, getattr(timer, "max_loops", settings.max_loops))


def warm_up(workload: Workload, settings: Settings) -> None:
    """Run the operation for `warmup_s` of timed work (clocks up, caches and TLBs warm), doubling
    the operations per call: a short operation behind a costly timer call (a CUDA spin kernel,
    events) is not paid once per operation."""
    warm, loops = 0.0, 1
    while warm < settings.warmup_s:
        warm += workload.timer.time(workload.run, loops)
        loops = min(2 * loops, _loop_cap(workload.timer, settings))


def calibrate(workload: Workload, settings: Settings) -> int:
    """Operations per sample so that a sample lasts ≥ min_sample_s and the timer's resolution is
    under half of 1 % of it.

    The loop's per-call overhead does not shrink with more loops, so it is not chased here: an
    operation too short for it to stay under 1 % gets a warning from `measure`.
    """
    timer = workload.timer
    floor = max(settings.min_sample_s, 2 * timer.resolution_s / MAX_OVERHEAD)
    cap = _loop_cap(timer, settings)
    loops = 1
    while True:
        elapsed = timer.time(workload.run, loops)
        if elapsed >= floor or loops >= cap:
            return loops
        grow = floor / max(elapsed, 1e-9)
        loops = min(cap, max(loops * 2, int(loops * grow * 1.2) + 1))


def _sample(workload: Workload, loops: int) -> float:
    return workload.timer.time(workload.run, loops) / loops


def _stop(samples: list[list[float]], settings: Settings, elapsed_s: float, scale: float = 1.0) -> str:
    """Why to stop sampling now ("" to go on); one more (the checked) sample follows a stop. `scale`: the
    case's bytes per operation over its pair's (a pair's ratio is of rates, the samples are seconds)."""
    n = len(samples[0])
    if n + 1 < settings.samples:
        return ""
    if n + 1 >= MAX_SAMPLES:
        return f"sample cap ({MAX_SAMPLES})"
    spans = [relative_half_width(samples[0])]
    if len(samples) > 1:  # the pair: its ratio must be as precise as the case
        ratios = [scale * b / a for a, b in zip(*samples, strict=True)]
        spans.append(relative_half_width(ratios))
        interval = median_ci(ratios, STOP_CONFIDENCE) if settings.ratio_bounds else None
        if interval is not None and straddled(interval, settings.ratio_bounds) is None:
            return f"paired ratio's interval clear of {', '.join(f'{b:g}' for b in settings.ratio_bounds)}"
    if all(s is not None and s <= settings.precision for s in spans):
        return "precision target reached"
    if elapsed_s * (n + 1) / n >= settings.budget_s:  # the next sample (of the average length) would spend it
        return f"time budget ({settings.budget_s:g} s) spent"
    return ""


def prove_each_op(workload: Workload, loops: int) -> None:
    """Untimed: the next `loops` operations (at most PROVE_OPS; past two, at most PROVE_S seconds of
    them) each on a poisoned destination, each checked, so every operation moves every byte, not only
    the whole loop together."""
    start = time.perf_counter()
    for i in range(min(loops, PROVE_OPS)):
        if i >= 2 and time.perf_counter() - start > PROVE_S:
            return
        workload.reset()
        workload.run()
        try:
            workload.check()
        except IntegrityError as exc:
            raise IntegrityError(f"bytes wrong after operation {i + 1} of {min(loops, PROVE_OPS)} checked one by "
                                 f"one: {exc}") from exc


def measure(workload: Workload, settings: Settings = Settings(), progress: Callable[[], None] | None = None) -> Measurement:
    """Time `workload` (and its pair, interleaved); raises `IntegrityError` if the bytes are wrong
    before, during or after timing."""
    sides = [workload] + ([workload.pair.workload] if workload.pair else [])
    for side in sides:
        verify(side)
    for side in sides:
        warm_up(side, settings)
    loops = [calibrate(side, settings) for side in sides]
    scale = workload.bytes_per_op / workload.pair.workload.bytes_per_op if workload.pair else 1.0
    samples: list[list[float]] = [[] for _ in sides]
    spent_s, stopped = 0.0, ""  # timed seconds of sampling, every side's: what the budget counts
    while True:
        stopped = stopped or _stop(samples, settings, spent_s, scale)
        order = range(len(sides)) if len(samples[0]) % 2 == 0 else reversed(range(len(sides)))  # A B, B A
        for k in order:
            if stopped:  # the last sample: untimed poison first, so its operations must write every byte themselves
                sides[k].reset()  # (just before its own sample and checked right after: the sides may share buffers)
            samples[k].append(_sample(sides[k], loops[k]))
            spent_s += samples[k][-1] * loops[k]
            if stopped:
                try:
                    sides[k].check()
                except IntegrityError as exc:
                    raise IntegrityError(f"bytes wrong after the timed operations: {exc}") from exc
        if progress:
            progress()
        if stopped:
            break
    # One request alone, again and again: what a request waits, not what a stream of them moves.
    timer = workload.timer
    requests = tuple(timer.time(workload.run, 1) for _ in range(workload.requests))
    for side, n in zip(sides, loops, strict=True):  # each side's own operations last before its verify: a
        prove_each_op(side, n)                       # reset that writes nothing then leaves its own bytes behind
        try:
            verify(side)
        except IntegrityError as exc:
            raise IntegrityError(f"bytes wrong after timing: {exc}") from exc
    own = samples[0]
    overhead = (timer.resolution_s + timer.overhead_s(loops[0])) / (min(own) * loops[0])
    warnings = []
    summary = summarize(own)
    if summary.cv > CV_WARN:
        warnings.append(f"noisy: CV {summary.cv:.1%} > {CV_WARN:.0%}")
    if overhead > MAX_OVERHEAD:
        warnings.append(f"timer overhead {overhead:.1%} of a sample")
    paired = (Paired(workload.pair.against, tuple(samples[1]), loops[1], workload.pair.workload.bytes_per_op)
              if workload.pair else None)
    return Measurement(
        samples_s=tuple(own), loops=loops[0], bytes_per_op=workload.bytes_per_op, timer=timer.name,
        overhead_fraction=overhead, verified=True, warnings=tuple(warnings), request_s=requests, paired=paired,
        precision_target=settings.precision, stopped=stopped,
    )
