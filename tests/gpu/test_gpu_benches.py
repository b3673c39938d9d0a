"""Every GPU benchmark measured and verified on a real device (runs in scripts/gpu-check)."""

import pytest

from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.measure import Settings
from kvbench.plan.cases import Case, plan
from kvbench.plan.suite import BenchSweep
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu.scale import TINY_MODEL, rates_are_real, sized

FAST = Settings(samples=5, min_sample_s=0.005, warmup_s=0.01)


@pytest.fixture(scope="module")
def facts():
    return host_facts()


def run(facts, bench, **params):
    from kvbench.metadata import unknown

    result = run_case(Case(bench, get_bench(bench).canonical_params(params)), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    assert unknown(result.to_row()["extra"]) == []  # every key it wrote is registered with its unit
    return result


@pytest.mark.parametrize("bench", ["hbm.read", "hbm.write", "hbm.copy"])
def test_hbm_kernels_move_and_verify(facts, bench):
    result = run(facts, bench, size=sized("256MiB", "1MiB"))
    if rates_are_real():
        assert result.gbps["median"] > 100  # any HBM GPU does far more; a broken timer does far less
    if result.peak and rates_are_real():
        assert result.efficiency < 1.0, "above 100% of peak is a measurement bug"


@pytest.mark.parametrize("bench", ["pcie.h2d", "pcie.d2h"])
@pytest.mark.parametrize("memory,engine", [("pinned", "ce"), ("pageable", "ce"), ("pinned", "sm"), ("numa:0", "ce")])
def test_pcie_copies(facts, bench, memory, engine):
    result = run(facts, bench, memory=memory, engine=engine, size=sized("64MiB", "1MiB"))
    assert 0.5 < result.gbps["median"] < 300 or not rates_are_real()
    assert "link" in result.metadata and result.metadata["link"]["gen"]
    # copies timed on events leave the host free to read the link while they run
    assert result.metadata["link"]["under_load"] is (memory != "pageable")


def test_bidirectional_reports_the_sum(facts):
    result = run(facts, "pcie.bidir", size=sized("64MiB", "1MiB"))
    directions = result.metadata["directions_gbps"]
    assert 0 < directions["overlap"] <= 1
    assert result.to_row()["extra"]["paired"]["against"] == {"bench": "pcie.h2d"}  # h2d alone, interleaved
    if not rates_are_real():
        return
    assert directions["sum"] == pytest.approx(result.gbps["median"], rel=0.2)
    assert 0 < directions["overlap"] <= 1
    assert directions["h2d"] + directions["d2h"] >= 0.95 * directions["sum"]  # last sample vs the median
    # on one PCIe link the two directions run within 2x of each other: the padding covers both
    assert directions["opposite_busy"] == {"h2d": True, "d2h": True}


@pytest.mark.parametrize("params,message", [
    ({"gpu": 99}, "this host has GPUs"),
    ({"size": "100TiB"}, "exceed 90% of its"),
    ({"engine": "sm", "memory": "pageable"}, "engine=sm with memory=pageable"),
])
def test_bad_gpu_input(params, message):
    with pytest.raises(BadInput, match=message):
        plan([BenchSweep(id="pcie.h2d", params=params)])


def test_a_kv_restore_into_a_gpu_that_does_not_exist_is_bad_input():
    with pytest.raises(BadInput, match=r"bad dst=device:99: this host has GPUs"):
        plan([BenchSweep(id="kv.restore", params={"src": "pinned", "dst": "device:99", "strategy": "ce-graph",
                                                  "tokens": 64})])


@pytest.mark.parametrize("strategy", ["ce-loop", "ce-graph", "sm-gather", "gpu-contiguous", "ce-batch"])
def test_every_cuda_kv_strategy_lands_every_fragment(facts, strategy):
    model = sized("Qwen2.5-32B", TINY_MODEL)
    params = {"model": model, "tokens": 256, "src": "pinned", "dst": "device", "strategy": strategy}
    result = run_case(Case("kv.restore", get_bench("kv.restore").canonical_params(params)), facts, FAST)
    if strategy == "ce-batch" and result.status == "skipped":
        pytest.skip(result.reason)
    assert result.status == "ok", result.reason
    layers = sized(64, 2)
    assert result.measurement.verified and result.metadata["layout_fragments"] == 16 * 2 * layers  # blocks × K, V


def test_staged_strategy_into_a_page_first_pool(facts):
    run(facts, "kv.restore", model=sized("Qwen2.5-32B", TINY_MODEL), tokens=256, src="pinned", dst="device", strategy="staged",
        dst_layout="page_first")


def test_all_gpus_at_once(facts):
    result = run(facts, "pcie.h2d", gpus="all", size=sized("64MiB", "1MiB"))
    assert len(result.metadata["per_gpu_gbps"]) == len(result.metadata["gpus"])
    assert all(link["link"]["under_load"] for link in result.metadata["per_gpu_link"].values())
    assert all(host["kind"] == "pinned" or not host.get("far_numa") for host in result.metadata["per_gpu_host"].values())


def test_torch_and_cupy_agree_within_three_percent(facts):
    if not rates_are_real():
        pytest.skip("a comparison of rates: the CUDA stand-in has no timing truth")
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("torch is not installed")
    theirs = run(facts, "pcie.h2d", memory="pinned", size="256MiB", backend="torch")
    paired = theirs.to_row()["extra"]["paired"]  # cupy's copies timed interleaved with torch's, in the same case
    assert paired["against"] == {"backend": "cupy"} and paired["median"] == pytest.approx(1.0, rel=0.03)


@pytest.mark.parametrize("m,n,k", sized([(4096, 4096, 4096), (8192, 3 * 8192, 8192)],  # square; a prefill's MLP
                                         [(128, 128, 64), (192, 3 * 64, 64)]))
def test_matmul_is_checked_in_fp32_and_reports_tflops(facts, m, n, k):
    result = run(facts, "gpu.matmul", m=m, n=n, k=k)
    tflops = result.metadata["tflops"]
    assert (1 < tflops < 5000 or not rates_are_real()) and result.metadata["max_rel_error"] <= 2e-2
    spec = result.metadata.get("spec_tflops")
    if spec:
        assert tflops < 1.02 * spec, "above the datasheet's dense rate is a measurement bug"


@pytest.mark.parametrize("bench,params", [
    ("pcie.h2d", {"load": "hbm", "size": sized("256MiB", "1MiB")}),
    ("pcie.d2h", {"load": "gemm", "size": sized("256MiB", "1MiB")}),
    ("kv.restore", {"load": "gemm", "model": sized("Llama-3.1-70B", TINY_MODEL), "tokens": 1024, "src": "pinned",
                    "dst": "device", "strategy": "ce-batch"}),
])
def test_copies_under_load_report_both_sides(facts, monkeypatch, bench, params):
    if not rates_are_real():  # numpy kernels: a small load
        from kvbench.backends import gpu_load

        monkeypatch.setattr(gpu_load, "HBM_BYTES", 1 << 20)
        monkeypatch.setattr(gpu_load, "GEMM_N", 64)
    result = run(facts, bench, **params)
    load = result.metadata["load"]
    assert load["kind"] == params["load"] and load["launches"] > 0
    paired = result.to_row()["extra"]["paired"]  # the same copies alone, the load paused, interleaved
    assert paired["against"] == {"load": "none"} and paired["pairs"] == len(result.measurement.samples_s)
    assert load["copy_windows"] > 0 and load["launches_in_copy_windows"] <= load["launches"]
    if rates_are_real():
        assert load["kernel_alone_ms"] > 0 and load["kernel_slowdown"] >= 0.8  # a kernel does not speed up under load


@pytest.mark.parametrize("strategy", ["ce-graph", "sm-gather"])
def test_a_replay_window_is_restored_into_hbm(facts, tmp_path, strategy):
    import json

    rows = [{"timestamp": 0, "input_length": 12, "output_length": 1, "hash_ids": [1, 2, 3]},
            {"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1, 2, 9]},
            {"timestamp": 9, "input_length": 8, "output_length": 1, "hash_ids": [1, 7]}]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run(facts, "kv.replay", trace=str(trace), trace_block_tokens=4, block_tokens=2, start=0, requests=3,
                 model=sized("Llama-3.1-8B", TINY_MODEL), pool="4MiB", dest="4MiB", src="pinned", dst="device",
                 strategy=strategy)
    assert result.metadata["replay_requests"] == [1, 2] and len(result.metadata["replay_request_s"]) == 2
