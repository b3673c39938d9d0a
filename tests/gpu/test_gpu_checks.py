"""Proof that the GPU benchmarks' checks fail, for each way a kernel or copy can go wrong (runs on
a GPU host: scripts/gpu-check --stage full; and on the CUDA stand-in, tests/verification/test_cuda_kv_guards.py).

| check | benchmarks | breakages it is shown to catch |
|---|---|---|
| checksum of the timed launch against the pattern's | hbm.read | kernel not launched; half the vectors read |
| destination words against hbm_write's pattern | hbm.write, hbm.copy | kernel not launched; half the vectors written; first bytes skipped |
| destination against the source's bytes | pcie.h2d, pcie.d2h (copy engine) | nothing copied; half copied; first bytes skipped (H2D) |
| every fragment against its source (`kv.check.first_mismatch`) | kv.restore, every CUDA strategy | nothing copied; one fragment skipped; last byte of each fragment skipped |
| guard bytes around the destination unchanged (`memory.guard`) | kv.restore, every CUDA strategy | one byte written past the last fragment |
"""

import pytest

from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.memory.pattern import POISON
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu.scale import TINY_MODEL, sized

FAST = Settings(samples=5, min_sample_s=0.005, warmup_s=0.01)


@pytest.fixture(scope="module")
def facts():
    return host_facts()


def run(facts, bench, **params):
    return run_case(Case(bench, get_bench(bench).canonical_params(params)), facts, FAST)


def assert_caught(result, what):
    assert result.status == "failed", f"{what} passed"
    assert result.reason.startswith("integrity check failed"), result.reason


class BrokenModule:
    """A kernel module whose `kernel` misbehaves as `breakage` says; its other kernels are intact."""

    def __init__(self, module, kernel: str, breakage: str) -> None:
        self.module, self.kernel, self.breakage = module, kernel, breakage

    def get_function(self, name):
        import cupy as cp

        function = self.module.get_function(name)
        if name != self.kernel:
            return function

        def launch(grid, block, args, **kwargs):
            if self.breakage == "not launched":
                return
            n_at = 2 if name == "vector_copy" else 1  # (src, dst, n) or (buffer, n, ...)
            if self.breakage == "half":
                args = (*args[:n_at], cp.uint64(int(args[n_at]) // 2), *args[n_at + 1:])
            function(grid, block, args, **kwargs)
            if self.breakage == "first bytes":
                out = args[1] if name == "vector_copy" else args[0]
                cp.cuda.runtime.memsetAsync(out.data.ptr, POISON, 16, kwargs["stream"].ptr)

        return launch


@pytest.mark.parametrize("bench,kernel,breakages", [
    ("hbm.read", "hbm_read", ["not launched", "half"]),
    ("hbm.write", "hbm_write", ["not launched", "half", "first bytes"]),
    ("hbm.copy", "vector_copy", ["not launched", "half", "first bytes"]),
])
def test_a_broken_hbm_kernel_fails_the_case(facts, monkeypatch, bench, kernel, breakages):
    from kvbench.benches import hbm

    real = hbm.kernel_module
    for breakage in breakages:
        monkeypatch.setattr(hbm, "kernel_module", lambda name, gpu=0, b=breakage: BrokenModule(real(name, gpu), kernel, b))
        assert_caught(run(facts, bench, size=sized("256MiB", "1MiB")), f"{bench} with its kernel {breakage}")


@pytest.mark.parametrize("bench,breakages", [("pcie.h2d", ["nothing", "half", "first bytes"]),
                                             ("pcie.d2h", ["nothing", "half"])])
def test_a_broken_copy_engine_copy_fails_the_case(facts, monkeypatch, bench, breakages):
    import cupy as cp

    real = cp.cuda.runtime.memcpyAsync
    for breakage in breakages:
        def copy(dst, src, size, kind, stream, b=breakage):
            if b == "nothing":
                return
            real(dst, src, size // 2 if b == "half" else size, kind, stream)
            if b == "first bytes":
                cp.cuda.runtime.memsetAsync(dst, POISON, 8, stream)

        monkeypatch.setattr(cp.cuda.runtime, "memcpyAsync", copy)
        assert_caught(run(facts, bench, memory="pinned", size=sized("16MiB", "1MiB")), f"{bench} with its copy {breakage}")


@pytest.mark.parametrize("strategy", ["ce-loop", "ce-graph", "ce-batch", "sm-gather", "gpu-contiguous"])
@pytest.mark.parametrize("breakage", ["nothing", "one fragment skipped", "last byte of each fragment skipped",
                                      "one byte written past the last fragment"])
def test_a_broken_cuda_kv_strategy_fails_the_case(facts, monkeypatch, strategy, breakage):
    import cupy as cp

    from kvbench.executors.registry import get_executor

    executor = get_executor(strategy)
    real = type(executor).bind

    def bind(self, src, dst, descriptors, threads=1, stream=None):
        transfer = real(self, src, dst, descriptors, threads, stream=stream)
        dst_ptr = int(dst.device_array.data.ptr)
        rows = list(zip(descriptors.dst_offset.tolist(), descriptors.length.tolist(), strict=True))
        spoiled = ([rows[len(rows) // 2]] if breakage == "one fragment skipped"
                   else [(max(d + n for d, n in rows), 1)] if breakage.startswith("one byte written past")
                   else [(d + n - 1, 1) for d, n in rows])
        value = POISON ^ 0xFF if breakage.startswith("one byte written past") else POISON  # an overrun's byte

        def broken():
            if breakage == "nothing":
                return
            transfer()
            for offset, length in spoiled:  # on the same stream: after the copies, before the check
                cp.cuda.runtime.memsetAsync(dst_ptr + offset, value, length, stream.ptr)

        return broken

    monkeypatch.setattr(type(executor), "bind", bind)
    result = run(facts, "kv.restore", model=sized("Qwen2.5-32B", TINY_MODEL), tokens=64, src="pinned", dst="device",
                 strategy=strategy)
    if strategy == "ce-batch" and result.status == "skipped":
        pytest.skip(result.reason)
    assert_caught(result, f"{strategy} with '{breakage}'")
