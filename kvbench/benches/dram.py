"""`dram.copy`: host memory to host memory, the L2 tier of the seeds measured on any server.

The copy primitive matters more than it should (glibc memcpy, numpy copyto and blocked
memcpy differ by tens of percent on one box), so `primitive=auto` tries each on the case's
own buffers and keeps the fastest, recording which.

`vs=KIND` (pageable | numa:N) times the same copy between a source and a destination of that kind
interleaved with the case (A B, B A, ...: same size, fragments, threads and primitive, the same
warm-up): the case's rate over that placement's, per pair of samples (metadata `paired`, against
`{"src": KIND, "dst": KIND}`). Near vs far NUMA is one case: `src=numa:1 dst=numa:1 vs=numa:0`
with the copy's CPUs on node 0 (docs/measurement.md). A `vs` node this host lacks skips the case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import numpy as np

from kvbench.benches.base import Benchmark, Prepared
from kvbench.benches.declared import DRAM_COPY
from kvbench.benches.registry import register
from kvbench.errors import BadInput, IntegrityError
from kvbench.executors.host import PIECE_BYTES, HostExecutor, NumpyExecutor, max_threads
from kvbench.hardware.path import Segment
from kvbench.kv.descriptors import DescriptorList
from kvbench.measure.engine import Pair, Workload
from kvbench.memory.guard import GuardedRegion
from kvbench.memory.host import check_fits
from kvbench.memory.kinds import allocate, kind_unavailable_reason, parse_kind
from kvbench.memory.pattern import fill_pattern, first_difference, first_poison_byte, poison
from kvbench.memory.region import Region
from kvbench.units import format_size

MIN_FRAGMENT = 64  # bytes: a cache line
# Host memory each fragment costs beyond the two buffers (the primitives' per-fragment tables), measured:
# 16 MiB in 3-byte fragments (5.6 M of them) peaked at 2.97 GB RSS, ~530 B each (hostile trial H12: 256 MiB in
# 3-byte fragments grew to 16.9 GB until the kernel's OOM killer ended it). Counted in the memory check.
BYTES_PER_FRAGMENT = 640

# name → (executor, description)
PRIMITIVES = {
    "memcpy": (HostExecutor(0), "libc memcpy per descriptor (numba loop)"),
    "memcpy-256KiB": (HostExecutor(PIECE_BYTES), "libc memcpy in 256 KiB pieces (numba loop)"),
    "numpy": (NumpyExecutor(), "numpy copyto per descriptor"),
}


def pick_fastest(candidates: dict[str, Callable[[], None]], trials: int = 3) -> tuple[str, dict[str, float]]:
    """Time each candidate (one warm-up, then the best of `trials`) and return the fastest's name."""
    seconds: dict[str, float] = {}
    for name, run in candidates.items():
        run()
        best = float("inf")
        for _ in range(trials):
            start = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - start)
        seconds[name] = best
    return min(seconds, key=seconds.__getitem__), seconds


def host_copy_workload(src: Region, dst: GuardedRegion, run: Callable[[], None], expected: np.ndarray) -> Workload:
    """A workload whose check compares the whole destination with `expected` and its guards with the poison.

    `expected` (the source) must not hold the poison: equal bytes prove nothing when the source was
    never filled, or a copy ran backwards over it.
    """
    def check() -> None:
        got = dst.region.host_array
        if (bad := first_difference(got, expected)) is not None:
            raise IntegrityError(f"destination differs from the source first at byte {bad}")
        if (bad := first_poison_byte(expected)) is not None:
            raise IntegrityError(f"the source holds the poison at byte {bad}: it was "
                                 "never filled, or a copy ran backwards over it")
        dst.check()

    return Workload(bytes_per_op=src.size_bytes, run=run, reset=dst.poison, check=check)


