"""Tier specs as users write them, and the sweep's knee and 90 % capacity on curves worked by hand."""

import pytest

from kvbench.analyze.decide.replay.session import knee, parse_config, parse_sweep, parse_tier, reaching
from kvbench.errors import BadInput


def test_tier_specs():
    assert parse_tier("dram=1TB").capacity_bytes == 10**12
    assert parse_tier("nvme=8TiB:vllm").policy == "vllm"
    assert parse_tier("dram=unbounded", "sglang-lfu").capacity_bytes is None
    assert [t.name for t in parse_config("hbm=20GB, dram=1TB,nvme=8TB")] == ["hbm", "dram", "nvme"]
    assert parse_sweep("dram=1TB,64GB,256GB") == ("dram", [64 * 10**9, 256 * 10**9, 10**12])
    with pytest.raises(BadInput, match="given twice"):
        parse_config("dram=1TB,dram=2TB")
    with pytest.raises(BadInput, match="NAME=SIZE"):
        parse_tier("dram")


def points(pairs):
    return [{"capacity_bytes": c, "hit_ratio": h} for c, h in pairs]


def test_the_knee_is_where_a_doubling_gains_less_than_half_the_steepest():
    # per doubling: +0.40, +0.25 (more than half), +0.05 (less): the knee is the capacity that step starts at
    curve = points([(1, 0.0), (2, 0.4), (4, 0.65), (8, 0.7), (16, 0.71)])
    assert knee(curve) == 4
    assert knee(points([(1, 0.0), (2, 0.1), (4, 0.2), (8, 0.3)])) is None  # still climbing: beyond the sweep
    assert knee(points([(1, 0.1), (2, 0.1)])) is None


def test_the_capacity_reaching_a_hit_ratio_is_interpolated_in_log_capacity():
    curve = points([(100, 0.1), (400, 0.3)])
    assert reaching(curve, 0.2) == 200  # halfway in log capacity
    assert reaching(curve, 0.5) is None
    assert reaching(curve, 0.05) == 100
