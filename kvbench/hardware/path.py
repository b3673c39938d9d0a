"""The path model: which links a transfer crosses, and the narrowest of them as its peak.

A benchmark names its path as segments: `("dram_copy",)`, `("dram_read",)`, `("gpu_link", 0)`, `("hbm", 0)`,
`("nic", "mlx5_0/1")`, `("nvme", "nvme0")`. Links are taken *as negotiated*.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kvbench.hardware import peaks, sysfs
from kvbench.hardware.facts import HostFacts
from kvbench.hardware.peaks import Peak

Segment = tuple


@dataclass(frozen=True)
class PathPeak:
    """The bottleneck's peak (None with `reason` when a segment's peak is unknown)."""

    peak: Peak | None
    reason: str | None = None
    bottleneck: str | None = None


def segment_peak(segment: Segment, facts: HostFacts) -> tuple[Peak | None, str | None]:
    kind = segment[0]
    if kind == "dram_read":  # DRAM read (or written) once by a device: the whole bus
        return peaks.dram_peak(facts.dram)
    if kind == "dram_copy":
        peak, reason = peaks.dram_peak(facts.dram)
        if peak is None:
            return None, reason
        # A copy reads and writes every byte it counts once: half the DRAM bus carries it.
        return Peak(peak.gbps / 2, f"DRAM {peak.gbps:.1f} GB/s / 2 (copy reads + writes); {peak.source}"), None
    if kind == "all_gpu_links":  # every GPU at once: the sum of their links, as negotiated
        found = [peaks.link_peak(g.link) for g in facts.visible_gpus()]
        if not found or None in found:
            return None, "a GPU link speed is unknown"
        return Peak(sum(p.gbps for p in found), f"sum of {len(found)} GPU links as negotiated"), None
    if kind == "gpu_link_both":  # both directions at once: the sum's peak is twice one direction
        peak, reason = segment_peak(("gpu_link", segment[1]), facts)
        return (Peak(2 * peak.gbps, f"2 x {peak.source}", peak.raw), None) if peak else (None, reason)
    if kind in ("gpu_link", "hbm"):
        gpu = facts.gpu(segment[1])
        if gpu is None:
            return None, f"GPU {segment[1]} not found ({facts.gpu_reason or 'no such index'})"
        if kind == "gpu_link":
            peak = peaks.link_peak(gpu.link)
            return (peak, None) if peak else (None, f"GPU {segment[1]} link speed unknown")
        spec, nvml = peaks.hbm_spec_peak(gpu.name), peaks.hbm_nvml_peak(gpu)
        if spec and nvml:  # the datasheet's is the peak; NVML's derivation is recorded beside it
            return Peak(spec.gbps, f"{spec.source}; NVML-derived {nvml.gbps:.0f} GB/s ({nvml.source})"), None
        peak = spec or nvml
        return (peak, None) if peak else (None, f"no HBM spec for '{gpu.name}'")
    if kind == "nic":
        nic = next((n for n in facts.nics if n.name == segment[1]), None)
        ports = segment[2] if len(segment) > 2 else 1
        peak = peaks.nic_peak(nic, ports) if nic else None
        return (peak, None) if peak else (None, f"NIC {segment[1]} rate unknown")
    if kind == "loopback":  # both agents on this host: no link of the network is crossed
        return None, f"peer={segment[1]} on this host: no network link to take a peak from"
    if kind == "nic_rails":  # ports named as UCX does (mlx5_0:1); ports of one card share its total
        by_card: dict[str, list[str]] = {}
        for rail in segment[1]:
            card, _, port = rail.partition(":")
            by_card.setdefault(card, []).append(f"{card}/{port or '1'}")
        total, sources = 0.0, []
        for card, ports in by_card.items():
            nic = next((n for n in facts.nics if n.name in ports), None)
            if nic is None:
                return None, f"rail device {card} ({', '.join(ports)}) not found among this host's NICs"
            peak = peaks.nic_peak(nic, ports=len(ports))
            if peak is None:
                return None, f"NIC {nic.name} rate unknown"
            total += peak.gbps
            sources.append(f"{card}: {peak.source}")
        return Peak(total, f"rails {', '.join(segment[1])}: " + "; ".join(sources)), None
    if kind == "remote_peer":
        return None, f"the NIC toward {segment[1]} is not named: no link peak (see kvbench info for NIC peaks)"
    if kind == "storage":  # a filesystem's source device: an NVMe drive has a peak, others do not
        nvme = nvme_of(segment[1])
        if nvme is None:
            return None, f"no spec peak for storage on {segment[1]} (not an NVMe drive)"
        return segment_peak(("nvme", nvme), facts)
    if kind == "nvme":
        dev = next((n for n in facts.nvme if n.name == segment[1]), None)
        bdf = sysfs.normalize_bdf(dev.bdf) if dev and dev.bdf else None
        pci = next((p for p in facts.pci if sysfs.normalize_bdf(p.bdf) == bdf), None)
        peak = peaks.nvme_peak(pci.link) if pci else None
        return (peak, None) if peak else (None, f"NVMe {segment[1]} link unknown")
    raise ValueError(f"unknown path segment {segment!r}")


def nvme_of(device: str) -> str | None:
    """`/dev/nvme0n1p2` → `nvme0`."""
    match = re.match(r"/dev/(nvme\d+)n\d+", device)
    return match.group(1) if match else None


def path_peak(segments: Sequence[Segment], facts: HostFacts) -> PathPeak:
    """The lowest peak along `segments`; unknown when any segment's peak is unknown."""
    best: tuple[Peak, Segment] | None = None
    for segment in segments:
        peak, reason = segment_peak(segment, facts)
        if peak is None:
            return PathPeak(None, reason)
        if best is None or peak.gbps < best[0].gbps:
            best = (peak, segment)
    if best is None:
        return PathPeak(None, "no path")
    return PathPeak(best[0], None, ":".join(str(s) for s in best[1]))
