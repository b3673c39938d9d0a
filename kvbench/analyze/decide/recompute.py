"""Recomputing a context's KV instead of restoring it: the prefill it takes, and from how many
tokens on restoring wins.

Prefill FLOPs of N tokens (a causal forward pass):

    2 × active parameters × N                                   every weight a token meets, multiply-add
  + 2 × query heads × (qk head width + v head width) × pairs    QKᵀ and softmax·V
    pairs = Σ over layers of Σ_{i=1..N} min(i, window)          token i attends to i keys (or its window)

Seconds = FLOPs / tp / (rate × MFU): tensor parallelism splits both terms across `tp` GPUs, the
rate is the GPU's dense bf16 rate — measured by `gpu.matmul` where this host has a result, else
the datasheet figure labelled spec, or one the user gives — and MFU the fraction of it a real
prefill reaches (0.5 unless stated).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvbench.errors import BadInput, unknown_name
from kvbench.hardware.peaks import bf16_spec_tflops, spec_gpu_names
from kvbench.kv.geometry import ModelGeometry

MFU = 0.5
BREAK_EVEN_LIMIT = 1 << 24  # tokens: a break-even beyond 16 M tokens is reported as none


@dataclass(frozen=True)
class ComputeRate:
    tflops: float  # dense bf16, one GPU, TFLOP/s (1e12)
    source: str
    kind: str  # measured | spec | given


def prefill_flops(model: ModelGeometry, tokens: int, active_params: float | None = None) -> float:
    """FLOPs of a causal prefill of `tokens` (see the module's formula); `BadInput` when the model
    lacks its parameter count or attention shape."""
    active = active_params or model.active_params
    if not active:
        raise BadInput(f"{model.name}: no parameter count known; give --params (active parameters, e.g. 37e9)")
    if not model.q_heads:
        raise BadInput(f"{model.name}: attention heads unknown (its config.json lacks num_attention_heads)")
    qk, v = model.qk_head_dim or model.head_dim, model.v_head_dim or model.head_dim
    return 2.0 * active * tokens + 2.0 * model.q_heads * (qk + v) * model.attention_pairs(tokens)


def compute_rate(matmul_rows: list[dict[str, Any]], gpu_names: list[str], given_tflops: float | None,
                 spec_gpu: str | None) -> ComputeRate | None:
    """The rate recomputing runs at: one the user gives (`given_tflops`, or the datasheet's for the
    GPU `spec_gpu` names: `BadInput` for a GPU with no datasheet figure), else the best measured
    `gpu.matmul` (bf16 TFLOP/s), else the datasheet's for this host's GPU; None if none is known."""
    if given_tflops:
        return ComputeRate(given_tflops, "given with --tflops", "given")
    if spec_gpu:
        spec = bf16_spec_tflops(spec_gpu)
        if spec is None:
            raise unknown_name("GPU (no dense bf16 datasheet figure in peaks.toml)", spec_gpu, spec_gpu_names(),
                               list_all=True)
        return ComputeRate(spec[0], f"spec: {spec[1]}", "spec")
    measured = [r for r in matmul_rows if r["status"] == "ok" and (r.get("extra") or {}).get("tflops")
                and r["params"].get("dtype", "bf16") == "bf16"]
    if measured:
        best = max(measured, key=lambda r: r["extra"]["tflops"])
        return ComputeRate(float(best["extra"]["tflops"]), f"measured: gpu.matmul in run {best['run_id']} "
                           f"(bf16 {best['params'].get('m')}×{best['params'].get('k')}×{best['params'].get('n')})",
                           "measured")
    for name in gpu_names:
        spec = bf16_spec_tflops(name)
        if spec:
            return ComputeRate(spec[0], f"spec: {spec[1]}", "spec")
    return None


def recompute_seconds(model: ModelGeometry, tokens: int, rate: ComputeRate, mfu: float = MFU, tp: int = 1,
                      active_params: float | None = None) -> float:
    return prefill_flops(model, tokens, active_params) / tp / (rate.tflops * 1e12 * mfu)


def break_even(restore_s: Callable[[int], float], recompute_s: Callable[[int], float],
               limit: int = BREAK_EVEN_LIMIT) -> int | None:
    """The fewest tokens from which restoring is faster than recomputing (restoring grows linearly
    with tokens, recomputing at least as fast, so once ahead it stays ahead); None if not by `limit`."""
    def ahead(n: int) -> bool:
        return restore_s(n) < recompute_s(n)

    if ahead(1):
        return 1
    hi = 2
    while not ahead(hi):
        if hi >= limit:
            return None
        hi = min(2 * hi, limit)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ahead(mid) else (mid, hi)
    return hi
