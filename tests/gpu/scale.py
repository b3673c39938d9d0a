"""The GPU tests' sizes on a real GPU, and on the CUDA stand-in (tests/gpu_standin), where numpy is
the GPU: the same paths at small sizes, and no assertion about a rate (the stand-in has no timing
truth: its events time numpy)."""

from __future__ import annotations

from pathlib import Path


def _on_standin() -> bool:
    try:
        import cupy
    except ImportError:
        return False
    return bool(getattr(cupy, "STANDIN", False))


STANDIN = _on_standin()
TINY_MODEL = str(Path(__file__).resolve().parent.parent / "gpu_standin" / "data" / "tiny-model.json")


def sized(real, standin):
    """`real` on a GPU, `standin` on the stand-in."""
    return standin if STANDIN else real


def rates_are_real() -> bool:
    """Whether a rate or a time may be asserted (never on the stand-in)."""
    return not STANDIN
