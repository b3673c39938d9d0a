"""`kvbench info`: the host facts with the spec peak of every path, and what looks wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from kvbench.analyze.accept.host_flags import affinity_flags
from kvbench.hardware import fingerprint, peaks
from kvbench.hardware.facts import HostFacts, Link
from kvbench.hardware.path import gpu_link_peak, segment_peak


def _link_text(link: Link) -> str:
    if link.gen is None and link.max_gen is None:
        return "-"
    text = f"Gen{link.gen} x{link.width} (max Gen{link.max_gen} x{link.max_width})"
    return f"[red]{text} downtrained[/]" if link.downtrained else text


def _peak_dict(peak: peaks.Peak | None, reason: str | None = None) -> dict[str, Any]:
    return {"gbps": peak.gbps, "source": peak.source, "raw": peak.raw} if peak else {"gbps": None, "reason": reason}


def info_document(facts: HostFacts, allowed_cpus: set[int] | None = None,
                  stored: Sequence[str] = ()) -> dict[str, Any]:
    """Facts, peaks and flags as one JSON-able document.

    `allowed_cpus` (this process's CPU affinity) finds GPUs whose pinned memory would land on a
    far NUMA node; `stored` are flags from this host's stored results (`host_flags.flags_from_store`).
    """
    paths: dict[str, Any] = {"dram.copy": _peak_dict(*segment_peak(("dram_copy",), facts))}
    flags = []
    for gpu in facts.gpus:
        paths[f"gpu{gpu.index}.hbm.spec"] = _peak_dict(peaks.hbm_spec_peak(gpu.name), f"no spec for {gpu.name}")
        paths[f"gpu{gpu.index}.hbm.nvml"] = _peak_dict(peaks.hbm_nvml_peak(gpu), "NVML gave no bus width/clock")
        paths[f"gpu{gpu.index}.pcie"] = _peak_dict(gpu_link_peak(gpu), "link unknown")  # at its max gen/width
        if gpu.link.downtrained:
            flags.append(f"GPU {gpu.index} ({gpu.bus_id}) link downtrained: Gen{gpu.link.gen} x{gpu.link.width} "
                         f"of Gen{gpu.link.max_gen} x{gpu.link.max_width} (read it under load: idle links slow down)")
    for nic in facts.nics:
        paths[f"nic.{nic.name}"] = _peak_dict(peaks.nic_peak(nic), "rate unknown")
    for dev in facts.nvme:
        paths[f"nvme.{dev.name}"] = _peak_dict(*segment_peak(("nvme", dev.name), facts))
    if allowed_cpus is not None:
        flags += affinity_flags(facts, allowed_cpus)
    flags += stored
    return {
        "host_id": fingerprint.host_id(facts),
        "facts": facts.to_dict(),
        "context": fingerprint.context(),
        "peaks": paths,
        "flags": flags,
        "units": "GB/s = 1e9 bytes per second, one direction",
    }


def render_info(console: Console, doc: dict[str, Any]) -> None:
    f = doc["facts"]
    console.print(f"[bold]{f['hostname']}[/]  host id {doc['host_id'][:16]}…")
    console.print(f"CPU {f['cpu_model']} · {f['sockets']} socket(s), {f['cores']} cores, {f['threads']} threads · "
                  f"kernel {f['kernel']}")
    # GB (1e9 B) as `host profile` and `accept` state DRAM (dram_gb): one unit for one fact
    numa = ", ".join(f"node{n['node']}: {(n['memory_bytes'] or 0) / 1e9:.0f} GB (cpus {n['cpus']})" for n in f["numa"])
    console.print(f"NUMA {numa}")
    dram = f["dram"]
    console.print("DRAM " + (f"{dram['modules']} modules @ {dram['speed_mts']} MT/s" if dram["speed_mts"]
                             else f"unknown ({dram['reason']})"))
    if f["gpus"]:
        table = Table(title="GPUs", title_justify="left")
        for col in ("#", "name", "bus id", "NUMA", "PCIe link", "memory GiB"):
            table.add_column(col)
        for g in f["gpus"]:
            table.add_row(str(g["index"]), g["name"], g["bus_id"], str(g["numa_node"]),
                          _link_text(Link(**g["link"])), f"{(g['memory_bytes'] or 0) / 2**30:.0f}")
        console.print(table)
    else:
        console.print(f"GPUs: none ({f['gpu_reason']})")
    nics = [f"{n['name']} ({n['kind']}, " + (f"{n['rate_gbit']:g} Gb/s)" if n["rate_gbit"] else "speed unknown)")
            for n in f["nics"]]
    console.print("NICs " + (", ".join(nics) if nics else "none found"))
    console.print("NVMe " + (", ".join(f"{n['name']} {n['model'] or ''}".strip() for n in f["nvme"])
                             if f["nvme"] else "none found"))
    console.print(f"PCIe {len(f['pci'])} device(s) with a link" if f["pci"] else
                  "PCIe no device reports a link here (a VM may hide them)")
    table = Table(title="spec peaks (GB/s = 1e9 B/s, one direction)", title_justify="left")
    for col in ("path", "peak GB/s", "source / reason"):
        table.add_column(col, overflow="fold")
    for path, p in doc["peaks"].items():
        table.add_row(path, f"{p['gbps']:.1f}" if p["gbps"] else "-", p.get("source") or p.get("reason", ""))
    console.print(table)
    for flag in doc["flags"]:
        console.print(f"[bold red]! {flag}[/]")
    down = [d for d in f["pci"] if Link(**d["link"]).downtrained]
    if down:
        console.print(f"[yellow]{len(down)} PCIe device(s) below max link now (idle links may slow down; "
                      f"GPUs are checked under load by the GPU benchmarks)[/]")
