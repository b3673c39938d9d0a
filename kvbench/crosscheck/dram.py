"""`kvbench crosscheck dram`: mbw MEMCPY / MCBLOCK and numpy copyto next to `dram.copy` (numpy
timed interleaved with it in one case: a paired ratio)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np

from kvbench.crosscheck.common import Figure, run_kvbench, tool_failed, tool_timed_out
from kvbench.errors import IntegrityError
from kvbench.measure.engine import Pair, Settings, Workload
from kvbench.memory.host import check_fits
from kvbench.memory.pattern import POISON, pattern_bytes
from kvbench.metadata import PAIRED

MBW_TIMEOUT_S = 600  # per mbw test: a bound on a hung tool, not a timing
_MBW_AVG = re.compile(r"^AVG\s+Method:\s+(\w+).*Copy:\s+([\d.]+)\s+MiB/s", re.M)


def mbw(size_bytes: int, repeats: int) -> list[Figure]:
    """mbw's MEMCPY (-t0) and MCBLOCK (-t2, 256 KiB blocks) averages, converted from MiB/s to GB/s."""
    exe = shutil.which("mbw")
    if exe is None:
        return [Figure(f"mbw {m}", None, "skipped — mbw is not installed (apt-get install mbw)") for m in ("MEMCPY", "MCBLOCK")]
    mib = max(1, size_bytes >> 20)
    figures = []
    for test, method in (("0", "MEMCPY"), ("2", "MCBLOCK")):
        try:
            proc = subprocess.run([exe, "-q", "-n", str(repeats), f"-t{test}", str(mib)], capture_output=True,
                                  text=True, timeout=MBW_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            figures.append(Figure(f"mbw {method}", None, tool_timed_out(exc), comparable=method == "MEMCPY"))
            continue
        match = _MBW_AVG.search(proc.stdout)
        # Debian's mbw 1.2.2 MCBLOCK loop advances only the destination: every 256 KiB block
        # is copied from the same, cache-resident, source block (seen in its disassembly), so
        # it measures DRAM writes, not a DRAM-to-DRAM copy. Shown, but not a copy peer.
        note = ("glibc memcpy of the whole array" if method == "MEMCPY" else
                "memcpy in 256 KiB blocks, but re-reading one cached source block: write bandwidth, not a copy")
        figures.append(Figure(f"mbw {method}", float(match.group(2)) * 2**20 / 1e9 if match else None,
                              note if match else tool_failed(proc), comparable=method == "MEMCPY"))
    return figures


def numpy_copyto(size_bytes: int) -> Pair:
    """np.copyto between two buffers of `size_bytes`, as a side to time interleaved with dram.copy."""
    check_fits(2 * size_bytes, "numpy copyto's source + destination")
    src = pattern_bytes(size_bytes, seed=7)
    dst = np.empty(size_bytes, dtype=np.uint8)

    def check() -> None:
        if not np.array_equal(dst, src):
            raise IntegrityError("numpy copyto: destination differs from its source")

    return Pair({"tool": "numpy copyto"}, Workload(size_bytes, lambda: np.copyto(dst, src),
                                                   lambda: dst.fill(POISON), check))


def crosscheck_dram(size_bytes: int, repeats: int = 10) -> tuple[Figure, list[Figure]]:
    """(kvbench's figure, the peers' figures), all single-threaded, in decimal GB/s. numpy copyto is
    timed interleaved with dram.copy in one case, so their ratio is taken per pair of samples; mbw,
    another process, runs after it (its ratio is the rates divided)."""
    result = run_kvbench("dram.copy", {"size": size_bytes, "threads": 1, "src": "pageable", "dst": "pageable",
                                       "fragment": 0, "primitive": "auto"}, Settings(samples=9),
                         pair=lambda: numpy_copyto(size_bytes))
    if result.status != "ok":
        ours = Figure("kvbench dram.copy", None, f"{result.status}: {result.reason}")
        numpy_figure = Figure("numpy copyto", None, "timed with dram.copy, which did not run")
    else:
        ours = Figure("kvbench dram.copy", result.gbps["median"],
                      f"primitive {result.metadata['primitive']} (trial GB/s {result.metadata['primitive_trial_gbps']})")
        paired = result.to_row()["extra"][PAIRED]
        numpy_figure = Figure("numpy copyto", paired["against_gbps"]["median"],
                              f"np.copyto interleaved with dram.copy, {paired['pairs']} pairs of samples",
                              paired=paired)
    return ours, [*mbw(size_bytes, repeats), numpy_figure]
