"""The page sizes a host offers (THP mode, hugetlb pools) are facts of the host and of each run's
start, and no part of the host's identity (root changes the pools between runs)."""

from dataclasses import replace

from kvbench.hardware import fingerprint, identity
from kvbench.hardware.page_sizes import page_facts


def _tree(root, enabled="always [madvise] never", pool_2m=("16", "12", "2")):
    thp = root / "sys/kernel/mm/transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "enabled").write_text(enabled + "\n")
    (thp / "defrag").write_text("always defer defer+madvise [madvise] never\n")
    (thp / "shmem_enabled").write_text("always within_size advise [never] deny force\n")
    (thp / "hpage_pmd_size").write_text("2097152\n")
    for size, (total, free, reserved) in (("2048kB", pool_2m), ("1048576kB", ("0", "0", "0"))):
        pool = root / f"sys/kernel/mm/hugepages/hugepages-{size}"
        pool.mkdir(parents=True)
        (pool / "nr_hugepages").write_text(total + "\n")
        (pool / "free_hugepages").write_text(free + "\n")
        (pool / "resv_hugepages").write_text(reserved + "\n")
    (root / "proc").mkdir()
    (root / "proc/meminfo").write_text("MemTotal: 100 kB\nHugepagesize:       2048 kB\n")


def test_thp_mode_and_hugetlb_pools_are_read(tmp_path):
    _tree(tmp_path)
    facts = page_facts(str(tmp_path))
    assert facts["thp"] == {"enabled": "madvise", "defrag": "madvise", "shmem_enabled": "never",
                            "huge_page_bytes": 2 << 20}
    assert facts["hugetlb"][str(2 << 20)] == {"pages": 16, "free": 12, "reserved": 2}
    assert facts["hugetlb"][str(1 << 30)]["pages"] == 0
    assert facts["default_huge_page_bytes"] == 2 << 20


def test_a_kernel_without_thp_or_pools_says_so_with_nones(tmp_path):
    facts = page_facts(str(tmp_path))
    assert facts["thp"]["enabled"] is None and facts["hugetlb"] == {} and facts["default_huge_page_bytes"] is None


def test_the_pages_are_host_facts_and_run_state_but_not_identity():
    facts = fingerprint.collect_facts(gpus=False, dram=False)
    assert facts.pages["thp"] == page_facts()["thp"] and "pages" in fingerprint.system_state(facts)
    other_pools = replace(facts, pages={**facts.pages, "hugetlb": {str(2 << 20): {"pages": 512}}})
    assert identity.host_id(other_pools) == identity.host_id(facts)
