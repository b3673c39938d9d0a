"""Proof that the host benchmarks' checks fail, for each way a copy can go wrong.

| check | benchmarks | breakages it is shown to catch |
|---|---|---|
| whole destination compared with the source (`dram.copy`) | dram.copy (every primitive) | nothing written; first bytes skipped; last byte of each fragment skipped; one fragment skipped; two fragments swapped; reset skipped (stale destination); the check compares nothing |
| every descriptor's destination compared with its source (`kv.check.first_mismatch`) | kv.restore, kv.offload (host, host-numpy, contiguous) | the same |
| no source byte holds the poison (written into each source before its fill) | dram.copy, kv.restore, kv.offload | the source never filled; a copy that runs backwards (destination onto source) |
| guard bytes unchanged: a page of poison on each side of the destination, and every byte no fragment writes (`memory.guard`) | dram.copy, kv.restore, kv.offload | one byte written past a fragment; one byte written before one; one byte written between fragments (an offload's unselected pool slot) |

Each breakage is put in at the executor (the bound copy a benchmark times) or at the workload's
own reset / check; the case must come out `failed` with the integrity check named.
"""

import pytest

from kvbench.benches import get_bench
from kvbench.executors.host import HostExecutor, NumpyExecutor
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from tests.verification.saboteurs import BREAKAGES, GUARD_BREAKAGES, array_spoiler, break_after, gaps_between

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)

CASES = {
    "dram.copy memcpy 4KiB fragments": ("dram.copy", {"size": "1MiB", "fragment": "4KiB", "primitive": "memcpy"}),
    "dram.copy numpy 4KiB fragments": ("dram.copy", {"size": "1MiB", "fragment": "4KiB", "primitive": "numpy"}),
    "dram.copy auto one piece": ("dram.copy", {"size": "1MiB"}),
    "kv.restore host": ("kv.restore", {"model": "Qwen2.5-32B", "tokens": 64}),
    "kv.restore host-numpy": ("kv.restore", {"model": "Qwen2.5-32B", "tokens": 64, "strategy": "host-numpy"}),
    "kv.restore contiguous": ("kv.restore", {"model": "Qwen2.5-32B", "tokens": 64, "strategy": "contiguous"}),
    "kv.offload host 2 threads": ("kv.offload", {"model": "Llama-3.1-8B", "tokens": 64, "concurrency": 2}),
}


def run(facts, name):
    bench, params = CASES[name]
    return run_case(Case(bench, get_bench(bench).canonical_params(params)), facts, FAST)


def break_executors(monkeypatch, breakage, seen):
    """Every host executor binds a broken copy; `seen` collects each one's fragments (start, length)."""
    for cls in (HostExecutor, NumpyExecutor):
        real = cls.bind

        def bind(self, src, dst, descriptors, threads=1, _real=real):
            transfer = _real(self, src, dst, descriptors, threads)
            fragments = list(zip(descriptors.dst_offset.tolist(), descriptors.length.tolist(), strict=True))
            seen.append(fragments)
            return break_after(breakage, transfer, fragments, *array_spoiler(dst.host_array))

        monkeypatch.setattr(cls, "bind", bind)


def run_broken(facts, monkeypatch, name, breakage):
    """Case `name` run with every host executor's copy broken by `breakage`: (its result, the
    fragments each bound copy was given)."""
    seen = []
    break_executors(monkeypatch, breakage, seen)
    return run(facts, name), seen


@pytest.mark.parametrize("name", CASES)
def test_each_case_passes_unbroken(facts, name):
    result = run(facts, name)
    assert result.status == "ok" and result.measurement.verified, result.reason


@pytest.mark.parametrize("breakage", BREAKAGES)
@pytest.mark.parametrize("name", CASES)
def test_a_broken_copy_fails_the_case(facts, monkeypatch, name, breakage):
    result, seen = run_broken(facts, monkeypatch, name, breakage)
    if breakage == "two fragments swapped" and max(map(len, seen)) == 1:
        pytest.skip("one fragment: nothing to swap")
    assert result.status == "failed", f"{name} passed with '{breakage}'"
    assert result.reason.startswith("integrity check failed"), result.reason


@pytest.mark.parametrize("part", ["reset", "check"])
@pytest.mark.parametrize("name", CASES)
def test_a_reset_or_check_that_does_nothing_fails_the_case(facts, monkeypatch, name, part):
    bench = get_bench(CASES[name][0])
    real = type(bench).prepare

    def prepare(self, params):
        prepared = real(self, params)
        setattr(prepared.workload, part, lambda: None)  # reset skipped: a stale destination
        return prepared

    monkeypatch.setattr(type(bench), "prepare", prepare)
    result = run(facts, name)
    assert result.status == "failed", result.reason
    if part == "reset" and name.startswith("kv.offload"):  # its paired ceiling writes pool slots the case did not
        # select: without the case's own reset, the guards find them first
        assert "the reset or the check is broken" in result.reason or "outside every fragment" in result.reason
    else:
        assert "the reset or the check is broken" in result.reason, result.reason


