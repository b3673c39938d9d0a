"""A built-in benchmark's parameters are declared once, in kvbench/benches/declared.py, apart from the
code that measures: the registered benchmark takes them from there, and a command that describes
stored results reads them without importing the benchmark's module (numpy, the executors). The names
written out there are held equal to their homes here."""

import subprocess
import sys

import pytest

from kvbench.benches import all_benches
from kvbench.benches import declared as d
from kvbench.benches.describe import bench_params, canonical_subset, describe_params, params_of, with_added_defaults
from kvbench.benches.params import Param
from kvbench.benches import registry
from kvbench.errors import BadInput
from tests.conftest import REPO


def test_every_built_in_benchmark_is_registered_with_its_declared_parameters():
    built_in = {bench_id: b for bench_id, b in all_benches().items() if type(b).__module__.startswith("kvbench.")}
    assert set(built_in) == set(d.DECLARED)
    for bench_id, bench in built_in.items():
        assert bench.params == d.declared_params(bench_id), bench_id


def test_the_names_written_out_are_those_of_their_homes():
    from kvbench.backends import mooncake
    from kvbench.benches import dram, gpu, storage
    from kvbench.executors.registry import all_executors
    from kvbench.kv.layouts import LAYOUTS

    assert d.COPY_PRIMITIVES == tuple(dram.PRIMITIVES)
    assert set(d.KV_STRATEGIES) == set(all_executors())
    assert d.KV_LAYOUTS == LAYOUTS
    assert d.MATMUL_DTYPES == tuple(gpu.DTYPES)
    assert d.STORAGE_BACKENDS == tuple(storage.BACKENDS)
    assert d.POSIX_APIS == tuple(storage.POSIX_APIS)
    assert (d.MOONCAKE_P2P, d.MOONCAKE_PROTOCOLS) == (mooncake.P2P, mooncake.PROTOCOLS)


def test_describing_a_built_in_benchmarks_results_imports_no_measuring_module():
    probe = ("import sys\n"
             "from kvbench.benches.describe import describe_params, with_added_defaults\n"
             "print(describe_params('dram.copy', {'size': 4 << 20, 'threads': 1, 'src': 'pageable', 'dst': 'numa:0'}))\n"
             "print(sorted(with_added_defaults('kv.restore', {'tokens': 4096})))\n"
             "print(' '.join(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('kvbench.benches.'))))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120,
                         check=True).stdout.splitlines()
    assert out[0] == "size=4MiB dst=numa:0"
    assert "pages" in out[1] and "transport" in out[1] and "load" in out[1]  # the parameters added since
    assert out[2].split() == ["kvbench.benches.declared", "kvbench.benches.describe", "kvbench.benches.params",
                              "kvbench.benches.peer_params", "kvbench.benches.registry"]


def test_a_declared_benchmark_is_described_as_registered():
    params = all_benches()["pcie.h2d"].canonical_params({"size": "64MiB", "memory": "pageable"})
    assert describe_params("pcie.h2d", params) == "memory=pageable size=64MiB"
    assert canonical_subset("kv.restore", {"chunk": "4MiB", "src": "numa:1"}) == {"chunk": 4 << 20, "src": "numa:1"}
    with pytest.raises(BadInput, match="closest|did you mean"):
        canonical_subset("dram.copy", {"sizes": "4MiB"}, strict=True)


def test_a_benchmark_no_declaration_holds_is_described_from_the_registry():
    @registry.register
    class PluginCopy:  # a plugin's benchmark: registered, declared nowhere in kvbench
        id = "plugin.copy"
        params = {"size": Param("size", "1MiB", "bytes per copy"), "depth": Param("int", 4, "in flight", added=True)}

    try:
        assert params_of("plugin.copy") == PluginCopy.params
        assert describe_params("plugin.copy", {"size": 2 << 20, "depth": 4}) == "size=2MiB"
        assert with_added_defaults("plugin.copy", {"size": 1 << 20}) == {"size": 1 << 20, "depth": 4}
    finally:
        registry._BENCHES.pop("plugin.copy", None)
    assert params_of("plugin.copy") is None


def test_an_unknown_benchmark_is_refused_with_the_closest_known_id():
    assert bench_params("hbm.copy") is d.DECLARED["hbm.copy"]
    with pytest.raises(BadInput, match="did you mean 'hbm.copy'"):
        bench_params("hbm.cpy")


def test_a_plugin_that_replaces_a_built_in_benchmark_is_described_as_it_measures():
    built_in = all_benches()["hbm.read"]

    @registry.register
    class FasterHbmRead:  # a plugin's own hbm.read: what `run` measures now, so what its results are described by
        id = "hbm.read"
        params = {"size": Param("size", "1GiB", "bytes per buffer"), "flavour": Param("text", "a", "x", added=True)}

    try:
        assert params_of("hbm.read") == FasterHbmRead.params
        assert describe_params("hbm.read", {"size": 1 << 30, "flavour": "a"}) == "(defaults)"
        assert canonical_subset("hbm.read", {"flavour": "b"}, strict=True) == {"flavour": "b"}
    finally:
        registry._BENCHES["hbm.read"] = built_in
    assert params_of("hbm.read") == d.DECLARED["hbm.read"]
