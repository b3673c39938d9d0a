"""Crosschecks: kvbench next to the peer tools, printed with ratios (benchmarks, not tests)."""
