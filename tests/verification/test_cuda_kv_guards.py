"""The CUDA kv.restore check's guard bytes and poisoned source, proven on the CUDA stand-in
(tests/gpu_standin), so CPU CI sees them fail; tests/gpu/test_gpu_checks.py runs the guard breakage
on a real GPU.

| check | benchmarks | breakages it is shown to catch |
|---|---|---|
| guard bytes around the destination unchanged (`memory.guard`), from the same copy to the host as the fragments' check | kv.restore, every CUDA strategy | one byte written past the last fragment; one byte written before the first |
| no source byte holds the poison (written into the pinned source before its fill) | kv.restore, CUDA strategies | the source never filled |
"""

import pytest

from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.memory.pattern import POISON
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu_standin.fixture import installed

FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0.005)
PARAMS = {"model": "Llama-3.1-70B", "tokens": 32, "block_tokens": 16, "src": "pinned", "dst": "device",
          "dst_layout": "page_first"}  # page_first: the staged strategy runs too


@pytest.fixture
def standin():
    with installed(gpus=1) as machine:
        yield machine


@pytest.mark.parametrize("strategy", ["ce-loop", "ce-graph", "ce-batch", "sm-gather", "staged", "gpu-contiguous"])
@pytest.mark.parametrize("where", ["past the last fragment", "before the first fragment"])
def test_a_cuda_strategy_writing_outside_every_fragment_fails_the_case(standin, monkeypatch, strategy, where):
    import cupy as cp

    from kvbench.executors.registry import get_executor

    executor = get_executor(strategy)
    real = type(executor).bind

    def bind(self, src, dst, descriptors, threads=1, stream=None):
        transfer = real(self, src, dst, descriptors, threads, stream=stream)
        ends = descriptors.dst_offset + descriptors.length
        at = int(ends.max()) if where.startswith("past") else int(descriptors.dst_offset.min()) - 1

        def broken():
            transfer()  # then, on the same stream, the overrun's byte: anything but the poison
            cp.cuda.runtime.memsetAsync(int(dst.device_array.data.ptr) + at, POISON ^ 0xFF, 1, stream.ptr)

        return broken

    monkeypatch.setattr(type(executor), "bind", bind)
    case = Case("kv.restore", get_bench("kv.restore").canonical_params({**PARAMS, "strategy": strategy}))
    result = run_case(case, host_facts(), FAST)
    assert result.status == "failed", f"{strategy} passed with one byte written {where}"
    assert result.reason.startswith("integrity check failed: a byte outside every fragment was written"), result.reason


@pytest.mark.parametrize("strategy", ["ce-graph", "sm-gather"])
def test_a_source_never_filled_fails_the_case(standin, monkeypatch, strategy):
    import kvbench.benches.kv.cuda as kv_cuda

    monkeypatch.setattr(kv_cuda, "fill_pattern", lambda *args, **kwargs: None)
    case = Case("kv.restore", get_bench("kv.restore").canonical_params({**PARAMS, "strategy": strategy}))
    result = run_case(case, host_facts(), FAST)
    assert result.status == "failed" and "holds the poison" in result.reason, result.reason
