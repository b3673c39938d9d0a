"""Issue 44, items 1-3, on the CUDA stand-in: every GPU byte mover can be broken to write N bytes past
its end or before its start (`machine.breakage[what] = "past:N" | "before:N"`), or on one device's
streams only (`what@D`: one direction of a bidirectional case), and each check that guards a
destination catches it; gpu.p2p checks both directions; its two sources hold different patterns, so
a direction that copies the other GPU's buffer fails. The stand-in proves bytes only, no rate."""

import numpy as np
import pytest

from kvbench.benches import get_bench
from kvbench.errors import IntegrityError
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu_standin.test_suites import TINY_MODEL

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)
KV = {"model": "Llama-3.1-70B", "tokens": 32, "block_tokens": 16, "src": "pinned", "dst": "device"}
HANDOFF = {"model": str(TINY_MODEL), "tokens": 128, "pair": "0-1"}


def run(bench, **params):
    return run_case(Case(bench, get_bench(bench).canonical_params(params)), host_facts(), FAST)


# (benchmark, parameters, the byte mover broken: on the decode / destination GPU where it matters)
MOVERS = [
    ("gpu.p2p", {"pair": "0-1", "size": "64KiB"}, "memcpy"),
    ("gpu.p2p", {"pair": "0-1", "size": "64KiB", "direction": "read"}, "memcpy"),
    ("gpu.p2p", {"pair": "0-1", "size": "64KiB", "engine": "sm"}, "vector_copy"),
    ("gpu.p2p", {"pair": "0-1", "size": "64KiB", "engine": "sm", "bidir": "yes"}, "vector_copy"),
    ("kv.handoff", {**HANDOFF, "strategy": "peer-read"}, "kv_gather"),
    ("kv.handoff", {**HANDOFF, "strategy": "gather-copy-scatter"}, "kv_gather@1"),
    *[("kv.restore", {**KV, "strategy": s}, "memcpy") for s in ("ce-loop", "ce-graph", "ce-batch", "gpu-contiguous")],
    ("kv.restore", {**KV, "strategy": "sm-gather"}, "kv_gather"),
    ("hbm.write", {"size": "1MiB"}, "hbm_write"),
    ("hbm.copy", {"size": "1MiB"}, "vector_copy"),
]


@pytest.mark.parametrize("bench, params, what", MOVERS, ids=lambda v: v if isinstance(v, str) else None)
@pytest.mark.parametrize("how", ["past:64", "before:64", "past:1"])
def test_a_copy_or_kernel_that_writes_outside_its_bytes_fails_the_check(standin_two_gpus, bench, params, what, how):
    standin_two_gpus.breakage[what] = how
    result = run(bench, **params)
    assert result.status == "failed" and result.reason.startswith("integrity check failed"), result.reason


def test_the_stand_in_writes_outside_a_copy_only_where_told(standin):
    import cupy as cp

    whole = cp.asarray(np.full(64, 0xA5, dtype=np.uint8), blocking=True)
    src = cp.asarray(np.arange(16, dtype=np.uint8), blocking=True)
    standin.breakage["memcpy"] = "before:4"
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.runtime.memcpyAsync(whole[16:32].data.ptr, src.data.ptr, 16, 3, stream.ptr)
    stream.synchronize()
    got = whole.get()
    assert got[12:16].tolist() == [0x5A] * 4 and got[16:32].tolist() == list(range(16))
    assert (got[:12] == 0xA5).all() and (got[32:] == 0xA5).all()


@pytest.mark.parametrize("engine", ["ce", "sm"])
@pytest.mark.parametrize("direction", ["write", "read"])
def test_gpu_p2p_bidir_checks_each_direction_alone(standin_two_gpus, engine, direction):
    mover = "memcpy" if engine == "ce" else "vector_copy"
    # the reverse direction (1 -> 0) runs on GPU 1's stream when GPU 1 pushes, on GPU 0's when GPU 0 pulls
    reverse, forward = (1, 0) if direction == "write" else (0, 1)
    for device, named in ((reverse, "GPU 1 -> GPU 0"), (forward, "GPU 0 -> GPU 1")):
        standin_two_gpus.breakage.clear()
        standin_two_gpus.breakage[f"{mover}@{device}"] = "nothing"
        result = run("gpu.p2p", pair="0-1", engine=engine, direction=direction, bidir="yes", size="64KiB")
        assert result.status == "failed" and named in result.reason, result.reason


def test_gpu_p2p_bidir_sources_differ_so_a_swapped_source_fails(standin_two_gpus, monkeypatch):
    """Each direction's source holds its own pattern (seed 40 + its GPU): a direction that copies the
    other GPU's buffer, bytes right for the other direction, fails its check."""
    import kvbench.benches.p2p as p2p

    uploaded = []

    def recording(host, device):
        array = real_upload(host, device)
        uploaded.append(array)
        return array

    real_upload = p2p.upload
    monkeypatch.setattr(p2p, "upload", recording)
    bench = get_bench("gpu.p2p")
    prepared = bench.prepare(bench.canonical_params({"pair": "0-1", "bidir": "yes", "size": "64KiB"}))
    try:
        w = prepared.workload
        w.reset()
        w.run()
        w.check()
        a, b = (standin_two_gpus.find(int(x.data.ptr)).array[:x.nbytes] for x in uploaded)
        assert not np.array_equal(a, b)  # two patterns, not one
        swapped = a.copy()
        a[:], b[:] = b, swapped  # each direction now reads the other's source (the test's own write)
        w.reset()
        w.run()
        with pytest.raises(IntegrityError, match="differ from the source's pattern"):
            w.check()
    finally:
        prepared.close()
