"""Adding a benchmark is one module: a toy `toy.copy` registered from this test module, with its
path segment's peak function, runs through the same measurement, peak and store as the built-ins
(the real GPU-to-GPU benchmark this toy once stood for is `gpu.p2p`, kvbench/benches/p2p.py)."""

import numpy as np
import pytest

from kvbench.benches import all_benches, get_bench
from kvbench.benches.base import Benchmark, Prepared
from kvbench.benches.params import Param
from kvbench.benches.registry import register
from kvbench.errors import IntegrityError
from kvbench.hardware.path import register_segment
from kvbench.hardware.peaks import Peak
from kvbench.measure import Settings, Workload
from kvbench.memory.pattern import pattern_bytes, poison
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case

TOY_PEAKS = {"toy_link": {"gbps": 450.0, "source": "test data standing in for peaks.toml rows"}}


@register_segment("toy_link")
def toy_link_peak(segment, facts, links):
    row = TOY_PEAKS["toy_link"]
    return Peak(row["gbps"], row["source"]), None


@register
class ToyCopy(Benchmark):
    id = "toy.copy"
    description = "a toy copy between two host arrays over a made-up link"
    params = {"size": Param("size", "1MiB", "bytes per copy", minimum=8),
              "pair": Param("text", "0-1", "ends of the toy link")}

    def path(self, params):
        a, b = params["pair"].split("-")
        return [("toy_link", int(a), int(b))]

    def prepare(self, params):
        src, dst = pattern_bytes(params["size"], seed=7), np.empty(params["size"], dtype=np.uint8)

        def check():
            if not np.array_equal(dst, src):
                raise IntegrityError("toy copy differs")

        workload = Workload(params["size"], lambda: np.copyto(dst, src), lambda: poison(dst), check)
        return Prepared(workload, {"pair": params["pair"]})


def test_a_benchmark_registered_outside_the_package_is_listed_run_and_judged_against_its_peak(facts):
    assert "toy.copy" in all_benches()
    bench = get_bench("toy.copy")
    result = run_case(Case("toy.copy", bench.canonical_params({})), facts,
                      Settings(samples=5, min_sample_s=0.001, warmup_s=0))
    assert result.status == "ok" and result.measurement.verified
    assert result.peak.gbps == 450.0 and result.metadata["bottleneck"] == "toy_link:0:1"


def test_every_builtin_benchmark_is_discovered_without_a_list():
    assert {"dram.copy", "hbm.read", "hbm.write", "hbm.copy", "pcie.h2d", "pcie.d2h", "pcie.bidir", "kv.restore",
            "kv.offload", "storage.read", "storage.write", "net.read", "net.write", "gpu.p2p"} <= set(all_benches())


def test_a_path_that_cannot_be_named_costs_the_peak_not_the_result(facts, monkeypatch):
    def broken_path(self, params):
        raise KeyError("pair")

    monkeypatch.setattr(ToyCopy, "path", broken_path)
    result = run_case(Case("toy.copy", get_bench("toy.copy").canonical_params({})), facts,
                      Settings(samples=5, min_sample_s=0.001, warmup_s=0))
    assert result.status == "ok" and result.peak is None and "no peak: KeyError" in result.peak_reason


@pytest.fixture(autouse=True, scope="module")
def _unregister():
    yield
    from kvbench.benches import registry
    from kvbench.hardware.path import SEGMENTS

    registry._BENCHES.pop("toy.copy", None)
    SEGMENTS.pop("toy_link", None)
