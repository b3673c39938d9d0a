"""A run's PCIe and GPU-to-GPU results in nvbandwidth's shape: one matrix per nvbandwidth testcase, laid out
and counted as nvbandwidth lays out and counts them, so a reader (or a dashboard) that knows nvbandwidth reads
kvbench without a translation table.

The mapping (nvbandwidth's testcases_ce.cpp / testcases_sm.cpp):

| kvbench result | nvbandwidth testcase | matrix cell |
|---|---|---|
| `pcie.h2d memory=pinned engine=ce` | `host_to_device_memcpy_ce` | row 0 (CPU), column = GPU |
| `pcie.d2h memory=pinned engine=ce` | `device_to_host_memcpy_ce` | row 0 (CPU), column = GPU |
| `pcie.bidir`, its H2D / D2H direction | `host_to_device_bidirectional_memcpy_ce` / `device_to_host_…` | row 0, column = GPU |
| `gpu.p2p direction=write` | `device_to_device_memcpy_write_ce` (`_sm`) | row = source GPU, column = destination |
| `gpu.p2p direction=read` | `device_to_device_memcpy_read_ce` (`_sm`) | row = the reading (destination) GPU, column = the source |
| `gpu.p2p bidir=yes` | `device_to_device_bidirectional_memcpy_{read,write}_ce` (`_sm`) | Total: the sum of the two directions |

Units and bytes as nvbandwidth counts them: decimal GB/s, a copy's bytes once; a bidirectional cell is
nvbandwidth's "Total", the sum of each direction's own rate (each timed on its own stream), with each
direction kept beside it. Where a run measured a cell at several sizes the largest is shown (nvbandwidth
runs one buffer size, 512 MiB by default) and each testcase says which size it holds. Only pinned host memory
and the default load count: nvbandwidth has neither pageable buffers nor a load beside its copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvbench.metadata import DIRECTIONS_GBPS

DESCRIPTIONS = {  # nvbandwidth's own bandwidth_description of each testcase
    "host_to_device_memcpy": "memcpy {E} CPU(row) -> GPU(column) bandwidth (GB/s)",
    "device_to_host_memcpy": "memcpy {E} CPU(row) <- GPU(column) bandwidth (GB/s)",
    "host_to_device_bidirectional_memcpy": "memcpy {E} CPU(row) <-> GPU(column) bandwidth (GB/s)",
    "device_to_host_bidirectional_memcpy": "memcpy {E} CPU(row) <-> GPU(column) bandwidth (GB/s)",
    "device_to_device_memcpy_read": "memcpy {E} GPU(row) -> GPU(column) bandwidth (GB/s)",
    "device_to_device_memcpy_write": "memcpy {E} GPU(row) <- GPU(column) bandwidth (GB/s)",
    "device_to_device_bidirectional_memcpy_read": "memcpy {E} GPU(row) <-> GPU(column) Total bandwidth (GB/s)",
    "device_to_device_bidirectional_memcpy_write": "memcpy {E} GPU(row) <-> GPU(column) Total bandwidth (GB/s)",
}


@dataclass
class NvbandwidthCase:
    """One nvbandwidth testcase as kvbench measured it: `cells[(row, column)]` in GB/s, `directions` the two
    directions of a bidirectional cell, `sizes` the bytes per copy each cell was measured at."""

    name: str
    description: str
    rows: int
    columns: int
    cells: dict[tuple[int, int], float] = field(default_factory=dict)
    directions: dict[tuple[int, int], tuple[float, float]] = field(default_factory=dict)
    sizes: dict[tuple[int, int], int] = field(default_factory=dict)
    cases: dict[tuple[int, int], str] = field(default_factory=dict)  # the kvbench case id behind each cell

    @property
    def total(self) -> float:
        """nvbandwidth's SUM line: every cell added."""
        return sum(self.cells.values())

    def matrix(self) -> list[list[float | None]]:
        return [[self.cells.get((r, c)) for c in range(self.columns)] for r in range(self.rows)]


