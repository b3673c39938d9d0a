"""The CUDA stand-in itself: it answers every name kvbench uses, runs work only in an order a GPU
could, refuses pointers a GPU would, and runs every GPU benchmark to a verified result. What it
proves is the bytes and the call order, never a bandwidth or a time (docs/gpu-check.md)."""

import numpy as np
import pytest

from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.backends.test_cuda_api_names import ROOTS, used_names

FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0.005)
KV = {"model": "Llama-3.1-70B", "tokens": 32, "block_tokens": 16, "src": "pinned", "dst": "device"}


def run(bench, **params):
    return run_case(Case(bench, get_bench(bench).canonical_params(params)), host_facts(), FAST)


@pytest.mark.parametrize("module_name", ["cupy", "pynvml"])
def test_it_answers_every_name_kvbench_uses(standin, module_name):
    import importlib

    module = importlib.import_module(module_name)
    missing = []
    for chain in (c for c in used_names() if ROOTS[c[0]] == module_name):
        obj = module
        for name in chain[1:]:
            if not hasattr(obj, name):
                if isinstance(obj, type) or type(obj).__name__ == "module":
                    missing.append(".".join(chain))
                break
            obj = getattr(obj, name)
    assert not missing


def test_work_runs_when_the_host_waits_in_stream_order(standin):
    import cupy as cp

    a = cp.empty(16, dtype=cp.uint8)
    standin.find(a.data.ptr).array[:] = 0  # the test's own look at the bytes, not a CUDA call
    host = np.arange(16, dtype=np.uint8)
    pinned = np.frombuffer(cp.cuda.alloc_pinned_memory(16), dtype=np.uint8, count=16)
    pinned[:] = host
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.runtime.memcpyAsync(a.data.ptr, pinned.ctypes.data, 16, 1, stream.ptr)
    assert standin.find(a.data.ptr).array.sum() == 0  # queued, not run
    stream.synchronize()
    assert np.array_equal(a.get(), host)


def test_a_copy_to_the_wrong_kind_of_memory_is_refused(standin):
    import cupy as cp

    host = np.zeros(16, dtype=np.uint8)
    stream = cp.cuda.Stream(non_blocking=True)
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="device memory is required"):
        cp.cuda.runtime.memcpyAsync(host.ctypes.data, host.ctypes.data, 16, 1, stream.ptr)


def test_a_spin_gate_holds_its_stream_until_released_and_gives_up_only_when_waited_on(standin):
    import cupy as cp

    from kvbench.measure.cuda_timer import SpinGate

    stream = cp.cuda.Stream(non_blocking=True)
    gate = SpinGate()
    gate.arm()
    gate.hold(stream, 0)
    done = cp.cuda.Event()
    done.record(stream)
    other = cp.cuda.Stream(non_blocking=True)
    other.synchronize()  # another stream's wait runs what it can, and leaves the held one held
    assert not done.done
    done.synchronize()  # waiting behind an unreleased gate: the kernel's timeout
    with pytest.raises(RuntimeError, match="gave up"):
        gate.check(1)


@pytest.mark.parametrize("bench,params", [
    ("hbm.read", {"size": "1MiB"}), ("hbm.write", {"size": "1MiB"}), ("hbm.copy", {"size": "1MiB"}),
    ("pcie.h2d", {"size": "1MiB"}), ("pcie.d2h", {"size": "1MiB"}), ("pcie.bidir", {"size": "1MiB"}),
    ("pcie.h2d", {"size": "1MiB", "memory": "pageable"}), ("pcie.d2h", {"size": "1MiB", "engine": "sm"}),
    ("pcie.h2d", {"size": "1MiB", "memory": "numa:0", "engine": "sm"}),
    ("pcie.h2d", {"size": "1MiB", "backend": "torch"}), ("pcie.d2h", {"size": "1MiB", "backend": "torch",
                                                                       "memory": "pageable"}),
    ("gpu.matmul", {"m": 96, "n": 64, "k": 32}),
    *[("kv.restore", {**KV, "strategy": s}) for s in ("ce-loop", "ce-graph", "ce-batch", "sm-gather", "staged",
                                                       "gpu-contiguous")],
])
def test_every_gpu_benchmark_runs_to_a_verified_result(standin, bench, params):
    result = run(bench, **params)
    assert result.status == "ok", result.reason
    assert result.measurement.verified


