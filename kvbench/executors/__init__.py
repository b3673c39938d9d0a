"""Ways of moving bytes. Each executor registers itself by name and consumes a DescriptorList."""

from kvbench.executors.registry import all_executors, get_executor, register

__all__ = ["all_executors", "get_executor", "register"]
