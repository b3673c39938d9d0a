"""kvbench: measures every path LLM KV-cache bytes travel, in decimal GB/s (1 GB = 1e9 bytes)."""

__version__ = "0.1.0"
