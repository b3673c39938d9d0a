"""`dram.copy` through the runner: measured, verified, and failed when the bytes do not move."""

import pytest

from kvbench.benches import get_bench
from kvbench.executors.host import HostExecutor
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case

FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)


def case(**params):
    bench = get_bench("dram.copy")
    return Case("dram.copy", bench.canonical_params({"size": "1MiB", **params}))


@pytest.mark.parametrize("params", [
    {"primitive": "memcpy"}, {"primitive": "numpy"}, {"fragment": "4KiB"}, {"fragment": "3000", "threads": 2},
    {"primitive": "auto"}, {"src": "numa:0", "dst": "numa:0"},
])
def test_copies_are_measured_and_verified(facts, params):
    result = run_case(case(**params), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    assert result.gbps["median"] > 0
    assert result.measurement.bytes_per_op == 1 << 20
    assert result.metadata["buffers"]["src"]["numa_node"] == 0
    if params.get("primitive", "auto") == "auto":
        assert result.metadata["primitive"] in result.metadata["primitive_trial_gbps"]


def test_a_copy_that_does_not_happen_is_a_failure_not_a_number(facts, monkeypatch):
    monkeypatch.setattr(HostExecutor, "bind", lambda self, *a, **k: (lambda: None))
    result = run_case(case(primitive="memcpy"), facts, FAST)
    assert result.status == "failed"
    assert "integrity check failed" in result.reason
    assert result.measurement is None and result.to_row()["verified"] is False


def test_gpu_memory_cases_are_skipped_with_the_reason(facts):
    result = run_case(case(src="pinned"), facts, FAST)
    assert result.status == "skipped" and "dram.copy copies pageable or NUMA-placed host memory" in result.reason


def test_more_threads_than_the_host_has_is_skipped(facts):
    result = run_case(case(threads=4096), facts, FAST)
    assert result.status == "skipped" and "at most" in result.reason


def test_peak_is_null_with_a_reason_when_dimms_are_unreadable(facts):
    result = run_case(case(primitive="memcpy"), facts, FAST)
    row = result.to_row()
    assert row["peak_gbps"] is None and row["efficiency"] is None
    assert row["peak_source"].startswith("DRAM peak unknown")


def test_vs_times_another_placement_interleaved_and_keeps_the_ratio_of_each_pair(facts):
    """Near vs far NUMA on a one-node host: two placements that exist here (pageable beside numa:0)."""
    result = run_case(case(primitive="memcpy", vs="numa:0"), facts, FAST)
    assert result.status == "ok", result.reason
    m = result.measurement
    paired = result.to_row()["extra"]["paired"]
    assert paired["against"] == {"src": "numa:0", "dst": "numa:0"}
    assert paired["pairs"] == len(m.samples_s) == len(m.paired.samples_s)
    # each stored ratio is one pair's: this side's sample i beside the other side's sample i
    assert paired["ratios"] == pytest.approx([b / a for a, b in zip(m.samples_s, m.paired.samples_s)])
    assert paired["p10"] <= paired["median"] <= paired["p90"]
    assert result.metadata["buffers"]["vs_src"]["kind"] == "numa:0"


def test_a_vs_node_this_host_lacks_skips_the_case_with_the_reason(facts):
    result = run_case(case(vs="numa:4095"), facts, FAST)
    assert result.status == "skipped"
    assert "vs=numa:4095: NUMA node 4095 does not exist" in result.reason


@pytest.mark.parametrize("vs,text", [("pinned", "give none, pageable or numa:N"),
                                     ("pageable", "the case's own placement")])
def test_a_vs_that_is_no_other_host_placement_is_refused(vs, text):
    from kvbench.errors import BadInput

    with pytest.raises(BadInput, match=text):
        get_bench("dram.copy").validate(get_bench("dram.copy").canonical_params({"size": "1MiB", "vs": vs}))


def test_a_vs_side_that_copies_nothing_fails_the_case(facts, monkeypatch):
    from kvbench.benches import dram

    real = dram._placed_twin

    def broken(*args, **kwargs):
        pair = real(*args, **kwargs)
        pair.workload.run = lambda: None
        return pair

    monkeypatch.setattr(dram, "_placed_twin", broken)
    result = run_case(case(primitive="memcpy", vs="numa:0"), facts, FAST)
    assert result.status == "failed" and "integrity check failed" in result.reason


def test_fragments_under_a_cache_line_are_refused_in_one_line_naming_the_count():
    # hostile trial H12: fragment=3 at 256 MiB made ~89 M fragments and grew until the OOM killer came
    from kvbench.errors import BadInput

    bench = get_bench("dram.copy")
    with pytest.raises(BadInput, match=r"bad fragment=3B: under 64 B .* 89,478,486 fragments; give 64B or more"):
        bench.validate(bench.canonical_params({"size": "256MiB", "fragment": "3"}))
    bench.validate(bench.canonical_params({"size": "1MiB", "fragment": "64"}))


def test_the_memory_check_counts_the_fragment_tables_beside_the_buffers(monkeypatch):
    import kvbench.memory.host as host
    from kvbench.errors import BadInput
    from kvbench.memory.headroom import HostMemory

    monkeypatch.setattr(host, "host_headroom", lambda: HostMemory(1 << 30, "test"))  # 1 GiB free
    bench = get_bench("dram.copy")
    bench.validate(bench.canonical_params({"size": "256MiB"}))  # 512 MiB of buffers fit
    # the same buffers in 64-byte fragments: 4 M fragments' tables (~2.7 GB) do not
    with pytest.raises(BadInput, match="source \\+ destination \\+ fragment tables"):
        bench.validate(bench.canonical_params({"size": "256MiB", "fragment": "64"}))
