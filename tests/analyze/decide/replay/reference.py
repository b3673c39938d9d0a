"""A plain reference of the tiered prefix cache (kvbench/analyze/decide/replay/policies.py says what
it mirrors), written for reading, not speed: the numba kernel is checked against it on random traces."""

from __future__ import annotations

import itertools

LFU = "sglang-lfu"


class ReferenceCache:
    def __init__(self, capacities: list[int], policies: list[str]):
        self.caps, self.policies = capacities, policies
        self.tiers: list[dict[int, tuple[int, int]]] = [{} for _ in capacities]  # block -> (freq key, seq)
        self.freq: dict[int, int] = {}
        self.seq = itertools.count()
        self.dropped = 0

    def where(self, block: int) -> int:
        return next((t for t, tier in enumerate(self.tiers) if block in tier), -1)

    def _push(self, t: int, block: int) -> None:
        key = self.freq[block] if self.policies[t] == LFU else 0
        self.tiers[t][block] = (key, next(self.seq))

    def _victim(self, t: int) -> int:
        return min(self.tiers[t], key=lambda b: self.tiers[t][b])

    def order(self, t: int) -> list[int]:
        return sorted(self.tiers[t], key=lambda b: self.tiers[t][b])

    def _insert(self, block: int, written: list[int]) -> None:
        carry, t = block, 0
        while True:
            if t >= len(self.tiers):
                self.freq[carry] = 0
                self.dropped += 1
                return
            if t > 0:
                written[t] += 1
            if self.caps[t] == 0:
                t += 1
                continue
            victim = None
            if len(self.tiers[t]) >= self.caps[t]:
                victim = self._victim(t)
                del self.tiers[t][victim]
            self._push(t, carry)
            if victim is None:
                return
            carry, t = victim, t + 1

    def request(self, blocks: list[int], input_tokens: int, block_tokens: int):
        """(hit blocks per tier, hit tokens per tier, blocks written per tier) of one request."""
        n = len(self.tiers)
        hits, tokens, written = [0] * n, [0] * n, [0] * n
        for i, b in enumerate(blocks):
            t = self.where(b)
            if t < 0:
                break
            hits[t] += 1
            tokens[t] += max(0, min(block_tokens, input_tokens - block_tokens * i))
        order = reversed(blocks) if self.policies[0] in ("vllm", LFU) else blocks
        for b in order:
            self.freq[b] = self.freq.get(b, 0) + 1
            t = self.where(b)
            if t == 0:
                del self.tiers[0][b]
                self._push(0, b)
                continue
            if t > 0:
                del self.tiers[t][b]
            else:
                written[0] += 1
            self._insert(b, written)
        return hits, tokens, written