def test_two_gpus_copy_at_once(standin_two_gpus):
    result = run("pcie.h2d", size="1MiB", gpus="all")
    assert result.status == "ok", result.reason
    assert set(result.metadata["per_gpu_gbps"]) == {"0", "1"}


def test_a_refused_numa_query_leaves_pinned_copies_running_with_the_node_unknown(standin, monkeypatch):
    from kvbench.memory import numa
    from tests.memory.test_host import RefusingLibc

    monkeypatch.setattr(numa, "_libc", RefusingLibc())  # gVisor: move_pages answers EPERM
    for memory in ("pinned", "pageable"):
        result = run("pcie.h2d", size="1MiB", memory=memory)
        assert result.status == "ok", result.reason
        assert result.metadata["buffers"]["host"]["numa_node"] is None
        assert "not permitted" in result.metadata["buffers"]["host"]["numa_unknown"]


@pytest.mark.parametrize("bench,params", [("pcie.h2d", {"size": "1MiB", "memory": "pageable"}),
                                          ("pcie.d2h", {"size": "1MiB", "memory": "pageable"}),
                                          ("kv.restore", {**KV, "strategy": "ce-loop"}),
                                          ("kv.restore", {**KV, "strategy": "staged"}),
                                          ("pcie.h2d", {"size": "1MiB"})])
def test_every_copy_records_its_link_read_under_load_where_the_timer_allows(standin, bench, params):
    result = run(bench, **params)
    assert result.status == "ok", result.reason
    assert result.metadata["link"]["gen"] == 5  # what the stand-in's NVML answers
    host_timed = params.get("memory") == "pageable" or params.get("strategy") in ("ce-loop", "staged")
    assert result.metadata["link"]["under_load"] is (not host_timed)


class LateFailure(Exception):
    pass


@pytest.mark.parametrize("module,bench,params", [
    ("kvbench.benches.hbm", "hbm.copy", {"size": "1MiB"}),
    ("kvbench.benches.pcie", "pcie.h2d", {"size": "1MiB", "memory": "numa:0"}),
    ("kvbench.benches.pcie", "pcie.h2d", {"size": "1MiB", "memory": "pageable"}),
    ("kvbench.benches.kv.cuda", "kv.restore", {**KV, "strategy": "sm-gather"}),
])
def test_a_prepare_that_fails_late_closes_everything_it_opened(standin, monkeypatch, module, bench, params):
    import importlib

    import pynvml

    def fail(*args, **kwargs):
        raise LateFailure("the timer could not be made")

    target = importlib.import_module(module)
    monkeypatch.setattr(target, "CudaEventTimer", fail)
    monkeypatch.setattr(target, "MonotonicTimer", fail, raising=False)
    result = run(bench, **params)
    assert result.status == "failed" and "the timer could not be made" in result.reason
    assert pynvml._inits == 0, "the link probe was left open"
    assert not [a for a in standin.allocations.values() if a.kind == "registered"], "a host buffer stayed registered"


@pytest.mark.parametrize("bench,params", [("hbm.read", {"size": "1MiB"}), ("pcie.h2d", {"size": "1MiB"}),
                                          ("kv.restore", {**KV, "strategy": "ce-graph"})])
def test_a_closing_case_hands_cupy_s_cached_blocks_back(standin, bench, params):
    assert run(bench, **params).status == "ok"
    assert standin.freed_pools == 2  # the device pool and the pinned pool, once each


def test_all_gpus_at_once_hands_the_cached_blocks_back_too(standin_two_gpus):
    assert run("pcie.d2h", size="1MiB", gpus="all").status == "ok"
    assert standin_two_gpus.freed_pools == 2


