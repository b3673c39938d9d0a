"""gpu.p2p on the CUDA stand-in with two and eight simulated GPUs: every engine, direction and bidir
runs to a verified result, each check fails when its copy does nothing or half, the pair's link and
peak come from (stand-in) NVML and peaks.toml, and one GPU skips with the reason. The stand-in proves
bytes and call order only: no rate here is a measurement (docs/gpu-check.md)."""

import pytest

from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.plan.cases import Case, expand
from kvbench.plan.suite import BenchSweep
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts
from tests.gpu_standin.fixture import installed

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)
VARIANTS = [{"engine": e, "direction": d, "bidir": b} for e in ("ce", "sm") for d in ("write", "read")
            for b in ("no", "yes")]


def run(**params):
    return run_case(Case("gpu.p2p", get_bench("gpu.p2p").canonical_params({"size": "64KiB", **params})),
                    host_facts(), FAST)


@pytest.fixture(params=[2, 8], ids=["2gpus", "8gpus"])
def gpus(request):
    with installed(gpus=request.param) as machine:
        yield machine


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(v.values()))
def test_every_engine_direction_and_bidir_runs_to_a_verified_result(gpus, variant):
    pair = f"{len(gpus.gpus) - 1}-0"
    result = run(pair=pair, **variant)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    meta = result.metadata
    assert meta["peer_link"]["kind"] == "nvlink" and meta["peer_link"]["links"] == 18
    assert meta["nvbandwidth_equivalent"].startswith("device_to_device_")
    src, dst = (int(x) for x in pair.split("-"))
    assert meta["initiators"][f"{src}->{dst}"] == (src if variant["direction"] == "write" else dst)
    if variant["bidir"] == "yes":
        rates = meta["directions_gbps"]
        assert set(rates) >= {f"{src}->{dst}", f"{dst}->{src}", "sum", "nvbandwidth_sum"}
        # nvbandwidth's definition: the two directions' own rates summed; kvbench's over the slowest window
        assert rates["nvbandwidth_sum"] == rates[f"{src}->{dst}"] + rates[f"{dst}->{src}"]
        assert rates["sum"] <= rates["nvbandwidth_sum"] * (1 + 1e-9)
    if variant["engine"] == "sm":
        assert gpus.launches.get("vector_copy", 0) > 0


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(v.values()))
@pytest.mark.parametrize("how", ["nothing", "half"])
def test_each_check_fails_when_its_copy_does_nothing_or_half(gpus, variant, how):
    gpus.breakage["memcpy" if variant["engine"] == "ce" else "vector_copy"] = how
    result = run(pair="0-1", **variant)
    assert result.status == "failed" and result.reason.startswith("integrity check failed"), result.reason
    assert "differ from the source's pattern" in result.reason


def test_every_ordered_pair_of_eight_gpus_is_a_case_and_each_runs_verified():
    with installed(gpus=8):
        cases = expand(BenchSweep(id="gpu.p2p", params={"pair": "*", "size": "16KiB"}))
        assert len(cases) == 56 and {c.params["pair"] for c in cases} >= {"0-7", "7-0", "3-4"}
        for case in cases:
            result = run_case(case, host_facts(), FAST)
            assert result.status == "ok" and result.measurement.verified, (case.params, result.reason)


def test_one_gpu_skips_with_the_reason(standin):
    assert [c.params["pair"] for c in expand(BenchSweep(id="gpu.p2p", params={"pair": "*"}))] == ["0-1"]
    result = run(pair="0-1")
    assert result.status == "skipped" and "two GPUs; this host has 1" in result.reason


def test_the_peak_is_the_pair_s_nvlink_links_from_peaks_toml(standin_two_gpus):
    for gpu in standin_two_gpus.gpus:
        gpu.name = "NVIDIA H200"  # a peaks.toml row for the stand-in's 18 NVSwitch links: a spec, not a rate
    one, both = run(pair="0-1"), run(pair="1-0", bidir="yes")
    assert one.peak.gbps == 18 * 25 and "18 NVLink 4 links (nvswitch)" in one.peak.source
    assert both.peak.gbps == 2 * 18 * 25
    assert one.metadata["bottleneck"] == "gpu_peer:0:1"


def test_a_gpu_without_an_nvlink_row_names_what_is_missing(standin_two_gpus):
    result = run(pair="0-1")
    assert result.status == "ok" and result.peak is None
    assert "no [[nvlink]] row in peaks.toml" in result.peak_reason


def test_pcie_peer_to_peer_takes_the_slower_gpu_link_as_its_peak(standin_two_gpus):
    standin_two_gpus.gpu_links = "pcie"
    result = run(pair="0-1", engine="sm")
    assert result.status == "ok" and result.metadata["peer_link"]["kind"] == "pcie"
    assert round(result.peak.gbps, 1) == 63.0 and "PCIe peer-to-peer" in result.peak.source


def test_without_peer_to_peer_the_copy_is_said_to_be_staged_and_a_kernel_cannot_run(standin_two_gpus):
    standin_two_gpus.gpu_links = "none"
    staged = run(pair="0-1")
    assert staged.status == "ok" and staged.measurement.verified
    assert "staged through host memory" in staged.metadata["warning"] and staged.peak is None
    assert "staged through host memory" in staged.peak_reason
    kernel = run(pair="0-1", engine="sm")
    assert kernel.status == "skipped" and "cannot reach GPU 1's memory" in kernel.reason


def test_a_kernel_touching_a_peer_without_peer_access_is_refused_by_the_stand_in(standin_two_gpus):
    """The stand-in's check that makes engine=sm's peer-access step necessary, not decorative."""
    import cupy as cp

    from kvbench.backends.cuda import kernel_module

    with cp.cuda.Device(1):
        remote = cp.zeros(64, dtype=cp.uint8)
    with cp.cuda.Device(0):
        local = cp.zeros(64, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        kernel_module("hbm", 0).get_function("vector_copy")((4,), (32,), (cp.uint64(remote.data.ptr),
                                                                          cp.uint64(local.data.ptr), cp.uint64(4)),
                                                             stream=stream)
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="without peer access"):
            stream.synchronize()


def test_a_bad_pair_is_one_line_naming_it():
    from kvbench.errors import BadInput

    bench = get_bench("gpu.p2p")
    for bad in ("0-0", "1", "a-b"):
        with pytest.raises(BadInput, match=f"bad pair={bad}"):
            bench.validate(bench.canonical_params({"pair": bad}))
