"""The host's page sizes as the kernel offers them: transparent huge pages' mode and the hugetlb pools.

Recorded with every host and at the start of every run (the pools are set by root and change): a
host-memory figure depends on them (docs/measurement.md, "Page size").
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any


def _selected(path: Path) -> str | None:
    """The bracketed word of a sysfs choice file (`always [madvise] never` → `madvise`)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else text.strip() or None


def _int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def page_facts(root: str = "/") -> dict[str, Any]:
    """`base_page_bytes`; `thp`: `enabled`, `defrag` and `shmem_enabled` (always | madvise | never | ...;
    None without THP; shmem's governs MAP_SHARED anonymous memory) and the THP size in bytes; `hugetlb`: per pool of huge pages (key: page size in bytes, as text)
    its `pages`, `free` and `reserved` counts; `default_huge_page_bytes` (/proc/meminfo Hugepagesize)."""
    thp = Path(root, "sys/kernel/mm/transparent_hugepage")
    pools = {}
    for pool in sorted(Path(root, "sys/kernel/mm/hugepages").glob("hugepages-*kB")):
        size = int(pool.name.removeprefix("hugepages-").removesuffix("kB")) * 1024
        pools[str(size)] = {"pages": _int(pool / "nr_hugepages"), "free": _int(pool / "free_hugepages"),
                            "reserved": _int(pool / "resv_hugepages")}
    default = None
    try:
        for line in Path(root, "proc/meminfo").read_text().splitlines():
            if line.startswith("Hugepagesize:"):
                default = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return {
        "base_page_bytes": mmap.PAGESIZE,
        "thp": {"enabled": _selected(thp / "enabled"), "defrag": _selected(thp / "defrag"),
                "shmem_enabled": _selected(thp / "shmem_enabled"), "huge_page_bytes": _int(thp / "hpage_pmd_size")},
        "hugetlb": pools,
        "default_huge_page_bytes": default,
    }