@pytest.mark.parametrize("breakage", ["nothing", "half"])
def test_a_product_that_stops_halfway_is_caught(standin, breakage):
    standin.breakage["matmul"] = breakage
    result = run("gpu.matmul", m=256, n=64, k=32)
    assert result.status == "failed" and result.reason.startswith("integrity check failed"), result.reason


def test_ce_batch_times_the_driver_call_on_arrays_built_once(standin):
    """Each timed ce-batch operation hands the runtime the same prebuilt uint64 arrays (no Python
    lists converted per call, which cost more than the copies: issue 25, item 4)."""
    result = run("kv.restore", **KV, strategy="ce-batch")
    assert result.status == "ok", result.reason
    calls = standin.batch_arrays
    assert len(calls) > 5 and len(set(calls)) == 1  # verify, warm-up and every sample: one set of arrays


def test_only_load_launches_inside_timed_copy_windows_count_as_under_load():
    from kvbench.backends.gpu_load import in_windows

    windows = [(10.0, 20.0), (30.0, 40.0)]
    launches = [(0.0, 2.0), (9.0, 13.0), (18.0, 24.0), (25.0, 28.0), (35.0, 36.0), (39.0, 45.0)]
    assert in_windows(launches, windows) == [4.0, 1.0]  # 3 of 4 ms inside; wholly inside; the rest under half


@pytest.mark.parametrize("bench,params", [("pcie.h2d", {"size": "1MiB", "load": "hbm"}),
                                          ("kv.restore", {**KV, "strategy": "ce-batch", "load": "gemm"})])
def test_a_load_records_how_many_of_its_launches_ran_beside_timed_copies(standin, monkeypatch, bench, params):
    from kvbench.backends import gpu_load

    monkeypatch.setattr(gpu_load, "HBM_BYTES", 1 << 20)  # the stand-in's kernels are numpy: small loads
    monkeypatch.setattr(gpu_load, "GEMM_N", 64)
    result = run(bench, **params)
    assert result.status == "ok", result.reason
    load = result.metadata["load"]
    assert load["copy_windows"] > 0 and 0 <= load["launches_in_copy_windows"] <= load["launches"]
    assert (load["kernel_under_load_ms"] is None) is (load["launches_in_copy_windows"] == 0)


@pytest.mark.parametrize("bench,params", [("pcie.h2d", {"size": "1MiB", "load": "hbm"}),
                                          ("pcie.bidir", {"size": "1MiB", "load": "hbm"}),
                                          ("kv.restore", {**KV, "strategy": "ce-batch", "load": "gemm"})])
def test_copies_under_load_measure_their_ratio_to_the_same_copies_alone_in_the_same_case(standin, monkeypatch,
                                                                                          bench, params):
    """Alone and loaded samples interleaved in one case, the load paused (nothing of it in flight)
    around each alone sample: the ratio per pair is what the report's under-load table reads."""
    from kvbench.backends import gpu_load
    from kvbench.benches import under_load

    monkeypatch.setattr(gpu_load, "HBM_BYTES", 1 << 20)
    monkeypatch.setattr(gpu_load, "GEMM_N", 64)
    launched_while_held, alone_samples = [], []
    bracketed, timed = gpu_load.GpuLoad._bracketed, under_load.LoadPaused.time

    def watched_launch(self):
        if hasattr(self, "_held"):  # past the kernel's timing alone in __init__
            launched_while_held.append(self._held.is_set() and self._paused.is_set())
        return bracketed(self)

    def watched_time(self, op, loops):
        alone_samples.append(loops)
        return timed(self, op, loops)

    monkeypatch.setattr(gpu_load.GpuLoad, "_bracketed", watched_launch)
    monkeypatch.setattr(under_load.LoadPaused, "time", watched_time)
    result = run(bench, **params)
    assert result.status == "ok", result.reason
    m, paired = result.measurement, result.to_row()["extra"]["paired"]
    assert paired["against"] == {"load": "none"}
    assert paired["pairs"] == len(m.samples_s) == len(m.paired.samples_s)
    assert paired["ratios"] == pytest.approx([b / a for a, b in zip(m.samples_s, m.paired.samples_s)])
    assert len(alone_samples) >= len(m.samples_s)  # every alone sample (and its warm-up, calibration) paused the load
    assert launched_while_held and not any(launched_while_held)
    assert result.metadata["load"]["copy_windows"] > 0


