"""torch.cuda.Event around a sample's copies: the same copies as cupy's, through torch, so the two
CUDA stacks can be compared."""

from __future__ import annotations


class TorchEventTimer:
    """torch.cuda.Event around `loops` copies on one stream (enqueued, then synchronized)."""

    name = "torch_cuda_events"
    resolution_s = 0.5e-6
    max_loops = 256

    def __init__(self, stream) -> None:
        import torch

        self.stream = stream
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def overhead_s(self, loops: int) -> float:
        return 0.0

    def time(self, op, loops: int) -> float:
        self._start.record(self.stream)
        for _ in range(loops):
            op()
        self._end.record(self.stream)
        self._end.synchronize()
        return self._start.elapsed_time(self._end) * 1e-3
