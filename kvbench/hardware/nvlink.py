"""The link between two GPUs of one server, through NVML: NVLink (direct or through NVSwitch, with
the count of active links and their version), PCIe peer-to-peer, or none (copies staged through
host memory). GPUs are named by PCI bus id, as CUDA gives them (gpu_link.py says why).
"""

from __future__ import annotations

from typing import Any

from kvbench.hardware.gpu_link import nvml_handle
from kvbench.hardware.nvml import call, nvml_session, text
from kvbench.hardware.sysfs import normalize_bdf

ACTIVE = 1  # NVML_FEATURE_ENABLED: nvmlDeviceGetNvLinkState's answer for an active link
GPU_DEVICE, SWITCH_DEVICE = 0, 2  # nvmlNvLinkDeviceType_t: the far end of a link
MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS (NVLink 4 and 5 GPUs have 18)
P2P_READ, P2P_OK = 0, 0  # NVML_P2P_CAPS_INDEX_READ, NVML_P2P_STATUS_OK
STAGED = "no peer-to-peer path: the copies are staged through host memory (no link peak)"


def active_links(pynvml, handle) -> list[dict[str, Any]]:
    """Each active NVLink of one GPU: its number, NVML's version figure, and what is at its far end
    ("switch", or the PCI bus id of the GPU it reaches)."""
    out = []
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", MAX_LINKS)):
        if call(pynvml.nvmlDeviceGetNvLinkState, handle, link) != ACTIVE:
            continue
        kind = call(pynvml.nvmlDeviceGetNvLinkRemoteDeviceType, handle, link) if hasattr(
            pynvml, "nvmlDeviceGetNvLinkRemoteDeviceType") else None
        remote = call(pynvml.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
        far = "switch" if kind == SWITCH_DEVICE else normalize_bdf(text(remote.busId)) if remote else "unknown"
        out.append({"link": link, "version": call(pynvml.nvmlDeviceGetNvLinkVersion, handle, link), "far": far})
    return out


def classify(bus_a: str, links_a: list[dict], bus_b: str, links_b: list[dict], p2p_ok: bool | None) -> dict[str, Any]:
    """The link from GPU `bus_a` to GPU `bus_b` from each one's active NVLinks (`active_links`) and
    NVML's PCIe peer-to-peer answer: {"kind": "nvlink", "links": n, "via": "direct" | "nvswitch",
    "nvml_version": v} (n: links that carry the pair's bytes, the fewer of the two ends' through a
    switch), {"kind": "pcie"} or {"kind": "none", "note": STAGED}."""
    a, b = normalize_bdf(bus_a), normalize_bdf(bus_b)
    direct = [x for x in links_a if x["far"] == b]
    switched = min(sum(x["far"] == "switch" for x in links_a), sum(x["far"] == "switch" for x in links_b))
    if direct or switched:
        used = direct or [x for x in links_a if x["far"] == "switch"]
        versions = sorted({x["version"] for x in used if x["version"] is not None})
        return {"kind": "nvlink", "links": len(direct) or switched, "via": "direct" if direct else "nvswitch",
                "nvml_version": versions[0] if len(versions) == 1 else versions or None,
                "peer_bus_id": b, "bus_id": a}
    if p2p_ok:
        return {"kind": "pcie", "note": "PCIe peer-to-peer (no NVLink between the pair)", "bus_id": a, "peer_bus_id": b}
    return {"kind": "none" if p2p_ok is False else "unknown", "note": STAGED if p2p_ok is False else
            "NVML did not say whether the pair has peer-to-peer", "bus_id": a, "peer_bus_id": b}


def pair_link(bus_a: str | None, bus_b: str | None, index_a: int = 0, index_b: int = 1) -> dict[str, Any]:
    """The link between two GPUs (PCI bus ids as CUDA gives them, NVML indexes as the fallback);
    {"kind": "unknown", "note": why} without NVML."""
    with nvml_session() as pynvml:
        if pynvml is None:
            return {"kind": "unknown", "note": "NVML unavailable: the link between the GPUs is not known"}
        try:
            ha, hb = nvml_handle(pynvml, bus_a, index_a), nvml_handle(pynvml, bus_b, index_b)
        except Exception as exc:
            return {"kind": "unknown", "note": f"NVML could not find the GPUs: {type(exc).__name__}: {exc}"}
        status = call(pynvml.nvmlDeviceGetP2PStatus, ha, hb, P2P_READ) if hasattr(
            pynvml, "nvmlDeviceGetP2PStatus") else None
        pci_a, pci_b = call(pynvml.nvmlDeviceGetPciInfo, ha), call(pynvml.nvmlDeviceGetPciInfo, hb)
        a = text(pci_a.busId) if pci_a else (bus_a or "")
        b = text(pci_b.busId) if pci_b else (bus_b or "")
        return classify(a, active_links(pynvml, ha), b, active_links(pynvml, hb),
                        None if status is None else status == P2P_OK)