def _engine(params: dict[str, Any]) -> str:
    return "sm" if params.get("engine") == "sm" else "ce"


def _gpu(params: dict[str, Any]) -> int | None:
    try:
        return int(params.get("gpu", 0))
    except (TypeError, ValueError):
        return None


def _pair(params: dict[str, Any]) -> tuple[int, int] | None:
    try:
        a, b = str(params.get("pair", "")).split("-")
        return int(a), int(b)
    except ValueError:
        return None


def _placements(result: dict[str, Any]) -> list[tuple[str, tuple[int, int], float, tuple[float, float] | None]]:
    """(testcase name, cell, GB/s, the two directions or None) for one ok result; [] where it has no
    nvbandwidth equivalent (pageable or NUMA-placed memory, a load beside it, all GPUs at once)."""
    bench, params = result["bench"], result["params"]
    rate = (result.get("gbps") or {}).get("median")
    meta = result.get("metadata") or {}
    if rate is None or params.get("load", "none") != "none":
        return []
    if bench in ("pcie.h2d", "pcie.d2h", "pcie.bidir"):
        gpu = _gpu(params)
        if params.get("memory", "pinned") != "pinned" or params.get("gpus", "one") != "one" or gpu is None:
            return []
        engine = _engine(params)
        if bench != "pcie.bidir":
            name = "host_to_device_memcpy" if bench == "pcie.h2d" else "device_to_host_memcpy"
            return [(f"{name}_{engine}", (0, gpu), rate, None)]
        d = meta.get(DIRECTIONS_GBPS) or {}
        if d.get("h2d") is None or d.get("d2h") is None:
            return []
        both = (d["h2d"], d["d2h"])
        return [(f"host_to_device_bidirectional_memcpy_{engine}", (0, gpu), d["h2d"], both),
                (f"device_to_host_bidirectional_memcpy_{engine}", (0, gpu), d["d2h"], both)]
    if bench == "gpu.p2p" and (pair := _pair(params)) is not None:
        src, dst = pair
        direction, engine = params.get("direction", "write"), _engine(params)
        cell = (src, dst) if direction == "write" else (dst, src)  # nvbandwidth's row: the GPU whose context copies
        if params.get("bidir", "no") != "yes":
            return [(f"device_to_device_memcpy_{direction}_{engine}", cell, rate, None)]
        d = meta.get(DIRECTIONS_GBPS) or {}
        ways = [v for k, v in d.items() if "->" in k and isinstance(v, int | float)]
        if len(ways) != 2:
            return []
        forward, backward = d.get(f"{src}->{dst}", ways[0]), d.get(f"{dst}->{src}", ways[1])
        return [(f"device_to_device_bidirectional_memcpy_{direction}_{engine}", cell, forward + backward,
                 (forward, backward))]
    return []


def nvbandwidth_cases(results: list[dict[str, Any]], gpu_count: int | None = None) -> list[NvbandwidthCase]:
    """nvbandwidth's testcases among ok run-document `results`, in nvbandwidth's order; each matrix
    `gpu_count` wide (else as wide as the highest GPU index measured)."""
    found: dict[str, NvbandwidthCase] = {}
    placed = [(r, p) for r in results if r.get("status") == "ok" for p in _placements(r)]
    gpus = gpu_count or 1 + max((max(cell) for _r, (_n, cell, _v, _d) in placed), default=0)
    for r, (name, cell, rate, both) in placed:
        size = int(r["params"].get("size") or 0)
        base, engine = name.rsplit("_", 1)
        case = found.setdefault(name, NvbandwidthCase(name, DESCRIPTIONS[base].format(E=engine.upper()),
                                               1 if base.startswith(("host", "device_to_host")) else gpus, gpus))
        if cell in case.sizes and case.sizes[cell] > size:
            continue  # nvbandwidth runs one (large) buffer size: the largest measured stands for the cell
        case.cells[cell], case.sizes[cell], case.cases[cell] = rate, size, r.get("case", "")
        if both is not None:
            case.directions[cell] = both
    order = list(DESCRIPTIONS)
    return sorted(found.values(), key=lambda t: (order.index(t.name.rsplit("_", 1)[0]), t.name))


