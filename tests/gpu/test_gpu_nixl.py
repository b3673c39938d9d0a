"""NIXL with GPU memory: GDS (compatibility mode accepted, and labelled) and VRAM over UCX."""

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts

FAST = Settings(samples=5, min_sample_s=0.005, warmup_s=0)


@pytest.fixture(scope="module")
def facts():
    return host_facts()


@pytest.mark.parametrize("backend", ["gds", "gds_mt"])
def test_gds_reads_into_gpu_memory(facts, backend):
    if backend_unavailable_reason(backend.upper()):
        pytest.skip(backend_unavailable_reason(backend.upper()))
    params = get_bench("storage.read").canonical_params({"backend": backend, "target": "device", "file_size": "64MiB"})
    result = run_case(Case("storage.read", params), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified and result.metadata["nixl_backend"] in ("GDS", "GDS_MT")
    assert "gds_compat_mode" in result.metadata


@pytest.mark.parametrize("local,remote", [("device", "pageable"), ("pinned", "device")])
def test_vram_over_ucx(facts, local, remote):
    if backend_unavailable_reason("UCX"):  # like GDS: a host where UCX cannot start has nothing to test here
        pytest.skip(backend_unavailable_reason("UCX"))
    params = get_bench("net.write").canonical_params({"local": local, "remote": remote, "block_size": "1MiB",
                                                      "batch": 16})
    result = run_case(Case("net.write", params), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified and result.metadata["gpu_memory"]
