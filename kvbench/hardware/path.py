"""The path model: which links a transfer crosses, and the narrowest of them as its peak.

A benchmark names its path as segments: `("dram_copy",)`, `("dram_read",)`, `("gpu_link", 0)`, `("hbm", 0)`,
`("nic", "mlx5_0/1")`, `("nvme", "nvme0")`; each segment kind has one peak function in `SEGMENTS`. A
GPU link is taken as negotiated *while the copies ran* where the result read it, else at its max.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kvbench.hardware import peaks, sysfs
from kvbench.hardware.facts import Gpu, HostFacts, Link, Nic
from kvbench.hardware.peaks import Peak
from kvbench.metadata import LINK, PER_GPU_LINK

Segment = tuple


@dataclass(frozen=True)
class PathPeak:
    """The bottleneck's peak, or None with `reason` when no segment's peak is known.

    A segment whose peak is unknown (DRAM on a VM without DMI tables) does not void the
    known ones: the bottleneck is taken among the known segments and the unknown ones are
    listed in `unknown`, so the peak says what it was taken over.
    """

    peak: Peak | None
    reason: str | None = None
    bottleneck: str | None = None
    unknown: tuple[str, ...] = ()


SegmentPeak = tuple[Peak | None, str | None]
LinksUnderLoad = Mapping[int, Link]


def _gpu(segment: Segment, facts: HostFacts) -> tuple[Gpu | None, str | None]:
    gpu = facts.gpu(segment[1])
    return (gpu, None) if gpu else (None, f"GPU {segment[1]} not found ({facts.gpu_reason or 'no such index'})")


def gpu_link_peak(gpu: Gpu, under_load: Link | None = None) -> Peak | None:
    """A GPU's link peak: as negotiated while copies ran when that was read (`under_load`), else
    at the link's max gen/width. The link state read at rest is not used: an idle link trains
    down (Gen1 outside P0), which says nothing about the copies."""
    if under_load is not None and under_load.gen is not None and under_load.width is not None:
        return peaks.link_peak(under_load)
    link = gpu.link
    if link.max_gen is not None and link.max_width is not None:
        return peaks.link_peak(Link(link.max_gen, link.max_width, link.max_gen, link.max_width))
    return peaks.link_peak(link)


def _dram_read(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    return peaks.dram_peak(facts.dram)  # DRAM read (or written) once by a device: the whole bus


def _dram_copy(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    peak, reason = peaks.dram_peak(facts.dram)
    if peak is None:
        return None, reason
    # A copy reads and writes every byte it counts once: half the DRAM bus carries it.
    return Peak(peak.gbps / 2, f"DRAM {peak.gbps:.1f} GB/s / 2 (copy reads + writes); {peak.source}"), None


def _gpu_link(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    gpu, reason = _gpu(segment, facts)
    if gpu is None:
        return None, reason
    peak = gpu_link_peak(gpu, links.get(segment[1]))
    return (peak, None) if peak else (None, f"GPU {segment[1]} link speed unknown")


def _gpu_link_both(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    peak, reason = _gpu_link(("gpu_link", segment[1]), facts, links)  # both directions: twice one
    return (Peak(2 * peak.gbps, f"2 x {peak.source}", peak.raw), None) if peak else (None, reason)


def _all_gpu_links(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    visible = facts.visible_gpus()  # every GPU at once: the sum of their links
    found = [gpu_link_peak(g, links.get(g.index if g.cuda_index is None else g.cuda_index)) for g in visible]
    if not found or None in found:
        return None, "a GPU link speed is unknown"
    return Peak(sum(p.gbps for p in found), f"sum of {len(found)} GPU links"), None


def _hbm(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    gpu, reason = _gpu(segment, facts)
    if gpu is None:
        return None, reason
    spec, nvml = peaks.hbm_spec_peak(gpu.name), peaks.hbm_nvml_peak(gpu)
    if spec and nvml:  # the datasheet's is the peak; NVML's derivation is recorded beside it
        return Peak(spec.gbps, f"{spec.source}; NVML-derived {nvml.gbps:.0f} GB/s ({nvml.source})"), None
    peak = spec or nvml
    return (peak, None) if peak else (None, f"no HBM spec for '{gpu.name}'")


def _hbm_copy(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    peak, reason = _hbm(segment, facts, links)
    if peak is None:
        return None, reason
    # As dram.copy: bytes counted once, each read and written, so half the HBM bus carries them.
    return Peak(peak.gbps / 2, f"HBM {peak.gbps:.0f} GB/s / 2 (copy reads + writes); {peak.source}"), None


def _nic(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    nic = next((n for n in facts.nics if n.name == segment[1]), None)
    ports = segment[2] if len(segment) > 2 else 1
    peak = peaks.nic_peak(nic, ports) if nic else None
    return (peak, None) if peak else (None, f"NIC {segment[1]} rate unknown")


def _loopback(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    return None, f"peer={segment[1]} on this host: no network link to take a peak from"


def _card_link(nic: Nic, facts: HostFacts) -> Peak | None:
    """The PCIe link a NIC card sits on, as negotiated (a Gen6 CX-8 in a Gen5 slot: Gen5 x16)."""
    bdf = sysfs.normalize_bdf(nic.bdf) if nic.bdf else None
    pci = next((p for p in facts.pci if bdf and sysfs.normalize_bdf(p.bdf) == bdf), None)
    return peaks.link_peak(pci.link) if pci else None


def _nic_rails(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    """("nic_rails", devices[, gpu]): the sum of the cards' port rates, each card capped by its own
    PCIe link, and the sum capped by GPU `gpu`'s link when the bytes are in its memory (GPUDirect
    RDMA: every rail crosses that one link) — the seed's CX-8 (2 x 400GbE, 100 GB/s) on a Gen5 x16
    GPU gives 63 GB/s. Spec figures, labelled so."""
    by_card: dict[str, list[str]] = {}  # ports named as UCX does (mlx5_0:1); ports of one card share its total
    for rail in segment[1]:
        card, _, port = rail.partition(":")
        by_card.setdefault(card, []).append(f"{card}/{port or '1'}")
    total, sources = 0.0, []
    for card, ports in by_card.items():
        nic = next((n for n in facts.nics if n.name in ports or n.name == card), None)
        if nic is None:
            return None, f"rail device {card} ({', '.join(ports)}) not found among this host's NICs"
        peak = peaks.nic_peak(nic, ports=len(ports))
        if peak is None:
            return None, f"NIC {nic.name} rate unknown"
        link = _card_link(nic, facts)
        if link is not None and link.gbps < peak.gbps:
            peak = Peak(link.gbps, f"{peak.gbps:.1f} GB/s of ports capped by its PCIe link: {link.source}")
        total += peak.gbps
        sources.append(f"{card}: {peak.source}")
    source = f"spec: rails {', '.join(segment[1])}: " + "; ".join(sources)
    gpu_index = segment[2] if len(segment) > 2 else None
    if gpu_index is not None:
        gpu = facts.gpu(gpu_index)
        link = gpu_link_peak(gpu, links.get(gpu_index)) if gpu else None
        if link is None:
            return None, f"rails into GPU {gpu_index}'s memory: that GPU's PCIe link, which caps them, is unknown"
        if link.gbps < total:
            return Peak(link.gbps, f"spec: GPU {gpu_index}'s PCIe link {link.gbps:.1f} GB/s ({link.source}) caps "
                                   f"the rails' {total:.1f} GB/s ({source})"), None
    return Peak(total, source), None


def _remote_peer(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    return None, f"the NIC toward {segment[1]} is not named: no link peak (see kvbench info for NIC peaks)"


def _storage(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    nvme = nvme_of(segment[1])  # a filesystem's source device: an NVMe drive has a peak, others do not
    if nvme is None:
        return None, f"no spec peak for storage on {segment[1]} (not an NVMe drive)"
    return _nvme(("nvme", nvme, *segment[2:]), facts, links)


def _nvme(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> SegmentPeak:
    """("nvme", name[, "read" | "write"]): a drive's read or write class by its link."""
    dev = next((n for n in facts.nvme if n.name == segment[1]), None)
    bdf = sysfs.normalize_bdf(dev.bdf) if dev and dev.bdf else None
    pci = next((p for p in facts.pci if sysfs.normalize_bdf(p.bdf) == bdf), None)
    peak = peaks.nvme_peak(pci.link, segment[2] if len(segment) > 2 else "read") if pci else None
    return (peak, None) if peak else (None, f"NVMe {segment[1]} link unknown")


