"""Pageable as a fraction of pinned, case by case, as the report prints it."""

import pytest

from kvbench.analyze.accept.pinned_ratio import pageable_vs_pinned


def copy(memory, gbps, bench="pcie.h2d", size=256 << 20, status="ok", **params):
    return {"bench": bench, "status": status, "gbps": {"median": gbps},
            "params": {"memory": memory, "size": size, "gpu": 0, "engine": "ce", "backend": "cupy", "gpus": "one",
                       **params}}


def test_pageable_over_pinned_per_direction_and_size():
    results = [copy("pinned", 55.0), copy("pageable", 22.0), copy("pinned", 20.0, size=1 << 20),
               copy("pageable", 5.0, size=1 << 20), copy("pinned", 56.0, bench="pcie.d2h"),
               copy("pageable", 28.0, bench="pcie.d2h")]
    rows = pageable_vs_pinned(results)
    assert [(r.bench, r.size_bytes) for r in rows] == [("pcie.d2h", 256 << 20), ("pcie.h2d", 1 << 20),
                                                        ("pcie.h2d", 256 << 20)]
    assert [r.ratio for r in rows] == pytest.approx([0.5, 0.25, 0.4])


def test_only_copy_engine_cases_run_both_ways_are_paired():
    results = [copy("pinned", 55.0), copy("pageable", 22.0, status="failed"), copy("numa:0", 50.0),
               copy("pinned", 50.0, engine="sm"), copy("pinned", 40.0, backend="torch"),
               copy("pageable", 20.0, backend="torch")]
    (row,) = pageable_vs_pinned(results)
    assert row.backend == "torch" and row.ratio == pytest.approx(0.5)


def test_the_ratio_a_pageable_case_measured_against_its_pinned_twin_is_the_one_shown():
    """Divided, two medians timed apart say 0.25 (the pinned case ran in a quiet moment); the pageable
    case's own pairs say 0.45. A pageable case alone, paired, still has its row."""
    paired = {"against": {"memory": "pinned"}, "median": 0.45, "p10": 0.43, "p90": 0.47, "pairs": 9,
              "against_gbps": {"median": 48.0}}
    results = [copy("pinned", 80.0), {**copy("pageable", 20.0), "metadata": {"paired": paired}},
               {**copy("pageable", 21.0, bench="pcie.d2h"), "metadata": {"paired": paired}}]
    d2h, h2d = pageable_vs_pinned(results)
    assert h2d.paired and h2d.ratio == 0.45 and h2d.pinned_gbps == 80.0
    assert d2h.paired and d2h.ratio == 0.45 and d2h.pinned_gbps == 48.0  # the twin's rate where no pinned case ran
    assert not pageable_vs_pinned([copy("pinned", 80.0), copy("pageable", 20.0)])[0].paired
