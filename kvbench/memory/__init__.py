"""Memory kinds: where a benchmark's source and destination bytes live."""

from kvbench.memory.kinds import allocate, memory_kinds, parse_kind
from kvbench.memory.region import Region

__all__ = ["Region", "allocate", "memory_kinds", "parse_kind"]