# Segment kind → its peak function: a new path segment is one function registered here, or from
# anywhere with `register_segment`.
SEGMENTS: dict[str, Callable[[Segment, HostFacts, LinksUnderLoad], SegmentPeak]] = {
    "dram_read": _dram_read, "dram_copy": _dram_copy, "gpu_link": _gpu_link, "gpu_link_both": _gpu_link_both,
    "all_gpu_links": _all_gpu_links, "hbm": _hbm, "hbm_copy": _hbm_copy, "nic": _nic, "loopback": _loopback,
    "nic_rails": _nic_rails, "remote_peer": _remote_peer, "storage": _storage, "nvme": _nvme,
}


# Segment kind → the hardware a case crossing it needs: a rule judging such cases should apply on a
# host whose profile (or inventory) has it, so its SKIP there is INCOMPLETE, never a quiet pass.
NEEDS: dict[str, str] = {"gpu_link": "gpu", "gpu_link_both": "gpu", "all_gpu_links": "gpu", "hbm": "gpu",
                         "hbm_copy": "gpu", "nic": "nic", "nic_rails": "nic", "remote_peer": "nic"}


def register_segment(kind: str, needs: str | None = None):
    """Decorator: `fn(segment, facts, links) -> (peak, None) | (None, reason)` is the peak of
    segments whose first element is `kind`; `needs`: the hardware such a segment crosses ("gpu")."""
    def decorate(fn: Callable[[Segment, HostFacts, LinksUnderLoad], SegmentPeak]):
        SEGMENTS[kind] = fn
        if needs:
            NEEDS[kind] = needs
        return fn

    return decorate