@register
class DramCopy(Benchmark):
    id = "dram.copy"
    description = "host DRAM to host DRAM copy (bytes counted once)"
    params = DRAM_COPY  # kvbench/benches/declared.py

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        if params["threads"] > max_threads():
            return f"threads={params['threads']} but this host runs at most {max_threads()} copy threads"
        for key in ("src", "dst"):
            if not params[key].startswith(("pageable", "numa")):
                return (f"{key}={params[key]}: dram.copy copies pageable or NUMA-placed host memory (page-locked "
                        "and device memory are measured by pcie.* and hbm.*)")
        if params.get("vs", "none") != "none":
            reason = kind_unavailable_reason(parse_kind(params["vs"]))
            if reason:  # the far side of a near/far pair on a host with one node
                return f"vs={params['vs']}: {reason}, so the other side of the ratio cannot be placed here"
        return None

    def validate(self, params: dict[str, Any]) -> None:
        size, fragment = params["size"], params["fragment"]
        if fragment > size:
            raise BadInput(f"bad fragment={format_size(fragment)}: larger than size={format_size(size)}")
        if 0 < fragment < MIN_FRAGMENT:
            raise BadInput(f"bad fragment={format_size(fragment)}: under {MIN_FRAGMENT} B (a cache line) a copy measures "
                           f"its per-call overhead, not memory, and size={format_size(size)} would make "
                           f"{-(-size // fragment):,} fragments; give {MIN_FRAGMENT}B or more")
        for key in ("src", "dst"):
            kind = parse_kind(params[key])
            if kind.name == "numa":
                reason = kind_unavailable_reason(kind)
                if reason:
                    raise BadInput(f"bad {key}={params[key]}: {reason}")
        vs = params.get("vs", "none")
        if vs != "none":
            if parse_kind(vs).name not in ("pageable", "numa"):
                raise BadInput(f"bad vs={vs}: give none, pageable or numa:N (the placement to pair with)")
            if params["src"] == params["dst"] == str(parse_kind(vs)):
                raise BadInput(f"bad vs={vs}: it is the case's own placement (src and dst), a ratio of 1 x "
                               "whatever was measured; pair with another placement")
        sides = 2 if vs != "none" else 1  # the case and its placed twin
        tables = sides * (-(-size // fragment) if fragment else 1) * BYTES_PER_FRAGMENT
        check_fits(sides * 2 * size + tables, "source + destination" + (" + fragment tables" if fragment else ""))

    def path(self, params: dict[str, Any]) -> list[Segment]:
        return [("dram_copy",)]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        size = params["size"]
        check_fits(2 * size, "pageable source + destination")
        with ExitStack() as stack:
            src = stack.enter_context(allocate(params["src"], size))
            guarded = stack.enter_context(GuardedRegion(params["dst"], size))  # bytes written past its ends are seen
            dst = guarded.region
            poison(src.host_array)  # then the pattern: a source byte the fill missed keeps the poison the check refuses
            fill_pattern(src.host_array)
            fragment = params["fragment"]
            descriptors = DescriptorList.fragments(size, fragment) if fragment else DescriptorList.contiguous(size)
            threads = params["threads"]
            names = list(PRIMITIVES) if params["primitive"] == "auto" else [params["primitive"]]
            bound = {name: PRIMITIVES[name][0].bind(src, dst, descriptors, threads) for name in names}
            trial: dict[str, float] = {}
            chosen = names[0]
            if len(bound) > 1:
                chosen, trial = pick_fastest(bound)
            metadata = {
                "primitive": chosen,
                "executor": PRIMITIVES[chosen][0].name,
                "primitive_trial_gbps": {k: round(size / v / 1e9, 2) for k, v in trial.items()},
                "fragments": len(descriptors),
                "buffers": {"src": src.describe(), "dst": dst.describe()},
            }
            workload = host_copy_workload(src, guarded, bound[chosen], src.host_array)
            if params.get("vs", "none") != "none":
                workload.pair = _placed_twin(str(parse_kind(params["vs"])), descriptors, PRIMITIVES[chosen][0],
                                             threads, stack, metadata["buffers"])
            cleanup = stack.pop_all()
        return Prepared(workload, metadata, cleanup.close)


def _placed_twin(kind: str, descriptors: DescriptorList, executor, threads: int, stack: ExitStack,
                 buffers: dict[str, Any]) -> Pair:
    """The same copy (descriptors, primitive, threads) between a source and a destination of `kind`,
    checked as the case is: the other side of `vs=`, its buffers recorded beside the case's."""
    size = descriptors.total_bytes
    src = stack.enter_context(allocate(kind, size))
    guarded = stack.enter_context(GuardedRegion(kind, size))
    poison(src.host_array)
    fill_pattern(src.host_array)
    buffers.update(vs_src=src.describe(), vs_dst=guarded.region.describe())
    run = executor.bind(src, guarded.region, descriptors, threads)
    return Pair({"src": kind, "dst": kind}, host_copy_workload(src, guarded, run, src.host_array))
