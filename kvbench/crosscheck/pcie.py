"""`kvbench crosscheck pcie`: nvbandwidth's host_to_device / device_to_host copy-engine tests next
to `pcie.h2d` / `pcie.d2h` pinned, when an `nvbandwidth` binary is on PATH: GPU 0, 256 MiB, both
timed with CUDA events behind a spin kernel. `--nvbandwidth-output FILE` reads a run nvbandwidth
already made (scripts/gpu-check runs it once, as a step) instead of running it again."""

from __future__ import annotations

import re
import shutil
import subprocess

from kvbench.crosscheck.common import Figure, run_kvbench, tool_failed, tool_timed_out
from kvbench.measure.engine import Settings
from kvbench.metadata import DIRECTIONS_GBPS

TESTS = {"pcie.h2d": "host_to_device_memcpy_ce", "pcie.d2h": "device_to_host_memcpy_ce"}
# nvbandwidth's bidirectional tests report one direction while the other runs: pcie.bidir's
# per-direction figures, under contention for the whole window, are the comparable ones.
BIDIR_TESTS = {"h2d": "host_to_device_bidirectional_memcpy_ce", "d2h": "device_to_host_bidirectional_memcpy_ce"}
SIZE_MIB = 256
NVBANDWIDTH_TIMEOUT_S = 300  # one test on one GPU takes seconds: a bound on a hung tool, not a timing


def gpu0_gbps(stdout: str) -> float | None:
    """GPU 0's figure in nvbandwidth's matrix: column 0 of the first row under the heading
    "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)". Its SUM line adds every GPU, one at a
    time, so it is not comparable with one GPU."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines[:-2]):
        if "bandwidth (GB/s)" in line:
            header, row = lines[i + 1].split(), lines[i + 2].split()
            if header[:1] == ["0"] and row[:1] == ["0"] and len(row) > 1:
                return float(row[1]) if re.fullmatch(r"[\d.]+", row[1]) else None
    return None


def sections(text: str) -> dict[str, str]:
    """nvbandwidth's output of several tests, split per test: each begins at its "Running NAME." line."""
    out: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        found = re.fullmatch(r"Running (\w+)\.", line.strip())
        if found:
            name = found.group(1)
            out[name] = ""
        elif name is not None:
            out[name] += line + "\n"
    return out


def nvbandwidth(test: str, output: tuple[str, str] | None = None) -> Figure:
    """nvbandwidth's figure for `test`: from `output` ((file name, text) of a run already made), else by
    running the binary on PATH."""
    if output is not None:
        where, text = output
        gbps = gpu0_gbps(sections(text).get(test, ""))
        if gbps is None:
            return Figure(f"nvbandwidth {test}", None, f"not in {where}: no GPU 0 figure for {test}")
        return Figure(f"nvbandwidth {test} GPU 0 {SIZE_MIB}MiB", gbps, f"median of its trials, GB/s (1e9), from {where}")
    exe = shutil.which("nvbandwidth")
    if exe is None:
        return Figure(f"nvbandwidth {test}", None, "skipped — no nvbandwidth binary on PATH")
    try:
        proc = subprocess.run([exe, "-t", test, "--bufferSize", str(SIZE_MIB)], capture_output=True, text=True,
                              timeout=NVBANDWIDTH_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        return Figure(f"nvbandwidth {test}", None, tool_timed_out(exc))
    gbps = gpu0_gbps(proc.stdout)
    if gbps is None:
        return Figure(f"nvbandwidth {test}", None, tool_failed(proc))
    return Figure(f"nvbandwidth {test} GPU 0 {SIZE_MIB}MiB", gbps, "median of its trials, GB/s (1e9)")


def crosscheck_pcie(output: tuple[str, str] | None = None) -> list[tuple[Figure, list[Figure]]]:
    """Each kvbench figure beside nvbandwidth's; `output`: (file name, text) of an nvbandwidth run of the
    four CE tests at 256 MiB already made, read instead of running the tool again."""
    out = []
    for bench, test in TESTS.items():
        result = _run(bench)
        ours = (Figure(f"kvbench {bench} pinned 256MiB", result.gbps["median"], "CUDA events behind a spin kernel")
                if result.status == "ok" else Figure(f"kvbench {bench}", None, f"{result.status}: {result.reason}"))
        out.append((ours, [nvbandwidth(test, output)]))
    bidir = _run("pcie.bidir")
    for direction, test in BIDIR_TESTS.items():
        if bidir.status == "ok":
            rates = bidir.metadata[DIRECTIONS_GBPS]
            busy = "the other direction busy throughout" if rates["opposite_busy"][direction] else "NOT contended throughout"
            ours = Figure(f"kvbench pcie.bidir {direction} pinned 256MiB", rates[direction],
                          f"this direction's own events, last sample; {busy}")
        else:
            ours = Figure(f"kvbench pcie.bidir {direction}", None, f"{bidir.status}: {bidir.reason}")
        out.append((ours, [nvbandwidth(test, output)]))
    return out


def _run(bench: str):
    return run_kvbench(bench, {"memory": "pinned", "size": f"{SIZE_MIB}MiB", "gpu": 0}, Settings(samples=9), gpus=True)
