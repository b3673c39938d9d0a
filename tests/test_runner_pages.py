"""The page size of a case's host buffers: a case parameter (`pages`) every benchmark with host memory
takes, recorded per buffer with every result, and a different case from the default's."""

import numpy as np
import pytest

from kvbench.analyze.regress.compare import compare_runs
from kvbench.benches.registry import all_benches, get_bench
from kvbench.crosscheck.common import run_kvbench
from kvbench.measure.engine import Settings
from kvbench.memory import pages
from kvbench.metadata import HOST_PAGES
from kvbench.plan.cases import Case

MIB = 1 << 20
DRAM = {"size": 4 * MIB, "threads": 1, "fragment": 0, "primitive": "numpy"}


def dram_case(**given):
    spec = get_bench("dram.copy")
    return Case("dram.copy", spec.canonical_params({**DRAM, **given}))


def test_every_benchmark_with_host_memory_takes_pages_and_the_default_keeps_older_cases_ids():
    for bench_id, spec in all_benches().items():
        takes_memory = any(p.kind == "memory" for p in spec.params.values())
        assert ("pages" in spec.params) == takes_memory, bench_id
    default, stated = dram_case(), dram_case(pages="base")
    older = dram_case()
    older.params.pop("pages")  # a case stored before `pages` existed
    assert default.case_hash == stated.case_hash == older.case_hash
    assert dram_case(pages="thp").case_hash != default.case_hash
    with pytest.raises(Exception, match="bad pages='huge'"):
        dram_case(pages="huge")
    from kvbench.benches.params import PAGES, PAGES_PARAM

    assert PAGES == pages.PAGES and PAGES_PARAM.default == pages.DEFAULT_PAGES


@pytest.mark.parametrize("asked", ["base", "thp"])
def test_a_result_records_every_host_buffer_at_the_page_size_its_case_asked_for(asked):
    if pages.pages_unavailable_reason(asked):
        pytest.skip(pages.pages_unavailable_reason(asked))
    result = run_kvbench("dram.copy", {**DRAM, "pages": asked}, Settings(samples=5, min_sample_s=0.001))
    assert result.status == "ok", result.reason
    record = result.metadata[HOST_PAGES]
    assert record["pages"] == asked and len(record["buffers"]) == 2  # the source and the guarded destination
    assert {b["pages"] for b in record["buffers"]} == {asked}
    assert all(b["huge_fraction"] is not None for b in record["buffers"])
    assert {b["pages"] for b in result.metadata["buffers"].values()} == {asked}
    if asked == "base":
        assert all(b["huge_fraction"] == 0 for b in record["buffers"])


def test_a_buffer_backed_short_warns_on_the_result(monkeypatch):
    monkeypatch.setattr(pages, "smaps_huge_bytes", lambda address, length: (0, True))
    result = run_kvbench("dram.copy", {**DRAM, "pages": "thp"}, Settings(samples=5, min_sample_s=0.001))
    assert result.status == "ok" and "pages=thp buffer" in result.metadata["warning"]
    assert "pages=thp buffer" in " ".join(result.warnings)


def test_a_page_size_the_host_cannot_give_skips_the_case_with_the_reason():
    pool = pages.hugetlb_pool(1 << 30)
    if pool and pool[1]:
        pytest.skip("this host has free 1 GiB hugetlb pages")
    result = run_kvbench("dram.copy", {**DRAM, "pages": "hugetlb-1G"}, Settings(samples=5))
    assert result.status == "skipped" and "hugetlb" in result.reason and "1024 MiB" in result.reason


def _doc(run_id, case, gbps):
    rates = np.full(5, gbps)
    return {"run": {"id": run_id, "host_id": "h" * 8, "context_id": "c" * 8},
            "results": [{"bench": case.bench, "params": case.params, "case": case.case_hash, "status": "ok",
                         "samples_s": (case.params["size"] / rates / 1e9).tolist(),
                         "gbps": {"median": gbps, "p10": gbps, "p90": gbps}}]}


def test_a_run_at_another_page_size_is_never_compared_with_the_default_one():
    base, thp = dram_case(), dram_case(pages="thp")
    verdicts = {c.verdict: c for c in compare_runs(_doc(1, base, 10.0), _doc(2, thp, 13.0))}
    assert set(verdicts) == {"new", "missing"}  # two cases: no faster/slower between them
    assert verdicts["new"].params["pages"] == "thp" and verdicts["missing"].params["pages"] == "base"


def test_a_hugetlb_pool_too_small_counts_every_buffer_the_case_maps(monkeypatch):
    """Issue 57 item 9: a 64 MiB copy maps a source and a destination (and its guard bytes), 64 or more 2 MiB
    pages, never "32 needed" (one buffer's pages)."""
    monkeypatch.setattr(pages, "hugetlb_pool", lambda huge, sys_root="/": (40, 40))
    result = run_kvbench("dram.copy", {**DRAM, "size": 64 * MIB, "pages": "hugetlb-2M"}, Settings(samples=5))
    assert result.status == "skipped", result.reason
    assert "at least 64 needed for the case's 128 MiB of host buffers" in result.reason and "32 needed" not in result.reason
    assert "Errno" not in result.reason, \
        result.reason


def test_a_pool_refusing_a_later_buffer_counts_the_ones_before_it(monkeypatch):
    """The pool looked big enough (free pages counted) but refused the mapping: the reason counts the pages
    of every buffer mapped before the refused one."""
    monkeypatch.setattr(pages, "hugetlb_pool", lambda huge, sys_root="/": (100, 100))
    with pages.CaseBuffers("hugetlb-2M") as buffers:
        buffers.hugetlb_pages[0] = 32  # a source of 64 MiB mapped already
        monkeypatch.setattr(pages.mmap, "mmap", lambda *a, **k: (_ for _ in ()).throw(OSError(12, "no memory")))
        with pytest.raises(pages.PoolRefused, match=r"needs at least 65 \(32 mapped by its buffers before this one\)"):
            pages.HostMapping(64 * MIB + 64, "hugetlb-2M")
