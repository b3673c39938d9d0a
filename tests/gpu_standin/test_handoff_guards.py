"""Issue 58.1 on the CUDA stand-in: kv.handoff's guard bytes are what fails when a handoff writes one
byte the case must not, and touches no piece. Every piece lands right, so the piece check passes; one
byte of the decode pool's margin (either side) or of a decode-pool slot no piece writes (the pool's
other half holds other requests) is changed after the handoff, and the case fails naming that guard.
Writing beside a piece (tests/gpu_standin/test_outside_writes.py) fails the piece check first and
never reaches the guard: a handoff that never reads its guards passes that test, not this one."""

import numpy as np
import pytest

from kvbench.benches import get_bench, handoff
from kvbench.measure import Settings
from kvbench.memory.guard import GUARD_BYTES
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu_standin.test_suites import TINY_MODEL

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)
STRATEGIES = ("gather-copy-scatter", "peer-read")
# where the stray byte goes, in the guarded buffer's coordinates (margins included), and what the failure names
PLACES = {
    "the margin before": (lambda guards, size: GUARD_BYTES - 1, "the guard 1 byte(s) before the destination"),
    "the margin past": (lambda guards, size: GUARD_BYTES + size, "the guard 1 byte(s) past the destination's end"),
    "an unselected slot": (lambda guards, size: _inside(guards, size), "which no fragment writes"),
}


def _inside(guards, size: int) -> int:
    """The middle byte of the longest guard range within the decode pool itself (a slot no piece writes)."""
    starts = np.maximum(guards.starts, GUARD_BYTES)
    ends = np.minimum(guards.ends, GUARD_BYTES + size)
    longest = int(np.argmax(ends - starts))
    assert ends[longest] > starts[longest], "the decode pool has no unselected bytes to write"
    return int((starts[longest] + ends[longest]) // 2)


def _writing_outside_every_piece(monkeypatch, machine, place):
    """kv.handoff whose every handoff, after moving its pieces right, changes one byte at `place`."""
    made = []

    class Recorded(handoff.GuardedRegion):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    real = handoff.Workload

    def workload(bytes_per_op, run, *args, **kwargs):
        def run_then_stray_write():
            run()
            guarded = made[-1]
            at = place(guarded.default, guarded.size_bytes)
            ptr = int(guarded.whole.device_array.data.ptr) + at
            machine.synchronize_all()  # the handoff (and the reset before it) done: the stray byte comes last
            alloc = machine.find(ptr)
            alloc.array[ptr - alloc.base] = 0x5A  # not the poison, and written by no piece

        return real(bytes_per_op, run_then_stray_write, *args, **kwargs)

    monkeypatch.setattr(handoff, "GuardedRegion", Recorded)
    monkeypatch.setattr(handoff, "Workload", workload)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("where", PLACES)
def test_a_handoff_writing_only_outside_every_piece_fails_on_the_guard(standin_two_gpus, monkeypatch, strategy,
                                                                        where):
    place, named = PLACES[where]
    _writing_outside_every_piece(monkeypatch, standin_two_gpus, place)
    params = get_bench("kv.handoff").canonical_params({"model": str(TINY_MODEL), "tokens": 128, "pair": "0-1",
                                                       "strategy": strategy})
    result = run_case(Case("kv.handoff", params), host_facts(), FAST)
    assert result.status == "failed", result.reason
    assert "a byte outside every fragment was written" in result.reason and named in result.reason, result.reason
    assert "landed wrong" not in result.reason  # every piece is right: the guard, not the piece check, failed it


def test_the_same_handoff_without_the_stray_byte_is_verified(standin_two_gpus):
    params = get_bench("kv.handoff").canonical_params({"model": str(TINY_MODEL), "tokens": 128, "pair": "0-1"})
    result = run_case(Case("kv.handoff", params), host_facts(), FAST)
    assert result.status == "ok" and result.measurement.verified, result.reason
