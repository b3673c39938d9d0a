"""What the CUDA stand-in learned from issue 35: the order CUDA guarantees between streams (legacy,
blocking and non-blocking streams, events, host synchronizes), an access that nothing orders after
the last writer is a race whatever order the stand-in ran them in; cupy's memory pool (a freed
array's block stays readable, is handed to the next allocation of its size, and an access to it is
reported); a runtime library without cudaMemcpyBatchAsync, or none at all. Each bench case that raced,
read a freed block or skipped silently is shown failing on the stand-in when its fix is taken out.
The stand-in proves call order and bytes only: no time or rate here is a measurement."""

import gc

import numpy as np
import pytest

from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu_standin.test_suites import TINY_MODEL

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)


def run(bench, **params):
    return run_case(Case(bench, get_bench(bench).canonical_params(params)), host_facts(), FAST)


# --- the order model ------------------------------------------------------------------------------
def test_an_upload_on_one_gpu_read_by_another_gpu_s_non_blocking_stream_is_a_race(standin_two_gpus):
    import cupy as cp
    from gpu_standin.machine import Race

    with cp.cuda.Device(0):
        src = cp.asarray(np.arange(64, dtype=np.uint8))  # cupy 14: blocking=False, on device 0's legacy stream
    with cp.cuda.Device(1):
        dst = cp.empty(64, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        cp.cuda.runtime.memcpyPeerAsync(dst.data.ptr, 1, src.data.ptr, 0, 64, stream.ptr)
        with pytest.raises(Race, match="reads bytes .* last written by the legacy default stream 0x0 of device 0"):
            stream.synchronize()
    assert len(standin_two_gpus.races) == 1


@pytest.mark.parametrize("order", ["blocking-upload", "device-synchronize", "event"])
def test_what_orders_an_upload_before_another_gpu_reads_it(standin_two_gpus, order):
    import cupy as cp

    with cp.cuda.Device(0):
        src = cp.asarray(np.arange(64, dtype=np.uint8), blocking=order == "blocking-upload")
        if order == "device-synchronize":
            cp.cuda.Device(0).synchronize()
        uploaded = cp.cuda.Event()
        uploaded.record()  # on device 0's current (legacy) stream, after the upload
    with cp.cuda.Device(1):
        dst = cp.empty(64, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        if order == "event":
            stream.wait_event(uploaded)
        cp.cuda.runtime.memcpyPeerAsync(dst.data.ptr, 1, src.data.ptr, 0, 64, stream.ptr)
        stream.synchronize()
        assert np.array_equal(dst.get(), np.arange(64, dtype=np.uint8))
    assert standin_two_gpus.races == []


def test_the_legacy_stream_orders_blocking_streams_but_not_non_blocking_ones(standin):
    import cupy as cp
    from gpu_standin.machine import Race

    host = np.frombuffer(cp.cuda.alloc_pinned_memory(64), dtype=np.uint8, count=64)
    host[:] = 7
    for non_blocking in (False, True):
        a = cp.zeros(64, dtype=cp.uint8)  # a memset on the legacy stream, not waited for
        stream = cp.cuda.Stream(non_blocking=non_blocking)
        cp.cuda.runtime.memcpyAsync(a.data.ptr, host.ctypes.data, 64, 1, stream.ptr)
        if non_blocking:
            with pytest.raises(Race, match="writes bytes .* last written by the legacy default stream"):
                stream.synchronize()
        else:
            stream.synchronize()
            assert int(a.sum()) == 7 * 64  # the memset ran first, then the copy: a GPU's order too


def test_a_write_while_another_stream_may_still_read_is_a_race(standin):
    import cupy as cp
    from gpu_standin.machine import Race

    a = cp.asarray(np.ones(64, dtype=np.uint8), blocking=True)
    b = cp.empty(64, dtype=cp.uint8)
    reader, writer = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    cp.cuda.runtime.memcpyAsync(b.data.ptr, a.data.ptr, 64, 3, reader.ptr)
    cp.cuda.runtime.memsetAsync(a.data.ptr, 0, 64, writer.ptr)
    with pytest.raises(Race, match="last read by the non-blocking stream"):
        cp.cuda.Device(0).synchronize()


# --- the pool model -------------------------------------------------------------------------------
def test_a_freed_array_s_block_is_reported_when_used_and_handed_to_the_next_allocation(standin):
    import cupy as cp
    from gpu_standin.machine import FreedBlockUse

    a = cp.asarray(np.arange(1000, dtype=np.uint8), blocking=True)
    address = int(a.data.ptr)  # what a workload that keeps only the pointer holds
    del a
    gc.collect()
    block = standin.find(address)
    assert block.freed and block.array[:3].tolist() == [0, 1, 2]  # still readable, as on a GPU
    out = cp.empty(4096, dtype=cp.uint8)  # another size: another block
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.runtime.memcpyAsync(out.data.ptr, address, 1000, 3, stream.ptr)
    with pytest.raises(FreedBlockUse, match="whose array was freed"):
        stream.synchronize()
    assert standin.freed_uses
    again = cp.empty(1000, dtype=cp.uint8)  # the same rounded size: the pool hands the block back
    assert int(again.data.ptr) == address and not block.freed
    cp.get_default_memory_pool().free_all_blocks()


def test_work_queued_before_a_free_may_still_use_the_block(standin):
    """cupy's pool is stream-ordered: a copy enqueued while the array lived is not a use after free."""
    import cupy as cp

    out = cp.empty(64, dtype=cp.uint8)
    a = cp.asarray(np.arange(64, dtype=np.uint8))
    cp.cuda.runtime.memcpyAsync(out.data.ptr, a.data.ptr, 64, 3, 0)
    del a
    assert np.array_equal(out.get(), np.arange(64, dtype=np.uint8)) and standin.freed_uses == []


# --- items 1 and 2 of issue 35 on the benchmarks ----------------------------------------------------
def _unordered_upload(host, device):
    """kvbench's upload before issue 35: cupy 14's asarray, not waited for."""
    import cupy as cp

    with cp.cuda.Device(device):
        return cp.asarray(host)


@pytest.mark.parametrize("engine", ["ce", "sm"])
def test_gpu_p2p_read_orders_the_source_upload_before_the_destination_gpu_reads_it(standin_two_gpus, engine,
                                                                                   monkeypatch):
    result = run("gpu.p2p", pair="1-0", engine=engine, direction="read", size="64KiB")
    assert result.status == "ok" and result.measurement.verified, result.reason
    assert standin_two_gpus.races == []
    monkeypatch.setattr("kvbench.benches.p2p.upload", _unordered_upload)
    raced = run("gpu.p2p", pair="1-0", engine=engine, direction="read", size="64KiB")
    assert raced.status == "failed" and "stand-in race" in raced.reason, raced.reason
    assert "last written by the legacy default stream 0x0 of device 1" in raced.reason


def test_kv_handoff_peer_read_orders_its_uploads_before_the_decode_gpu_reads_them(standin_two_gpus, monkeypatch):
    params = {"model": str(TINY_MODEL), "tokens": 128, "pair": "0-1", "strategy": "peer-read"}
    result = run("kv.handoff", **params)
    assert result.status == "ok" and result.measurement.verified, result.reason
    assert standin_two_gpus.races == [] and standin_two_gpus.freed_uses == []
    monkeypatch.setattr("kvbench.benches.handoff.upload", _unordered_upload)
    raced = run("kv.handoff", **params)
    assert raced.status == "failed" and "stand-in race" in raced.reason, raced.reason


@pytest.mark.parametrize("strategy", ["peer-read", "gather-copy-scatter"])
def test_kv_handoff_holds_the_prefill_pool_for_the_case_s_lifetime(standin_two_gpus, monkeypatch, strategy):
    params = {"model": str(TINY_MODEL), "tokens": 128, "pair": "0-1", "strategy": strategy}
    monkeypatch.setattr("kvbench.benches.handoff.hold", lambda stack, *arrays: None)  # as before issue 35
    freed = run("kv.handoff", **params)
    assert freed.status == "failed" and "whose array was freed" in freed.reason, freed.reason
    monkeypatch.undo()
    result = run("kv.handoff", **params)
    assert result.status == "ok" and result.measurement.verified, result.reason


def test_sm_gather_runs_with_nothing_unordered(standin):
    """Its row tables are uploaded through the same helper (its reset's device synchronize ordered
    them before too, by luck rather than by design)."""
    kv = {"model": "Llama-3.1-70B", "tokens": 32, "block_tokens": 16, "src": "pinned", "dst": "device",
          "strategy": "sm-gather"}
    assert run("kv.restore", **kv).status == "ok" and standin.races == [] and standin.freed_uses == []


# --- item 3: ce-batch's runtime library ------------------------------------------------------------
def test_ce_batch_finds_the_runtime_through_cuda_pathfinder_and_records_it(standin):
    kv = {"model": "Llama-3.1-70B", "tokens": 32, "block_tokens": 16, "src": "pinned", "dst": "device",
          "strategy": "ce-batch"}
    result = run("kv.restore", **kv)
    assert result.status == "ok" and result.measurement.verified, result.reason
    assert result.metadata["cudart"] == {"path": "/gpu-standin/lib/libcudart.so.13",
                                         "found_via": "cuda.pathfinder (site-packages)", "version": 13000}


@pytest.mark.parametrize("image, reason", [("missing", "no CUDA runtime library could be loaded"),
                                           ("no-batch", "cudaMemcpyBatchAsync not found in")])
def test_ce_batch_without_a_usable_runtime_skips_with_the_reason(standin, image, reason):
    from kvbench.executors.cuda_batch import batch_unavailable_reason

    standin.cudart = image
    assert reason in batch_unavailable_reason()
    kv = {"model": "Llama-3.1-70B", "tokens": 32, "block_tokens": 16, "src": "pinned", "dst": "device",
          "strategy": "ce-batch"}
    result = run("kv.restore", **kv)
    assert result.status == "skipped" and reason in result.reason
