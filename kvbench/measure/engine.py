"""The shared timing core: verify, warm up, calibrate, sample, verify again.

Each verification first proves the check can fail (it must reject the freshly poisoned
destination: a reset that writes nothing or a check that compares nothing is caught here), and
the last timed sample runs on a poisoned destination and is checked as well, so the timed
operations themselves are proven to move the bytes, not only the untimed ones around them.

Calibration follows torch.utils.benchmark's blocked_autorange: grow the number of
operations per sample until the sample is long enough that the timer's resolution is
negligible; the loop's own per-call overhead is measured and flagged when above 1 %.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kvbench.errors import IntegrityError
from kvbench.measure.measurement import Measurement
from kvbench.measure.stats import CV_WARN, summarize
from kvbench.measure.timer import MonotonicTimer, Timer

MAX_OVERHEAD = 0.01


@dataclass(frozen=True)
class Settings:
    """How hard to measure: at least `samples` (≥ 5) samples of ≥ `min_sample_s` seconds each."""

    samples: int = 7
    min_sample_s: float = 0.02
    warmup_s: float = 0.05
    max_loops: int = 1 << 20

    def __post_init__(self) -> None:
        if self.samples < 5:
            raise ValueError(f"samples={self.samples}: at least 5 samples are needed for p10/p90")


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


def measure(workload: Workload, settings: Settings = Settings(), progress: Callable[[], None] | None = None) -> Measurement:
    """Time `workload`; raises `IntegrityError` if the bytes are wrong before or after timing."""
    verify(workload)
    timer = workload.timer
    warm_up(workload, settings)
    loops = calibrate(workload, settings)
    samples = []
    for i in range(settings.samples):
        last = i == settings.samples - 1
        if last:
            workload.reset()  # untimed: the last sample's operations must write every byte themselves
        samples.append(timer.time(workload.run, loops) / loops)
        if last:
            try:
                workload.check()
            except IntegrityError as exc:
                raise IntegrityError(f"bytes wrong after the timed operations: {exc}") from exc
        if progress:
            progress()
    # One request alone, again and again: what a request waits, not what a stream of them moves.
    requests = tuple(timer.time(workload.run, 1) for _ in range(workload.requests))
    try:
        verify(workload)
    except IntegrityError as exc:
        raise IntegrityError(f"bytes wrong after timing: {exc}") from exc
    overhead = (timer.resolution_s + timer.overhead_s(loops)) / (min(samples) * loops)
    warnings = []
    summary = summarize(samples)
    if summary.cv > CV_WARN:
        warnings.append(f"noisy: CV {summary.cv:.1%} > {CV_WARN:.0%}")
    if overhead > MAX_OVERHEAD:
        warnings.append(f"timer overhead {overhead:.1%} of a sample")
    return Measurement(
        samples_s=tuple(samples), loops=loops, bytes_per_op=workload.bytes_per_op, timer=timer.name,
        overhead_fraction=overhead, verified=True, warnings=tuple(warnings), request_s=requests,
    )
