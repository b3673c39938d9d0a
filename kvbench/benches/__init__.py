"""Named benchmarks (`area.verb`): each declares its parameters, availability and how it builds a case."""

from kvbench.benches.registry import all_benches, get_bench

__all__ = ["all_benches", "get_bench"]