def test_a_load_that_cannot_pause_fails_the_case_with_the_reason(standin, monkeypatch):
    from kvbench.backends import gpu_load

    monkeypatch.setattr(gpu_load, "HBM_BYTES", 1 << 20)

    def broken(self):
        raise RuntimeError("the hbm load did not pause: its thread ended")

    monkeypatch.setattr(gpu_load.GpuLoad, "pause", broken)
    result = run("pcie.h2d", size="1MiB", load="hbm")
    assert result.status == "failed" and "did not pause" in result.reason


@pytest.mark.parametrize("strategy", ["ce-loop", "ce-graph", "ce-batch", "sm-gather", "staged"])
def test_a_cuda_kv_strategy_measures_its_ratio_to_one_contiguous_copy_in_the_same_case(standin, strategy):
    """gpu-contiguous runs interleaved with the strategy on its buffers, stream and clock; the ratio per
    pair of samples is what the KV figure and kv-gpu-best-vs-contiguous read (docs/measurement.md)."""
    result = run("kv.restore", **KV, strategy=strategy)
    assert result.status == "ok", result.reason
    paired = result.to_row()["extra"]["paired"]
    assert paired["against"] == {"strategy": "gpu-contiguous"}
    assert paired["pairs"] == len(result.measurement.samples_s) and paired["p10"] <= paired["median"] <= paired["p90"]


def test_a_gpu_ceiling_that_copies_nothing_fails_the_fragmented_case(standin, monkeypatch):
    from kvbench.executors.cuda_kv import GpuContiguous

    monkeypatch.setattr(GpuContiguous, "_bind", lambda self, *args: lambda: None)
    result = run("kv.restore", **KV, strategy="ce-graph")
    assert result.status == "failed" and "gpu-contiguous" in result.reason, result.reason


@pytest.mark.parametrize("bench", ["pcie.h2d", "pcie.d2h"])
def test_a_pageable_copy_measures_its_ratio_to_pinned_in_the_same_case(standin, bench):
    result = run(bench, size="1MiB", memory="pageable")
    assert result.status == "ok", result.reason
    paired = result.to_row()["extra"]["paired"]
    assert paired["against"] == {"memory": "pinned"} and paired["pairs"] == len(result.measurement.samples_s)


def test_both_directions_measure_their_ratio_to_host_to_device_alone_in_the_same_case(standin):
    result = run("pcie.bidir", size="1MiB")
    assert result.status == "ok", result.reason
    m, paired = result.measurement, result.to_row()["extra"]["paired"]
    assert paired["against"] == {"bench": "pcie.h2d"} and m.paired.bytes_per_op * 2 == m.bytes_per_op
    assert paired["ratios"] == pytest.approx([(2 * b) / a for a, b in zip(m.samples_s, m.paired.samples_s)])
    assert "directions_gbps" in result.metadata  # the loaded sample's own record, not the twin's


@pytest.mark.parametrize("bench,memory", [("pcie.h2d", "pinned"), ("pcie.d2h", "pageable")])
def test_torch_copies_measure_their_ratio_to_the_same_copies_through_cupy_in_the_same_case(standin, bench, memory):
    result = run(bench, size="1MiB", memory=memory, backend="torch")
    assert result.status == "ok", result.reason
    m, paired = result.measurement, result.to_row()["extra"]["paired"]
    assert paired["against"] == {"backend": "cupy"} and result.metadata["backend"] == "torch"
    assert paired["ratios"] == pytest.approx([b / a for a, b in zip(m.samples_s, m.paired.samples_s)])


