import shutil

import pytest

from kvbench.crosscheck.dram import _MBW_AVG, crosscheck_dram, mbw

RECORDED = """0\tMethod: MEMCPY\tElapsed: 0.01355\tMiB: 256.00000\tCopy: 18894.383 MiB/s
AVG\tMethod: MEMCPY\tElapsed: 0.01349\tMiB: 256.00000\tCopy: 18977.020 MiB/s
"""


def test_mbw_average_is_parsed_and_converted_from_mib():
    method, mib_s = _MBW_AVG.search(RECORDED).groups()
    assert method == "MEMCPY" and float(mib_s) * 2**20 / 1e9 == pytest.approx(19.899, abs=0.001)


@pytest.mark.skipif(shutil.which("mbw") is None, reason="mbw is not installed (Debian package mbw)")
def test_mbw_runs_and_mcblock_is_not_a_copy_peer():
    memcpy, mcblock = mbw(16 << 20, 2)
    assert memcpy.gbps > 0 and (memcpy.comparable or "not the page size asked" in memcpy.note)  # THP always
    assert mcblock.gbps > 0 and not mcblock.comparable


def test_crosscheck_measures_kvbench_next_to_numpy():
    ours, peers = crosscheck_dram(8 << 20, repeats=2)
    assert ours.gbps > 0 and "primitive" in ours.note
    assert any(p.name == "numpy copyto" and p.gbps > 0 for p in peers)


def test_numpy_is_timed_interleaved_with_dram_copy_and_its_ratio_taken_per_pair():
    ours, peers = crosscheck_dram(8 << 20, repeats=2)
    (numpy_figure,) = [p for p in peers if p.name == "numpy copyto"]
    paired = numpy_figure.paired
    assert paired["against"] == {"tool": "numpy copyto"} and paired["pairs"] >= 9
    assert numpy_figure.ratio_to(ours) == paired["median"]  # not the two rates divided


def test_a_numpy_peer_that_copies_nothing_fails_the_crosscheck(monkeypatch):
    import kvbench.crosscheck.dram as dram

    real = dram.numpy_copyto

    def broken(size_bytes):
        pair = real(size_bytes)
        pair.workload.run = lambda: None
        return pair

    monkeypatch.setattr(dram, "numpy_copyto", broken)
    ours, peers = crosscheck_dram(8 << 20, repeats=2)
    assert ours.gbps is None and "numpy copyto" in ours.note


@pytest.mark.parametrize("pages", ["base", "thp"])
def test_every_side_copies_on_the_page_size_asked_and_says_so(pages):
    from kvbench.memory.pages import pages_unavailable_reason

    if pages_unavailable_reason(pages):
        pytest.skip(pages_unavailable_reason(pages))
    ours, peers = crosscheck_dram(8 << 20, repeats=2, pages=pages)
    (numpy_figure,) = [p for p in peers if p.name == "numpy copyto"]
    for figure in (ours, numpy_figure):
        assert figure.gbps > 0 and f"pages={pages}" in figure.note and "huge pages back" in figure.note
    if pages == "base":
        assert "back 0% and 0%" in ours.note and "back 0% and 0%" in numpy_figure.note
    for figure in peers:
        if figure.name.startswith("mbw") and figure.gbps:
            assert f"pages={pages} asked of glibc" in figure.note


def test_a_mbw_run_on_other_pages_than_asked_is_shown_not_compared(monkeypatch):
    import kvbench.crosscheck.dram as dram

    if shutil.which("mbw") is None:
        pytest.skip("mbw is not installed (Debian package mbw)")
    monkeypatch.setattr(dram, "_rollup_huge_bytes", lambda pid: 64 << 20)  # as if glibc had given it THP
    memcpy, _mcblock = mbw(16 << 20, 2, "base")
    assert memcpy.gbps > 0 and not memcpy.comparable and "not the page size asked" in memcpy.note
    assert all("skipped" in f.note for f in mbw(16 << 20, 2, "hugetlb-1G"))
