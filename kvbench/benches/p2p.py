"""`gpu.p2p`: one GPU's memory to another's inside a server (NVLink, NVSwitch or PCIe peer-to-peer).

`pair=A-B` copies GPU A's buffer into GPU B's (`pair = "*"` in a sweep: every ordered pair, the
matrix nvbandwidth prints, each pair its own case). `engine=ce`: cudaMemcpyPeerAsync on a copy
engine; `engine=sm`: the vector_copy kernel (kernels/hbm.cu) reaching the peer's memory with peer
access enabled. `direction=write`: the source GPU pushes (its stream, its copy engine or SMs);
`read`: the destination GPU pulls. `bidir=yes` runs A→B and B→A at once, each on its initiating
GPU's stream, and reports the sum with each direction in `directions_gbps`. Every copy is verified:
the destination is poisoned before it and must hold the source's pattern after, and the guard bytes
on both sides of it the poison; each direction's source has its own pattern (seed 40 + its GPU). The pair's link
(NVLink links and version, PCIe peer-to-peer, or none: staged through host memory) comes from NVML;
its peak from peaks.toml's [[nvlink]] rows or the GPUs' PCIe links. docs/gpu-p2p.md maps the cases
onto nvbandwidth's device_to_device tests.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.backends.cuda import (
    cuda_unavailable_reason,
    cupy_module,
    device_count,
    kernel_module,
    launch_shape,
    pci_bus_id,
    upload,
)
from kvbench.benches.base import Benchmark, Prepared, built_in_stack, prepared_on_gpu
from kvbench.benches.declared import GPU_P2P
from kvbench.benches.registry import register
from kvbench.errors import BadInput, IntegrityError
from kvbench.hardware.facts import HostFacts
from kvbench.hardware.path import LinksUnderLoad, Segment, gpu_link_peak, register_segment
from kvbench.hardware.peaks import Peak, nvlink_spec
from kvbench.measure.cuda_timer import AllGpusEventTimer, CudaEventTimer
from kvbench.measure.engine import Workload
from kvbench.memory.cuda_memory import check_gpu
from kvbench.memory.guard import GUARD_BYTES
from kvbench.memory.pattern import POISON, fill_pattern, poison_between_copies


def parse_pair(text: str) -> tuple[int, int]:
    """"0-1" → (0, 1): source and destination GPU; BadInput naming the value otherwise."""
    a, sep, b = str(text).partition("-")
    if not sep or not a.strip().isdigit() or not b.strip().isdigit() or int(a) == int(b):
        raise BadInput(f"bad pair={text}: give two different GPUs as SRC-DST, e.g. pair=0-1")
    return int(a), int(b)


def two_gpus_reason(what: str) -> str | None:
    """Why a benchmark between two GPUs cannot run here (`what`: its name and verb, e.g. "gpu.p2p
    copies"): no CUDA, or fewer than two GPUs; None when it can."""
    reason = cuda_unavailable_reason()
    if reason:
        return reason
    count = device_count()
    return f"{what} between two GPUs; this host has {count}" if count < 2 else None


def peer_access_reason(reader: int, owner: int, what: str, otherwise: str) -> str | None:
    """Why `what` (a kernel on GPU `reader` touching GPU `owner`'s memory) cannot run: no peer access,
    and what the other way does (`otherwise`); None when the reader can reach it."""
    if cupy_module().cuda.runtime.deviceCanAccessPeer(reader, owner):
        return None
    return f"{what}: GPU {reader} cannot reach GPU {owner}'s memory (no peer access; {otherwise})"


def every_pair(count: int) -> list[str]:
    """Every ordered pair of `count` GPUs ("0-1", "1-0", ...); "0-1" alone under two GPUs, so the
    case says why it skipped."""
    return [f"{a}-{b}" for a in range(count) for b in range(count) if a != b] or ["0-1"]


def nvbandwidth_name(engine: str, direction: str, bidir: bool) -> str:
    """The nvbandwidth testcase that measures the same copy (docs/gpu-p2p.md)."""
    return f"device_to_device_{'bidirectional_' if bidir else ''}memcpy_{direction}_{engine}"


def pair_peak(link: dict[str, Any], gpu_a, gpu_b) -> tuple[Peak | None, str | None]:
    """One direction's peak of a pair's link (pair_link's answer), GPUs as HostFacts knows them."""
    if link.get("kind") == "nvlink":
        spec = nvlink_spec(gpu_a.name)
        if spec is None:
            return None, f"{link['links']} NVLink links, but no [[nvlink]] row in peaks.toml for '{gpu_a.name}'"
        return Peak(link["links"] * float(spec["gbps_per_link"]),
                    f"{link['links']} NVLink {spec['version']} links ({link['via']}) x {spec['gbps_per_link']} GB/s "
                    f"per direction; {spec['source']}"), None
    if link.get("kind") == "pcie":
        peaks = [gpu_link_peak(g) for g in (gpu_a, gpu_b)]
        if None in peaks:
            return None, "PCIe peer-to-peer, a GPU's link speed unknown"
        low = min(peaks, key=lambda p: p.gbps)
        return Peak(low.gbps, f"PCIe peer-to-peer, the slower GPU link: {low.source}", low.raw), None
    return None, link.get("note") or "the link between the GPUs is not known"


def _peer(segment: Segment, facts: HostFacts, links: LinksUnderLoad) -> tuple[Peak | None, str | None]:
    from kvbench.hardware.nvlink import pair_link

    gpu_a, gpu_b = facts.gpu(segment[1]), facts.gpu(segment[2])
    if gpu_a is None or gpu_b is None:
        missing = segment[1] if gpu_a is None else segment[2]
        return None, f"GPU {missing} not found ({facts.gpu_reason or 'no such index'})"
    return pair_peak(pair_link(gpu_a.bus_id, gpu_b.bus_id, gpu_a.index, gpu_b.index), gpu_a, gpu_b)


@register_segment("gpu_peer", needs="gpu")
def _gpu_peer(segment: Segment, facts: HostFacts, links: LinksUnderLoad):
    return _peer(segment, facts, links)


@register_segment("gpu_peer_both", needs="gpu")
def _gpu_peer_both(segment: Segment, facts: HostFacts, links: LinksUnderLoad):
    peak, reason = _peer(segment, facts, links)  # both directions at once: twice one
    return (Peak(2 * peak.gbps, f"2 x {peak.source}", peak.raw), None) if peak else (None, reason)


@register
class GpuP2P(Benchmark):
    id = "gpu.p2p"
    description = "GPU to GPU inside a server (NVLink / PCIe peer-to-peer): copy engine or SM kernel, verified"
    params = GPU_P2P  # kvbench/benches/declared.py

    def unavailable_reason(self) -> str | None:
        return cuda_unavailable_reason()

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        reason = two_gpus_reason("gpu.p2p copies")
        if reason:
            return reason
        a, b = parse_pair(params["pair"])
        if params["engine"] == "sm":
            for x, y in ((a, b), (b, a)) if params["bidir"] == "yes" else ((a, b),):
                reason = peer_access_reason(x, y, "engine=sm", "engine=ce copies are staged through host memory")
                if reason:
                    return reason
        return None

    def validate(self, params: dict[str, Any]) -> None:
        a, b = parse_pair(params["pair"])
        if params["engine"] == "sm" and params["size"] % 16:
            raise BadInput(f"bad size={params['size']}: engine=sm copies 16-byte vectors")
        if cuda_unavailable_reason() or device_count() < 2:
            return  # the case skips with the reason
        both = 2 if params["bidir"] == "yes" else 1
        check_gpu(a, both * params["size"], f"pair={params['pair']}")
        check_gpu(b, both * params["size"], f"pair={params['pair']}")

    def path(self, params: dict[str, Any]) -> list[Segment]:
        a, b = parse_pair(params["pair"])
        return [("gpu_peer_both" if params["bidir"] == "yes" else "gpu_peer", a, b)]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        a, b = parse_pair(params["pair"])
        first = a if params["direction"] == "write" else b
        return prepared_on_gpu(first, lambda: built_in_stack(lambda stack: _build(params, a, b, stack)))


def enable_peer_access(device: int, peer: int) -> bool:
    """Let `device` reach `peer`'s memory; False where it cannot (copies are then staged)."""
    cp = cupy_module()
    if not cp.cuda.runtime.deviceCanAccessPeer(device, peer):
        return False
    with cp.cuda.Device(device):
        try:
            cp.cuda.runtime.deviceEnablePeerAccess(peer)
        except cp.cuda.runtime.CUDARuntimeError as exc:  # enabled by an earlier case of this process
            if "AlreadyEnabled" not in str(exc):
                raise
    return True


def _build(params: dict[str, Any], a: int, b: int, stack: ExitStack) -> Prepared:
    from kvbench.hardware.nvlink import pair_link

    cp = cupy_module()
    size, engine = params["size"], params["engine"]
    write, bidir = params["direction"] == "write", params["bidir"] == "yes"
    peer = {f"{a}->{b}": enable_peer_access(a, b), f"{b}->{a}": enable_peer_access(b, a)}
    # One lane per direction: the source buffer, the destination buffer, and the GPU that runs it.
    lanes = []
    for src, dst in ((a, b), (b, a)) if bidir else ((a, b),):
        expected = np.empty(size, dtype=np.uint8)
        fill_pattern(expected, seed=40 + src)
        source = upload(expected, src)  # landed before the other GPU's stream reads it (direction=read)
        with cp.cuda.Device(dst):  # guards on both sides: a copy that writes outside its bytes fails
            whole = cp.empty(size + 2 * GUARD_BYTES, dtype=cp.uint8)
        target = whole[GUARD_BYTES:GUARD_BYTES + size]
        initiator = src if write else dst
        with cp.cuda.Device(initiator):
            stream = cp.cuda.Stream(non_blocking=True)
            kernel = kernel_module("hbm", initiator).get_function("vector_copy") if engine == "sm" else None
        lanes.append({"src": src, "dst": dst, "source": source, "target": target, "whole": whole,
                      "expected": expected, "initiator": initiator, "stream": stream, "kernel": kernel})
    for gpu in {a, b}:
        stack.callback(cp.cuda.Device(gpu).synchronize)  # nothing in flight when the buffers go
    grid, block = launch_shape(lanes[0]["initiator"])

    def run() -> None:  # enqueues only: the timer (or verify's check) waits for the copies
        for lane in lanes:
            with cp.cuda.Device(lane["initiator"]):
                if engine == "ce":
                    cp.cuda.runtime.memcpyPeerAsync(lane["target"].data.ptr, lane["dst"], lane["source"].data.ptr,
                                                    lane["src"], size, lane["stream"].ptr)
                else:
                    lane["kernel"]((grid,), (block,), (cp.uint64(lane["source"].data.ptr),
                                                       cp.uint64(lane["target"].data.ptr), cp.uint64(size // 16)),
                                   stream=lane["stream"])

    def reset() -> None:
        for lane in lanes:
            cp.cuda.Device(lane["initiator"]).synchronize()  # the last copy landed before the poison
            poison_between_copies(lane["dst"], lane["whole"])

    def check() -> None:
        for lane in lanes:
            cp.cuda.Device(lane["initiator"]).synchronize()
            with cp.cuda.Device(lane["dst"]):
                whole = lane["whole"].get()
            got = whole[GUARD_BYTES:GUARD_BYTES + size]
            if not np.array_equal(got, lane["expected"]):
                wrong = int(np.count_nonzero(got != lane["expected"]))
                raise IntegrityError(f"GPU {lane['src']} -> GPU {lane['dst']}: {wrong} of {size} bytes differ "
                                     "from the source's pattern")
            for side, guard in (("before", whole[:GUARD_BYTES]), ("after", whole[GUARD_BYTES + size:])):
                changed = int(np.count_nonzero(guard != POISON))
                if changed:
                    raise IntegrityError(f"GPU {lane['src']} -> GPU {lane['dst']}: {changed} guard bytes {side} the "
                                         f"destination are no longer the poison {POISON:#04x} (a copy wrote outside "
                                         "its bytes)")

    streams = {lane["initiator"]: lane["stream"] for lane in lanes}
    timer = AllGpusEventTimer(streams) if bidir else CudaEventTimer(lanes[0]["stream"], lanes[0]["initiator"])

    def derive(m) -> dict[str, Any]:
        samples = timer.per_op_gpu_s[-len(m.samples_s):] if bidir and m.samples_s else []
        if not samples:
            return {}
        # each direction as nvbandwidth times it: its bytes over its own stream's time (its initiating
        # GPU's events), the median over the samples; nvbandwidth's bidirectional figure is their sum
        rates = {f"{lane['src']}->{lane['dst']}":
                 size / float(np.median([s[lane["initiator"]] for s in samples])) / 1e9 for lane in lanes}
        return {"directions_gbps": {
            **rates, "sum": 2 * size / m.summary.median / 1e9, "nvbandwidth_sum": sum(rates.values()),
            "basis": "each direction: its bytes over its initiating GPU's own events, the median of the samples; "
                     "nvbandwidth_sum: their sum (nvbandwidth's bidirectional figure); sum: both directions' "
                     "bytes over the slowest GPU's window, the median (kvbench's, never above nvbandwidth_sum)"}}

    link = pair_link(pci_bus_id(a), pci_bus_id(b), a, b)
    metadata = {"pair": f"{a}-{b}", "engine": engine, "direction": params["direction"], "bidir": bidir,
                "initiators": {f"{lane['src']}->{lane['dst']}": lane["initiator"] for lane in lanes},
                "peer_access": peer, "peer_link": link, "timer": timer.name,
                "nvbandwidth_equivalent": nvbandwidth_name(engine, params["direction"], bidir),
                "bytes_counted": "sum of both directions" if bidir else "one direction"}
    if link.get("kind") == "none":
        metadata["warning"] = f"GPU {a} and GPU {b}: {link['note']}"
    return Prepared(Workload(size * len(lanes), run, reset, check, timer), metadata, derive=derive)
