"""`kvbench crosscheck dram`: mbw MEMCPY / MCBLOCK and numpy copyto next to `dram.copy` (numpy
timed interleaved with it in one case: a paired ratio), every side on host memory of one page size.

The page size moves a host copy by tens of percent (base pages against THP on one VM: 10 against 13
GB/s), so a peer on other pages is another case: numpy copies between buffers kvbench maps at the
case's page size (numpy's own allocator would madvise huge pages for large arrays whatever kvbench
used), and mbw's glibc is asked for the same page size (GLIBC_TUNABLES glibc.malloc.hugetlb) with
its buffers' backing read from its /proc/PID/smaps_rollup while it runs: a figure on other pages
than asked is shown, never compared.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from typing import Any

import numpy as np

from kvbench.crosscheck.common import Figure, run_kvbench, tool_failed, tool_timed_out
from kvbench.errors import IntegrityError
from kvbench.measure.engine import Pair, Settings, Workload
from kvbench.memory import pages as host_pages
from kvbench.memory.host import check_fits, pageable_buffer
from kvbench.memory.pattern import POISON, fill_pattern
from kvbench.metadata import HOST_PAGES, PAIRED

MBW_TIMEOUT_S = 600  # per mbw test: a bound on a hung tool, not a timing
_MBW_AVG = re.compile(r"^AVG\s+Method:\s+(\w+).*Copy:\s+([\d.]+)\s+MiB/s", re.M)
# glibc.malloc.hugetlb (glibc >= 2.35): 1 madvises THP on malloc's mappings, 2 maps them from the hugetlb
# pool of the default huge page size; 0 (glibc's default) leaves them to the kernel's THP mode.
_GLIBC_HUGETLB = {"base": "0", "thp": "1", "hugetlb-2M": "2"}
POLL_S = 0.02  # how often mbw's smaps_rollup is read while it runs


def mbw(size_bytes: int, repeats: int, pages: str = host_pages.DEFAULT_PAGES) -> list[Figure]:
    """mbw's MEMCPY (-t0) and MCBLOCK (-t2, 256 KiB blocks) averages, converted from MiB/s to GB/s, its
    glibc asked for `pages`; a MEMCPY whose buffers were found on other pages is shown, not compared."""
    exe = shutil.which("mbw")
    if exe is None:
        return [Figure(f"mbw {m}", None, "skipped — mbw is not installed (apt-get install mbw)") for m in ("MEMCPY", "MCBLOCK")]
    if pages not in _GLIBC_HUGETLB:
        return [Figure(f"mbw {m}", None, f"skipped — glibc cannot be asked for pages={pages} (only the default "
                       "huge page size, glibc.malloc.hugetlb=2)") for m in ("MEMCPY", "MCBLOCK")]
    mib = max(1, size_bytes >> 20)
    env = {**os.environ, "GLIBC_TUNABLES": f"glibc.malloc.hugetlb={_GLIBC_HUGETLB[pages]}"}
    figures = []
    for test, method in (("0", "MEMCPY"), ("2", "MCBLOCK")):
        try:
            proc, huge_bytes = _run_watching_pages([exe, "-q", "-n", str(repeats), f"-t{test}", str(mib)], env)
        except subprocess.TimeoutExpired as exc:
            figures.append(Figure(f"mbw {method}", None, tool_timed_out(exc), comparable=method == "MEMCPY"))
            continue
        match = _MBW_AVG.search(proc.stdout)
        # Debian's mbw 1.2.2 MCBLOCK loop advances only the destination: every 256 KiB block
        # is copied from the same, cache-resident, source block (seen in its disassembly), so
        # it measures DRAM writes, not a DRAM-to-DRAM copy. Shown, but not a copy peer.
        note = ("glibc memcpy of the whole array" if method == "MEMCPY" else
                "memcpy in 256 KiB blocks, but re-reading one cached source block: write bandwidth, not a copy")
        fraction = None if huge_bytes is None else min(1.0, huge_bytes / (2 * mib * 2**20))
        on_asked = fraction is not None and ((fraction < 0.1) if pages == "base" else fraction >= host_pages.SHORT_OF_ASKED)
        where = ("huge-page backing not read" if fraction is None else f"{fraction:.0%} of its two buffers on huge pages")
        note = f"{note}; pages={pages} asked of glibc, {where}" + ("" if on_asked else ": not the page size asked, "
                                                                   "not compared")
        figures.append(Figure(f"mbw {method}", float(match.group(2)) * 2**20 / 1e9 if match else None,
                              note if match else tool_failed(proc), comparable=method == "MEMCPY" and on_asked))
    return figures


def _run_watching_pages(argv: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, int | None]:
    """Run `argv`; (its completed process, the most bytes on huge pages its /proc/PID/smaps_rollup
    showed while it ran, None if never read). Raises TimeoutExpired past MBW_TIMEOUT_S (it is killed)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    most: int | None = None
    deadline = time.monotonic() + MBW_TIMEOUT_S
    try:
        while proc.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(argv, MBW_TIMEOUT_S)
            huge = _rollup_huge_bytes(proc.pid)
            if huge is not None:
                most = max(most or 0, huge)
            time.sleep(POLL_S)
        out, err = proc.communicate()
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), most


