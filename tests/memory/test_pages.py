"""Host buffers of a chosen page size, and the fraction huge pages back, read back from the kernel.

The fraction kvbench records (from /proc/self/smaps) is checked against a second, independent
reading: each 4 KiB page's frame in /proc/self/pagemap and its flags in /proc/kpageflags (THP or
hugetlb). That needs root; without it the check is skipped with the reason.
"""

import os
import struct
from pathlib import Path

import numpy as np
import pytest

from kvbench.memory import pages
from kvbench.memory.host import numa_buffer, pageable_buffer
from kvbench.memory.pages import CaseBuffers, HostMapping, PoolRefused, pages_unavailable_reason

MIB = 1 << 20
KPF_HUGE, KPF_THP = 17, 22  # include/uapi/linux/kernel-page-flags.h
POOL_2M = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")


def kernel_huge_fraction(address: int, size: int) -> float:
    """The fraction of [address, address + size)'s 4 KiB pages whose frame the kernel flags as part
    of a transparent huge page or a hugetlb page (pagemap + kpageflags; root only)."""
    page = os.sysconf("SC_PAGE_SIZE")
    first, count = address // page, size // page
    with open("/proc/self/pagemap", "rb") as pagemap:
        pagemap.seek(first * 8)
        entries = struct.unpack(f"{count}Q", pagemap.read(count * 8))
    huge = 0
    with open("/proc/kpageflags", "rb") as kpageflags:
        for entry in entries:
            frame = entry & ((1 << 55) - 1)
            if not entry >> 63 or frame == 0:
                continue
            kpageflags.seek(frame * 8)
            (flags,) = struct.unpack("Q", kpageflags.read(8))
            huge += bool(flags & (1 << KPF_THP | 1 << KPF_HUGE))
    return huge / count


def independent_check_or_skip():
    if os.geteuid() != 0 or not os.access("/proc/kpageflags", os.R_OK):
        pytest.skip("reading page frames (/proc/self/pagemap, /proc/kpageflags) needs root")


def allocate(size, asked):
    with CaseBuffers(asked) as listed:
        region = pageable_buffer(size)
    return region, listed


def test_a_base_page_buffer_records_no_huge_pages_and_the_kernel_agrees():
    region, listed = allocate(16 * MIB, "base")
    with region:
        facts = region.describe()
        assert facts["pages"] == "base" and facts["huge_fraction"] == 0.0 and "pages_warning" not in facts
        assert listed.record()["buffers"] == [facts] and listed.record()["warning"] is None
        independent_check_or_skip()
        assert kernel_huge_fraction(region.address, region.size_bytes) == 0.0


def test_a_thp_buffer_records_the_fraction_the_kernel_backed():
    reason = pages_unavailable_reason("thp")
    if reason:
        pytest.skip(reason)
    region, listed = allocate(16 * MIB, "thp")
    with region:
        facts = region.describe()
        assert facts["pages"] == "thp" and facts["huge_page_bytes"] == 2 * MIB
        # what the kernel gives is its choice (fragmented memory): the record must say what it gave
        assert (facts["huge_fraction"] < pages.SHORT_OF_ASKED) == ("pages_warning" in facts)
        independent_check_or_skip()
        assert facts["huge_fraction"] == pytest.approx(kernel_huge_fraction(region.address, region.size_bytes),
                                                       abs=2 * MIB / region.size_bytes)


@pytest.fixture
def pool_of_2m_pages():
    """Eight 2 MiB hugetlb pages for the test, the pool put back as it was afterwards."""
    try:
        before = int(POOL_2M.read_text())
        POOL_2M.write_text(str(before + 8))
    except OSError as exc:
        pytest.skip(f"the 2 MiB hugetlb pool cannot be set here ({POOL_2M}: {exc.strerror or exc})")
    try:
        if pages.hugetlb_pool(2 * MIB)[1] < 8:
            pytest.skip("the kernel could not grow the 2 MiB hugetlb pool by 8 pages (memory fragmented)")
        yield
    finally:
        POOL_2M.write_text(str(before))


def test_a_hugetlb_buffer_comes_from_the_pool_and_records_it(pool_of_2m_pages):
    region, listed = allocate(5 * MIB, "hugetlb-2M")  # three 2 MiB pages
    with region:
        facts = region.describe()
        assert facts["pages"] == "hugetlb-2M" and facts["huge_fraction"] == 1.0
        region.host_array[:] = 7
        assert int(region.host_array.sum()) == 7 * 5 * MIB
        independent_check_or_skip()
        assert kernel_huge_fraction(region.address, region.size_bytes) == 1.0


def test_a_hugetlb_pool_too_small_is_a_reason_never_other_pages(pool_of_2m_pages):
    assert pages_unavailable_reason("hugetlb-2M", 4 * MIB) is None
    assert "free" in pages_unavailable_reason("hugetlb-2M", 1 << 30)
    with pytest.raises(PoolRefused, match="hugetlb pool (refused|of 2 MiB pages has)"), CaseBuffers("hugetlb-2M"):
        pageable_buffer(64 * MIB)


def test_missing_pools_and_thp_turned_off_are_reasons(tmp_path):
    thp = tmp_path / "sys/kernel/mm/transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "enabled").write_text("always madvise [never]\n")
    assert "enabled = never" in pages_unavailable_reason("thp", sys_root=str(tmp_path))
    assert "no hugetlb pool of 1024 MiB" in pages_unavailable_reason("hugetlb-1G", MIB, sys_root=str(tmp_path))
    assert pages_unavailable_reason("base", sys_root=str(tmp_path)) is None


def test_a_buffer_backed_short_of_what_was_asked_carries_a_warning(monkeypatch):
    monkeypatch.setattr(pages, "smaps_huge_bytes", lambda address, length: (length // 2, True))
    region, listed = allocate(8 * MIB, "thp")
    with region:
        assert region.describe()["huge_fraction"] == 0.5
        assert "only 50% on huge pages" in region.describe()["pages_warning"]
        assert "only 50% on huge pages" in listed.record()["warning"]


def test_the_page_size_holds_for_numa_buffers_and_outside_a_case_it_is_the_default():
    assert pages.asked() == pages.DEFAULT_PAGES == "base"
    with CaseBuffers("thp") as listed:
        assert pages.asked() == "thp"
        region = numa_buffer(4 * MIB, 0)
    with region:
        assert region.describe()["pages"] == "thp" and listed.buffers[0]["kind"] == "numa:0"
    assert pages.asked() == "base"


def test_a_buffer_is_its_own_mapping_in_smaps_so_its_neighbours_never_count():
    """Two THP buffers side by side, one never touched: the touched one's huge pages are not the
    other's (without the PROT_NONE fences the kernel would merge them into one mapping)."""
    if pages_unavailable_reason("thp"):
        pytest.skip(pages_unavailable_reason("thp"))
    touched, idle = HostMapping(8 * MIB, "thp"), HostMapping(8 * MIB, "thp")
    try:
        touched.array.fill(1)
        assert idle.backing()["huge_fraction"] == 0.0
        np.testing.assert_array_equal(touched.array[:4], 1)
    finally:
        touched.close()
        idle.close()


def test_a_bad_page_size_is_refused_by_name():
    with pytest.raises(ValueError, match="bad pages='huge'"):
        CaseBuffers("huge")