def test_a_cupy_side_that_copies_nothing_fails_the_torch_case(standin, monkeypatch):
    from kvbench.benches import pcie

    real = pcie.paired_with

    def broken(prepared, against, build):
        out = real(prepared, against, build)
        out.workload.pair.workload.run = lambda: None
        return out

    monkeypatch.setattr(pcie, "paired_with", broken)
    result = run("pcie.h2d", size="1MiB", backend="torch")
    assert result.status == "failed" and "integrity" in result.reason, result.reason


def test_a_pinned_twin_that_copies_nothing_fails_the_pageable_case(standin, monkeypatch):
    from kvbench.benches import pcie

    real = pcie._pinned_twin

    def broken(*args):
        pair = real(*args)
        pair.workload.run = lambda: None
        return pair

    monkeypatch.setattr(pcie, "_pinned_twin", broken)
    result = run("pcie.h2d", size="1MiB", memory="pageable")
    assert result.status == "failed" and "pinned copy beside the pageable one" in result.reason, result.reason


def _two_nodes(monkeypatch, gpu_node: int) -> None:
    """A fake topology on a one-node box: NUMA nodes 0 and 1 exist (node 1's pages land where the
    kernel puts them, the node query says unknown) and the GPU hangs off `gpu_node`."""
    from kvbench.benches import pcie
    from kvbench.memory import numa

    monkeypatch.setattr(numa, "online_nodes", lambda sys_root="/": [0, 1])
    monkeypatch.setattr(numa, "bind_to_node", lambda address, size, node: None)
    monkeypatch.setattr(numa, "node_of", lambda address, size: (None, "fake topology"))
    monkeypatch.setattr(pcie, "gpu_numa_node", lambda gpu: gpu_node)


@pytest.mark.parametrize("bench,engine", [("pcie.h2d", "ce"), ("pcie.d2h", "ce"), ("pcie.h2d", "sm")])
def test_a_far_node_copy_measures_its_ratio_to_the_gpu_s_near_node_in_the_same_case(standin, monkeypatch, bench,
                                                                                       engine):
    _two_nodes(monkeypatch, gpu_node=0)
    result = run(bench, size="1MiB", memory="numa:1", engine=engine)
    assert result.status == "ok", result.reason
    m, paired = result.measurement, result.to_row()["extra"]["paired"]
    assert paired["against"] == {"memory": "numa:0"} and result.metadata["gpu_numa_node"] == 0
    assert paired["pairs"] == len(m.samples_s) == len(m.paired.samples_s)
    assert paired["ratios"] == pytest.approx([b / a for a, b in zip(m.samples_s, m.paired.samples_s)])
    near = run(bench, size="1MiB", memory="numa:0", engine=engine)  # the near case has nothing to pair with
    assert near.status == "ok" and "paired" not in near.to_row()["extra"]


def test_a_near_twin_that_copies_nothing_fails_the_far_case(standin, monkeypatch):
    from kvbench.benches import pcie

    _two_nodes(monkeypatch, gpu_node=1)
    real = pcie._host_twin

    def broken(*args):
        pair = real(*args)
        pair.workload.run = lambda: None
        return pair

    monkeypatch.setattr(pcie, "_host_twin", broken)
    result = run("pcie.h2d", size="1MiB", memory="numa:0")
    assert result.status == "failed" and "near-node copy beside the far one" in result.reason, result.reason


