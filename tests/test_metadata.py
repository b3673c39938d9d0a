"""Every key a benchmark writes into a result's metadata is registered (kvbench/metadata.py) with
its unit: the benchmarks that write a key and the analyses that read it agree on it."""

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.metadata import KEYS, unknown
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case

CASES = [
    ("dram.copy", {"size": "1MiB"}),
    ("kv.restore", {"model": "Llama-3.1-8B", "tokens": 64}),
    ("kv.offload", {"model": "Llama-3.1-8B", "tokens": 64, "strategy": "contiguous"}),
]
NIXL = [
    ("kv.restore", {"model": "Llama-3.1-8B", "tokens": 64, "strategy": "nixl", "src": "file"}),
    ("storage.read", {"file_size": "1MiB", "io_size": "64KiB", "batch": 4}),
    ("net.write", {"block_size": "64KiB", "batch": 4}),
]


@pytest.mark.parametrize("bench,params", [*CASES, *NIXL])
def test_every_key_a_benchmark_writes_is_registered(facts, bench, params):
    if (bench, params) in NIXL and backend_unavailable_reason("POSIX"):
        pytest.skip(backend_unavailable_reason("POSIX"))
    result = run_case(Case(bench, get_bench(bench).canonical_params(params)), facts,
                      Settings(samples=5, min_sample_s=0.001, warmup_s=0))
    assert result.status == "ok", result.reason
    assert unknown(result.to_row()["extra"]) == []


def test_every_registered_key_says_what_it_means():
    assert all(k.meaning for k in KEYS.values())
    assert unknown(["link", "per_gpu_gbps", "directoins_gbps"]) == ["directoins_gbps"]


@pytest.fixture(scope="module")
def facts():
    from kvbench.hardware.fingerprint import collect_facts

    return collect_facts(gpus=False, dram=False)
