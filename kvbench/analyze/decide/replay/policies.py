"""The eviction policies a tier can run, each named after the engine whose cache it mirrors.

- `lru`: textbook least-recently-used; a request's blocks are touched first block first, so its
  prefix head is the first of them to go (LMCache's default `LRU` local-CPU backend, Mooncake
  Store's LRU eviction).
- `vllm`: vLLM's prefix-caching LRU. A freed request's blocks enter the free queue tail-first
  (vLLM's `KVCacheManager.free` reverses them), so among blocks last used together the tail of the
  prefix is evicted first and the shared head survives.
- `sglang-lfu`: SGLang's `--radix-eviction-policy lfu`: the block hit the fewest times goes first,
  ties broken by least recent use; the radix tree evicts leaves first, so a request's blocks are
  touched tail first, as with `vllm`. A block's count is kept while some tier holds it and starts
  again at 1 once it has left every tier.

Tiers are exclusive (a block sits in one tier at a time, as LMCache's and SGLang HiCache's
write-back modes end up): an evicted block is demoted to the next tier (a write-back on that tier's
link), a block leaving the last tier is dropped, a hit in a lower tier is promoted to the first tier
(it is loaded into the GPU to be used), and a request's new blocks are inserted into the first tier
after it is served. The order the request's blocks are touched in is the first tier's policy's.
"""

from __future__ import annotations

from kvbench.errors import unknown_name

LRU, VLLM, SGLANG_LFU = 0, 1, 2
POLICIES = {"lru": LRU, "vllm": VLLM, "sglang-lfu": SGLANG_LFU}
MIRRORS = {
    "lru": "LRU, head first (LMCache's LRU CPU backend, Mooncake Store)",
    "vllm": "vLLM prefix caching: LRU, a prefix's tail evicted first",
    "sglang-lfu": "SGLang radix cache --radix-eviction-policy lfu: fewest hits first, then LRU",
}
DEFAULT = "lru"


def policy_id(name: str) -> int:
    if name not in POLICIES:
        raise unknown_name("eviction policy", name, POLICIES, list_all=True)
    return POLICIES[name]


def tail_first(policy: int) -> bool:
    """Whether a request's blocks are touched last block first (the engines that evict tails first)."""
    return policy in (VLLM, SGLANG_LFU)