BYTE_CHECKS = [  # (bench, params, what the stand-in breaks: its copies, or one kernel)
    ("hbm.read", {"size": "1MiB"}, "hbm_read"), ("hbm.write", {"size": "1MiB"}, "hbm_write"),
    ("hbm.copy", {"size": "1MiB"}, "vector_copy"),
    ("pcie.h2d", {"size": "1MiB"}, "memcpy"), ("pcie.d2h", {"size": "1MiB"}, "memcpy"),
    ("pcie.bidir", {"size": "1MiB"}, "memcpy"), ("pcie.h2d", {"size": "1MiB", "memory": "pageable"}, "memcpy"),
    ("pcie.d2h", {"size": "1MiB", "memory": "pageable"}, "memcpy"),
    ("pcie.h2d", {"size": "1MiB", "engine": "sm"}, "vector_copy"),
    ("pcie.d2h", {"size": "1MiB", "engine": "sm"}, "vector_copy"),
    ("pcie.h2d", {"size": "1MiB", "backend": "torch"}, "memcpy"),
    ("pcie.d2h", {"size": "1MiB", "backend": "torch", "memory": "pageable"}, "memcpy"),
    ("gpu.matmul", {"m": 256, "n": 64, "k": 32}, "matmul"),
    *[("kv.restore", {**KV, "strategy": s}, "memcpy") for s in ("ce-loop", "ce-graph", "ce-batch", "staged",
                                                                  "gpu-contiguous")],
    ("kv.restore", {**KV, "strategy": "sm-gather"}, "kv_gather"),
]


@pytest.mark.parametrize("how", ["nothing", "half"])
@pytest.mark.parametrize("bench,params,what", BYTE_CHECKS)
def test_each_gpu_byte_check_fails_when_the_copy_or_kernel_does_nothing_or_half(standin, bench, params, what, how):
    standin.breakage[what] = how
    result = run(bench, **params)
    assert result.status == "failed", f"{bench} {params} passed with {what} doing {how}"
    assert result.reason.startswith("integrity check failed"), result.reason


def test_each_copy_of_every_gpu_at_once_is_checked(standin_two_gpus):
    standin_two_gpus.breakage["memcpy"] = "half"
    result = run("pcie.h2d", size="1MiB", gpus="all")
    assert result.status == "failed" and result.reason.startswith("integrity check failed"), result.reason


def test_eight_gpus_and_peer_copies_for_the_gpu_to_gpu_paths():
    """What issue 30's P2P benchmarks will build on: N simulated GPUs, peer access, peer copies."""
    from tests.gpu_standin.fixture import installed

    with installed(gpus=8) as machine:
        import cupy as cp

        assert cp.cuda.runtime.getDeviceCount() == 8
        assert cp.cuda.runtime.deviceCanAccessPeer(0, 7) == 1 and cp.cuda.runtime.deviceCanAccessPeer(3, 3) == 0
        with cp.cuda.Device(0):
            cp.cuda.runtime.deviceEnablePeerAccess(7)
            src = cp.asarray(np.arange(64, dtype=np.uint8), blocking=True)  # landed before device 7 reads it
        with cp.cuda.Device(7):
            dst = cp.zeros(64, dtype=cp.uint8)
            cp.cuda.get_current_stream().synchronize()  # the memset, before another stream writes it
            stream = cp.cuda.Stream(non_blocking=True)
            cp.cuda.runtime.memcpyPeerAsync(dst.data.ptr, 7, src.data.ptr, 0, 64, stream.ptr)
            stream.synchronize()
            assert np.array_equal(dst.get(), np.arange(64, dtype=np.uint8))
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="not device 0"):
                cp.cuda.runtime.memcpyPeerAsync(dst.data.ptr, 7, dst.data.ptr, 0, 64, stream.ptr)
        assert (0, 7) in machine.peer_access


def test_a_load_whose_launch_never_finishes_fails_the_case_instead_of_holding_it(standin, monkeypatch):
    """A load kernel that never completes holds the load's thread: pausing it and stopping it are both
    bounded (gpu_load.HANG_S), so the case fails with the reason instead of waiting for ever."""
    import threading

    from kvbench.backends import gpu_load

    monkeypatch.setattr(gpu_load, "HBM_BYTES", 1 << 20)
    monkeypatch.setattr(gpu_load, "HANG_S", 0.5)
    released = threading.Event()
    monkeypatch.setattr(gpu_load.GpuLoad, "_finished", lambda self, start, end: released.wait())
    try:
        result = run("pcie.h2d", size="1MiB", load="hbm")
    finally:
        released.set()  # the load's thread ends
    assert result.status == "failed" and "the hbm load did not pause" in result.reason, result.reason
