"""Near vs far NUMA placement from a `numa:N` × GPU sweep of `pcie.h2d` (suites/numa.toml).

A GPU's *near* node is the one NVML says it hangs off (recorded with each result as
`gpu_numa_node`); every other node is far. The ratio far / near says what a buffer on the wrong
socket costs on this box (the seed: up to half). A far case times a near-node twin interleaved with
itself (pcie.h2d/d2h, docs/measurement.md): its paired ratio (median over the pairs) is the ratio
shown, and only results without one fall back to dividing two cases' medians (`paired` False).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import median
from typing import Any

from kvbench.analyze.paired import paired_ratio
from kvbench.metadata import GPU_NUMA_NODE


@dataclass(frozen=True)
class NearFar:
    gpu: int
    size_bytes: int
    near_node: int
    near_gbps: float
    far_node: int
    far_gbps: float
    near_basis: str  # "NVML" (the GPU's recorded node) or "fastest" (unknown: the best node taken)
    paired_ratio: float | None = None  # measured in the far case against its near twin, per pair of samples

    @property
    def paired(self) -> bool:
        return self.paired_ratio is not None

    @property
    def ratio(self) -> float:
        """far / near (1.0: placement does not matter; 0.5: a far buffer halves the rate): per pair of
        samples where the far case measured it, else the two cases' GB/s divided."""
        return self.paired_ratio if self.paired_ratio is not None else self.far_gbps / self.near_gbps


def near_far(results: list[dict[str, Any]], bench: str = "pcie.h2d") -> list[NearFar]:
    """One row per (GPU, size, far node) where the sweep has the GPU's near node and another.

    `results` are run-document results (params, status, gbps, metadata); several runs of the same
    case count by their median.
    """
    rates: dict[tuple[int, int], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    pairs: dict[tuple[int, int, int], list[float]] = defaultdict(list)  # (gpu, size, far node): paired ratios
    gpu_node: dict[int, int] = {}
    for r in results:
        memory = str(r["params"].get("memory", ""))
        if r["bench"] != bench or r["status"] != "ok" or not memory.startswith("numa:"):
            continue
        gpu, size = int(r["params"].get("gpu", 0)), int(r["params"]["size"])
        rates[(gpu, size)][int(memory[5:])].append(r["gbps"]["median"])
        node = (r.get("metadata") or {}).get(GPU_NUMA_NODE)
        if node is not None:
            gpu_node[gpu] = int(node)
            record = paired_ratio(r, {"memory": f"numa:{int(node)}"})
            if record is not None:  # the near twin it was timed with stands in for a near case
                pairs[(gpu, size, int(memory[5:]))].append(record["median"])
                rates[(gpu, size)].setdefault(int(node), []).append(record["against_gbps"]["median"])
    rows = []
    for (gpu, size), by_node in sorted(rates.items()):
        if len(by_node) < 2:
            continue
        medians = {node: median(values) for node, values in by_node.items()}
        near = gpu_node.get(gpu)
        basis = "NVML"
        if near not in medians:
            near, basis = max(medians, key=medians.get), "fastest"
        rows += [NearFar(gpu, size, near, medians[near], node, gbps, basis,
                         median(pairs[(gpu, size, node)]) if basis == "NVML" and pairs.get((gpu, size, node)) else None)
                 for node, gbps in sorted(medians.items()) if node != near]
    return rows