def path_needs(segments: Sequence[Segment]) -> set[str]:
    """The hardware a path crosses ("gpu", "nic"), from its segments' kinds."""
    return {NEEDS[s[0]] for s in segments if s and s[0] in NEEDS}


def segment_peak(segment: Segment, facts: HostFacts, links: LinksUnderLoad | None = None) -> SegmentPeak:
    """(peak, None) or (None, why not) for one segment; never raises, whatever the segment."""
    peak_of = SEGMENTS.get(segment[0]) if segment else None
    if peak_of is None:
        return None, f"no peak model for path segment {segment!r}"
    return peak_of(segment, facts, links or {})


def nvme_of(device: str) -> str | None:
    """`/dev/nvme0n1p2` → `nvme0`."""
    match = re.match(r"/dev/(nvme\d+)n\d+", device)
    return match.group(1) if match else None


def path_peak(segments: Sequence[Segment], facts: HostFacts, links: LinksUnderLoad | None = None) -> PathPeak:
    """The lowest peak among the segments whose peak is known, the others listed as unknown.

    `links`: GPU links read while the case's copies ran, by CUDA device number; they replace
    the links' max gen/width (a link downtrained under load gets the negotiated peak).
    """
    best: tuple[Peak, Segment] | None = None
    unknown: list[str] = []
    for segment in segments:
        peak, reason = segment_peak(segment, facts, links)
        if peak is None:
            unknown.append(reason or f"{segment!r}: peak unknown")
        elif best is None or peak.gbps < best[0].gbps:
            best = (peak, segment)
    if best is None:
        return PathPeak(None, "; ".join(unknown) or "no path")
    peak, segment = best
    if unknown:
        peak = Peak(peak.gbps, f"{peak.source}; not counted, peak unknown: {'; '.join(unknown)}", peak.raw)
    return PathPeak(peak, None, ":".join(str(s) for s in segment), tuple(unknown))


def links_under_load(params: dict, metadata: dict) -> dict[int, Link]:
    """The GPU links a result read while its copies ran (`link` with `under_load`, or each GPU's under
    `per_gpu_link`), by CUDA device number: what the path's peak is taken at."""
    out: dict[int, Link] = {}

    def take(gpu: int, link: dict | None) -> None:
        if link and link.get("under_load") and link.get("gen") is not None and link.get("width") is not None:
            out[gpu] = Link(link["gen"], link["width"], link.get("max_gen"), link.get("max_width"))

    if metadata.get(LINK):
        take(int(metadata.get("gpu", params.get("gpu", 0)) or 0), metadata[LINK])
    for gpu, facts in (metadata.get(PER_GPU_LINK) or {}).items():
        take(int(gpu), (facts or {}).get(LINK))
    return out