def nvbandwidth_header(run: dict[str, Any], host: dict[str, Any] | None, context: dict[str, Any] | None
                       ) -> dict[str, Any]:
    """nvbandwidth's header keys (`version`, `git_version`, `CUDA Runtime Version`, `Driver Version`, `GPU
    Device list`) from the run's facts, every one present (a dashboard keyed on one never meets a KeyError):
    null where the run did not record it, and `kvbench_null_reasons` says why for each null."""
    facts = (context or {}).get("facts") or {}
    gpus = ((host or {}).get("facts") or {}).get("gpus") or []
    runtime = facts.get("cuda_runtime")
    header = {"version": run.get("kvbench_version"), "git_version": run.get("git_sha"),
              "CUDA Runtime Version": int(runtime) if isinstance(runtime, int | float) else None,
              "Driver Version": facts.get("nvidia_driver"),
              "GPU Device list": [f"{g.get('index', i)}: {g.get('name', '?')} ({g.get('bus_id', '?')})"
                                  for i, g in enumerate(gpus)]}
    why = {"version": "the run records no kvbench version",
           "git_version": "the run recorded no git sha (kvbench was not run from a git checkout)",
           "CUDA Runtime Version": "kvbench records the CUDA driver API version"
                                   + (f" ({facts['cuda_driver']})" if facts.get("cuda_driver") else "")
                                   + ", not a runtime's (cupy links its own)",
           "Driver Version": "no NVIDIA driver answered NVML when the run began" if context else
                             "the export carries no context (older kvbench)"}
    header["kvbench_null_reasons"] = {k: v for k, v in why.items() if header[k] is None}
    if not gpus:
        header["kvbench_null_reasons"]["GPU Device list"] = "the run's host facts list no GPU"
    header["kvbench_fields"] = ("version and git_version are kvbench's (the figures are kvbench's); Driver Version "
                                "and GPU Device list are the run's own facts")
    return header


def nvbandwidth_json(cases: list[NvbandwidthCase], run: dict[str, Any], host: dict[str, Any] | None = None,
                     context: dict[str, Any] | None = None) -> dict[str, Any]:
    """`cases` as nvbandwidth's `--json` output: {"nvbandwidth": {version, git_version, CUDA Runtime Version,
    Driver Version, GPU Device list (`nvbandwidth_header`), "testcases": [{name, status,
    bandwidth_description, bandwidth_matrix (rows of strings, "N/A" where not measured), sum}]}}, with
    kvbench's own fields beside (prefixed `kvbench_`): where the figures come from, each cell's buffer size,
    and a bidirectional cell's two directions."""
    out = []
    for case in cases:
        matrix = [[f"{v:g}" if v is not None else "N/A" for v in row] for row in case.matrix()]
        entry = {"name": case.name, "status": "Passed", "bandwidth_description": case.description,
                 "bandwidth_matrix": matrix, "sum": case.total,
                 "kvbench_buffer_bytes": sorted(set(case.sizes.values())),
                 "kvbench_cases": {f"{r},{c}": cid for (r, c), cid in sorted(case.cases.items())}}
        if case.directions:
            entry["kvbench_directions_gbps"] = {f"{r},{c}": list(v) for (r, c), v in sorted(case.directions.items())}
        out.append(entry)
    return {"nvbandwidth": {**nvbandwidth_header(run, host, context),
                            "kvbench_run": run.get("id"), "kvbench_version": run.get("kvbench_version"),
                            "kvbench_note": "figures measured by kvbench (not by nvbandwidth), laid out as "
                                            "nvbandwidth's testcases; GB/s = 1e9 B/s, a copy's bytes once",
                            "testcases": out}}
