"""What looks wrong with a host, for `kvbench info`: from its facts now, and from what its
latest stored GPU results recorded (a link is only worth judging under load)."""

from __future__ import annotations

from typing import Any

from kvbench.hardware.facts import HostFacts
from kvbench.hardware.sysfs import parse_cpulist
from kvbench.metadata import FAR_NUMA, GPU_BUS_ID, GPU_NUMA_NODE, LINK


def affinity_flags(facts: HostFacts, allowed_cpus: set[int]) -> list[str]:
    """A GPU none of whose NUMA node's CPUs this process may run on: its pinned buffers land far."""
    node_cpus = {n.node: parse_cpulist(n.cpus) for n in facts.numa}
    allowed_nodes = sorted(node for node, cpus in node_cpus.items() if cpus & allowed_cpus)
    flags = []
    for gpu in facts.gpus:
        if gpu.numa_node is None or gpu.numa_node not in node_cpus or gpu.numa_node in allowed_nodes:
            continue
        flags.append(f"GPU {gpu.index} ({gpu.bus_id}) is attached to NUMA node {gpu.numa_node}, but this process "
                     f"may run only on node(s) {', '.join(map(str, allowed_nodes))}: its pinned host memory lands "
                     f"far (run under numactl --cpunodebind={gpu.numa_node} --membind={gpu.numa_node})")
    return flags


def replay_flags(run: dict[str, Any]) -> list[str]:
    """PCIe replay counters that rose between the start and the end of `run`."""
    state = run.get("system_state") or {}
    start, end = state.get("pcie_replays") or {}, (state.get("at_end") or {}).get("pcie_replays") or {}
    return [f"GPU {bus} PCIe replay counter rose by {end[bus] - start[bus]} during run {run['id']} "
            "(link errors being retried: check the riser, cable or slot)"
            for bus in sorted(start.keys() & end.keys()) if end[bus] > start[bus]]


def _latest_per_gpu(results: list[dict[str, Any]], keep) -> dict[str, dict[str, Any]]:
    """The newest kept PCIe result per GPU, by the GPU's name in a flag. A GPU is told by the bus
    id its result recorded, which unlike CUDA's number does not change with CUDA_VISIBLE_DEVICES."""
    latest: dict[str | int, dict[str, Any]] = {}
    for r in results:  # oldest first, so the last one kept per GPU is the newest
        if r["status"] == "ok" and r["bench"].startswith("pcie.") and keep(r):
            latest[(r.get("extra") or {}).get(GPU_BUS_ID) or int(r["params"].get("gpu", 0))] = r
    return {_gpu_name(r): r for r in latest.values()}


def _gpu_name(result: dict[str, Any]) -> str:
    bus = (result.get("extra") or {}).get(GPU_BUS_ID)
    number = int(result["params"].get("gpu", 0))
    return f"GPU {number} ({bus})" if bus else f"GPU {number}"


def link_flags(results: list[dict[str, Any]]) -> list[str]:
    """GPUs whose newest link reading taken while copies ran is below the link's max gen/width."""
    def under_load(r: dict[str, Any]) -> bool:
        return bool(((r.get("extra") or {}).get(LINK) or {}).get("under_load"))

    flags = []
    for gpu, r in sorted(_latest_per_gpu(results, under_load).items()):
        link = r["extra"][LINK]
        if (link["gen"], link["width"]) != (link["max_gen"], link["max_width"]):
            flags.append(f"{gpu} link under load is Gen{link['gen']} x{link['width']} of Gen{link['max_gen']} "
                         f"x{link['max_width']} (downtrained; {r['bench']}, run {r['run_id']})")
    return flags


def numa_flags(results: list[dict[str, Any]]) -> list[str]:
    """GPUs whose newest `memory=pinned` copy used host memory on another NUMA node than the GPU's
    (a numa:N sweep is far on purpose and is not counted)."""
    def pinned(r: dict[str, Any]) -> bool:
        return r["params"].get("memory") == "pinned" and GPU_NUMA_NODE in (r.get("extra") or {})

    flags = []
    for gpu, r in sorted(_latest_per_gpu(results, pinned).items()):
        extra = r["extra"]
        if extra.get(FAR_NUMA):
            flags.append(f"{gpu}'s pinned host memory was on NUMA node {extra['host_numa_node']}, the GPU on "
                         f"node {extra['gpu_numa_node']} ({r['bench']}, run {r['run_id']}): a far-node copy")
    return flags


def stored_flags(runs: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[str]:
    """Flags from one host's stored runs (oldest first) and their results."""
    ended = [r for r in runs if (r.get("system_state") or {}).get("at_end")]
    return [*(replay_flags(ended[-1]) if ended else []), *link_flags(results), *numa_flags(results)]


def flags_from_store(store, host_ids: str | list[str]) -> list[str]:
    """`stored_flags` for the host (stored under any of `host_ids`) read from a results store."""
    ids = {host_ids} if isinstance(host_ids, str) else set(host_ids)
    return stored_flags(store.runs(host_ids=sorted(ids)), store.host_results(sorted(ids)))