def _rollup_huge_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            lines = rollup.read().splitlines()
    except OSError:
        return None
    keys = ("AnonHugePages:", "Private_Hugetlb:", "Shared_Hugetlb:")
    return sum(int(line.split()[1]) * 1024 for line in lines if line.startswith(keys))


def numpy_copyto(size_bytes: int) -> Pair:
    """np.copyto between two buffers of `size_bytes`, as a side to time interleaved with dram.copy. Its
    buffers are kvbench's host buffers, of the page size the case asked for (built inside the case):
    equal pages on both sides, and each side's backing recorded."""
    check_fits(2 * size_bytes, "numpy copyto's source + destination")
    src_region, dst_region = pageable_buffer(size_bytes), pageable_buffer(size_bytes)
    src, dst = src_region.host_array, dst_region.host_array
    fill_pattern(src)

    def check() -> None:
        if not np.array_equal(dst, src):
            raise IntegrityError("numpy copyto: destination differs from its source")

    # the regions go with the pair's closures (unmapped when the case's workload is dropped)
    return Pair({"tool": "numpy copyto"}, Workload(size_bytes, lambda: np.copyto(dst, src),
                                                   lambda: dst.fill(POISON), check))


def _trials(trials: dict[str, float] | None) -> str:
    """The primitives' trial rates in words, `memcpy 12.1, numpy 10.3 GB/s` (never a Python dict)."""
    if not trials:
        return "no trial recorded"
    return "trials: " + ", ".join(f"{name} {gbps:.1f}" for name, gbps in trials.items()) + " GB/s"


def crosscheck_dram(size_bytes: int, repeats: int = 10,
                    pages: str = host_pages.DEFAULT_PAGES) -> tuple[Figure, list[Figure]]:
    """(kvbench's figure, the peers' figures), all single-threaded, in decimal GB/s, every side's
    buffers of page size `pages`. numpy copyto is timed interleaved with dram.copy in one case, so
    their ratio is taken per pair of samples; mbw, another process, runs after it (its ratio is the
    rates divided)."""
    result = run_kvbench("dram.copy", {"size": size_bytes, "threads": 1, "src": "pageable", "dst": "pageable",
                                       "fragment": 0, "primitive": "auto", "pages": pages}, Settings(samples=9),
                         pair=lambda: numpy_copyto(size_bytes))
    if result.status != "ok":
        ours = Figure("kvbench dram.copy", None, f"{result.status}: {result.reason}")
        numpy_figure = Figure("numpy copyto", None, "timed with dram.copy, which did not run")
    else:
        ours_on, numpy_on = _backing(result.metadata.get(HOST_PAGES, {}))
        ours = Figure("kvbench dram.copy", result.gbps["median"],
                      f"pages={pages}, {ours_on}; primitive {result.metadata['primitive']} "
                      f"({_trials(result.metadata['primitive_trial_gbps'])})")
        paired = result.to_row()["extra"][PAIRED]
        numpy_figure = Figure("numpy copyto", paired["against_gbps"]["median"],
                              f"pages={pages}, {numpy_on}; np.copyto interleaved with dram.copy, "
                              f"{paired['pairs']} pairs of samples", paired=paired)
    return ours, [*mbw(size_bytes, repeats, pages), numpy_figure]


def _backing(record: dict[str, Any]) -> tuple[str, str]:
    """How much of kvbench's buffers (the first two the case allocated: source, guarded destination)
    and of numpy's (the two after) huge pages backed, in words."""
    def words(buffers: list[dict[str, Any]]) -> str:
        fractions = [b.get("huge_fraction") for b in buffers]
        if not fractions or None in fractions:
            return "huge-page backing unknown"
        return "huge pages back " + " and ".join(f"{f:.0%}" for f in fractions) + " of its buffers"

    buffers = record.get("buffers", [])
    return words(buffers[:2]), words(buffers[2:4])
