"""`gpu.matmul`: the dense bf16 (or fp16) matrix-multiply rate of one GPU, through torch (cuBLAS) —
what recomputing a prefill runs at, the other side of `plan`'s restore-or-recompute answer.

C = A·B with A m×k and B k×n, random normal inputs (seeded). Every check recomputes three blocks
of C's rows in fp32 from the same inputs (the first, a random one, the last) and bounds the
relative error; the reset writes the poison
byte into all of C, so a product that did not run fails. Rate: `tflops` = 2·m·n·k / median
seconds; `gbps` counts the minimum traffic (A, B and C once), for the record only — a product is
bound by compute, so its peak is the datasheet's TFLOP/s (`spec_tflops`), not a bandwidth.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kvbench.benches.base import Benchmark, Prepared, prepared_on_gpu
from kvbench.benches.declared import GPU_MATMUL
from kvbench.benches.pcie.torch_backend import torch_unavailable_reason
from kvbench.benches.registry import register
from kvbench.errors import BadInput, IntegrityError
from kvbench.hardware.path import Segment, register_segment
from kvbench.memory.cuda_memory import check_gpu
from kvbench.memory.pattern import POISON
from kvbench.metadata import TFLOPS

DTYPES = {"bf16": 2, "fp16": 2}
CHECK_ROWS = 64  # rows of each block of C recomputed in fp32 by every check
MAX_REL_ERROR = 2e-2  # of the slice's largest reference value: bf16 keeps 8 bits, accumulation is fp32


@register_segment("gpu_compute", needs="gpu")
def _gpu_compute(segment, facts, links):
    return None, "a matrix product is bound by compute, not bandwidth: its rate is tflops, beside spec_tflops"


def check_blocks(m: int, rows: int, picker: np.random.Generator) -> list[int]:
    """First rows of the blocks of `rows` rows a check recomputes: the first block, one drawn at
    random (another each check) and the last, so a product that stopped early or skipped a stretch
    of rows is caught wherever it went wrong."""
    last = m - rows
    return sorted({0, int(picker.integers(0, last + 1)), last})


def flops(m: int, n: int, k: int) -> int:
    """Floating-point operations of one m×k by k×n product: a multiply and an add per term."""
    return 2 * m * n * k


@register
class GpuMatmul(Benchmark):
    id = "gpu.matmul"
    description = "dense bf16/fp16 matrix multiply on one GPU (torch, cuBLAS): TFLOP/s, row blocks checked in fp32"
    params = GPU_MATMUL  # kvbench/benches/declared.py

    def unavailable_reason(self) -> str | None:
        reason = torch_unavailable_reason()
        return reason.replace("backend=torch: ", "gpu.matmul runs through torch: ") if reason else None

    def validate(self, params: dict[str, Any]) -> None:
        m, n, k = params["m"], params["n"], params["k"]
        if max(m, n, k) > 1 << 17:
            raise BadInput(f"bad m×n×k = {m}×{n}×{k}: each at most 131072")
        check_gpu(params["gpu"], (m * k + k * n + m * n) * DTYPES[params["dtype"]] + k * n * 4 + CHECK_ROWS * n * 8)

    def path(self, params: dict[str, Any]) -> list[Segment]:
        return [("gpu_compute", params["gpu"])]

    def prepare(self, params: dict[str, Any]) -> Prepared:
        return prepared_on_gpu(params["gpu"], lambda: _build(params))


def _build(params: dict[str, Any]) -> Prepared:
    import torch

    from kvbench.hardware.peaks import bf16_spec_tflops
    from kvbench.measure.engine import Workload
    from kvbench.measure.torch_timer import TorchEventTimer

    m, n, k, gpu = params["m"], params["n"], params["k"], params["gpu"]
    device = torch.device("cuda", gpu)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[params["dtype"]]
    generator = torch.Generator(device=device).manual_seed(7)
    a = torch.randn(m, k, device=device, dtype=dtype, generator=generator)
    b = torch.randn(k, n, device=device, dtype=dtype, generator=generator)
    c = torch.empty(m, n, device=device, dtype=dtype)
    rows = min(CHECK_ROWS, m)
    picker = np.random.default_rng(11)
    stream = torch.cuda.Stream(device=device)
    torch.cuda.synchronize(device)
    checked: dict[str, float] = {}

    def run() -> None:
        with torch.cuda.stream(stream):
            torch.matmul(a, b, out=c)

    def reset() -> None:  # on torch's current stream, which `stream` does not wait for: fenced both sides
        torch.cuda.synchronize(device)
        c.view(torch.uint8).fill_(POISON)
        torch.cuda.synchronize(device)

    def check() -> None:
        torch.cuda.synchronize(device)
        errors, b32 = [], b.float()  # B in fp32 for this check only: k x n x 4 bytes, freed after it
        for first in check_blocks(m, rows, picker):
            reference = a[first:first + rows].float() @ b32  # recomputed in fp32 from the same inputs
            got = c[first:first + rows].float()
            scale = reference.abs().max().clamp_min(1e-30)
            error = float(((got - reference).abs().max() / scale).item())
            if not error <= MAX_REL_ERROR:  # NaN (the poison read as numbers, or a broken product) fails too
                raise IntegrityError(f"C's rows {first}..{first + rows - 1} differ from their fp32 reference by "
                                     f"{error:.3g} of its largest value (allowed {MAX_REL_ERROR})")
            errors.append(error)
        checked["max_rel_error"] = max(errors)

    name = torch.cuda.get_device_name(device)
    spec = bf16_spec_tflops(name)
    work = flops(m, n, k)

    def derive(measurement) -> dict[str, Any]:
        return {TFLOPS: work / measurement.summary.median / 1e12, **checked}

    metadata: dict[str, Any] = {"backend": "torch", "torch": torch.__version__, "gpu_name": name,
                                "matmul_flops": work, "spec_tflops": spec[0] if spec else None,
                                "spec_tflops_source": spec[1] if spec else "no datasheet figure for this GPU"}
    traffic = (m * k + k * n + m * n) * DTYPES[params["dtype"]]
    return Prepared(Workload(traffic, run, reset, check, TorchEventTimer(stream)), metadata,
                    lambda: torch.cuda.synchronize(device), derive)
