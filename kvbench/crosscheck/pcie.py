"""`kvbench crosscheck pcie`: nvbandwidth's host_to_device / device_to_host copy-engine tests next
to `pcie.h2d` / `pcie.d2h` pinned, when an `nvbandwidth` binary is on PATH."""

from __future__ import annotations

import re
import shutil
import subprocess

from kvbench.benches.registry import get_bench
from kvbench.crosscheck.dram import Figure
from kvbench.hardware import fingerprint
from kvbench.measure.engine import Settings
from kvbench.plan.cases import Case
from kvbench.runner import run_case

TESTS = {"pcie.h2d": "host_to_device_memcpy_ce", "pcie.d2h": "device_to_host_memcpy_ce"}
_SUM = re.compile(r"^SUM\s+(\S+)\s+([\d.]+)", re.M)


def nvbandwidth(test: str) -> Figure:
    exe = shutil.which("nvbandwidth")
    if exe is None:
        return Figure(f"nvbandwidth {test}", None, "skipped — no nvbandwidth binary on PATH")
    proc = subprocess.run([exe, "-t", test], capture_output=True, text=True, timeout=300)
    match = next((m for m in _SUM.finditer(proc.stdout) if m.group(1) == test), None)
    if match is None:
        return Figure(f"nvbandwidth {test}", None, f"failed: {proc.stderr.strip()[:120]}")
    return Figure(f"nvbandwidth {test}", float(match.group(2)), "SUM over GPUs, GB/s (1e9)")


def crosscheck_pcie() -> list[tuple[Figure, list[Figure]]]:
    facts = fingerprint.collect_facts()
    out = []
    for bench, test in TESTS.items():
        spec = get_bench(bench)
        result = run_case(Case(bench, spec.canonical_params({"memory": "pinned", "size": "256MiB"})), facts,
                          Settings(samples=9))
        ours = (Figure(f"kvbench {bench} pinned 256MiB", result.gbps["median"], "CUDA events behind a spin kernel")
                if result.status == "ok" else Figure(f"kvbench {bench}", None, f"{result.status}: {result.reason}"))
        out.append((ours, [nvbandwidth(test)]))
    return out