@pytest.mark.parametrize("breakage", GUARD_BREAKAGES)
@pytest.mark.parametrize("name", CASES)
def test_a_write_outside_every_fragment_fails_the_case(facts, monkeypatch, name, breakage):
    result, seen = run_broken(facts, monkeypatch, name, breakage)
    if breakage == "one byte written between fragments" and not any(gaps_between(f) for f in seen):
        assert result.status == "ok", result.reason
        pytest.skip("the fragments cover the destination: no gap between them")
    assert result.status == "failed", f"{name} passed with '{breakage}'"
    assert result.reason.startswith("integrity check failed: a byte outside every fragment was written"), result.reason


def test_without_guard_bytes_a_write_past_a_fragment_passes(facts, monkeypatch):
    """The guard tests' sensitivity: with the guard check taken out, an offload writing past its
    fragments into the pool comes out ok. So the test above is what goes red if the guards go."""
    from kvbench.memory.guard import GuardedRegion

    for breakage in ("one byte written past a fragment", "one byte written between fragments"):
        with monkeypatch.context() as patch:
            patch.setattr(GuardedRegion, "check", lambda self, whole=None, guards=None: None)
            break_executors(patch, breakage, [])
            result = run(facts, "kv.offload host 2 threads")
            assert result.status == "ok", (breakage, result.reason)


def unfill_sources(monkeypatch, poisoned: bool = True) -> None:
    """The benchmarks' source fill skipped (and, `poisoned=False`, the poison written before it too)."""
    import kvbench.benches.dram as dram
    import kvbench.benches.kv.host as kv

    for module in (dram, kv):
        monkeypatch.setattr(module, "fill_pattern", lambda *args, **kwargs: None)
        if not poisoned:
            monkeypatch.setattr(module, "poison", lambda array: None)


@pytest.mark.parametrize("name", CASES)
def test_a_source_never_filled_fails_the_case(facts, monkeypatch, name):
    """Moving a source nobody filled moves equal bytes: it proves nothing, and must not pass."""
    unfill_sources(monkeypatch)
    result = run(facts, name)
    assert result.status == "failed" and "holds the poison" in result.reason, result.reason


@pytest.mark.parametrize("name", CASES)
def test_a_copy_that_runs_backwards_fails_the_case(facts, monkeypatch, name):
    """Destination onto source: both then hold the reset's poison, equal to each other."""
    from kvbench.kv.descriptors import DescriptorList

    for cls in (HostExecutor, NumpyExecutor):
        real = cls.bind

        def bind(self, src, dst, descriptors, threads=1, _real=real):
            back = DescriptorList.from_arrays(descriptors.dst_offset, descriptors.src_offset, descriptors.length)
            return _real(self, dst, src, back, threads)

        monkeypatch.setattr(cls, "bind", bind)
    result = run(facts, name)
    assert result.status == "failed" and "holds the poison" in result.reason, result.reason


def test_a_source_not_poisoned_before_its_fill_lets_an_unfilled_one_pass(facts, monkeypatch):
    """The tests above' sensitivity: without the poison written before the fill, a source nobody
    filled (zeros) is copied, compared equal and verified."""
    unfill_sources(monkeypatch, poisoned=False)
    for name in ("dram.copy memcpy 4KiB fragments", "kv.restore host"):
        result = run(facts, name)
        assert result.status == "ok" and result.measurement.verified, (name, result.reason)


def test_a_check_narrowed_to_each_fragments_first_half_is_what_the_last_byte_breakage_catches(facts, monkeypatch):
    """The catalogue's sensitivity: narrow kv's comparison to the first half of every fragment and the
    'last byte of each fragment skipped' breakage passes. So its test above is what would go red
    if the check were narrowed that way."""
    import kvbench.benches.kv.host as kv
    from kvbench.kv.check import first_mismatch
    from kvbench.kv.descriptors import DescriptorList

    def narrowed(descriptors, src, dst, unfilled=None):
        half = DescriptorList.from_arrays(descriptors.src_offset, descriptors.dst_offset, descriptors.length // 2)
        return first_mismatch(half, src, dst, unfilled)

    monkeypatch.setattr(kv, "first_mismatch", narrowed)
    break_executors(monkeypatch, "last byte of each fragment skipped", [])
    assert run(facts, "kv.restore host").status == "ok"
