"""Near/far NUMA ratios from a numa:N × GPU sweep, as the report prints them."""

import pytest

from kvbench.analyze.accept.numa_ratio import near_far


def h2d(gpu, node, gbps, gpu_node=None, size=256 << 20, bench="pcie.h2d", status="ok"):
    metadata = {"gpu_numa_node": gpu_node} if gpu_node is not None else {}
    return {"bench": bench, "status": status, "params": {"gpu": gpu, "memory": f"numa:{node}", "size": size},
            "gbps": {"median": gbps}, "metadata": metadata}


def test_each_gpu_s_far_nodes_against_its_near_one():
    results = [h2d(0, 0, 55.0, gpu_node=0), h2d(0, 1, 30.0, gpu_node=0),
               h2d(1, 0, 28.0, gpu_node=1), h2d(1, 1, 56.0, gpu_node=1)]
    rows = near_far(results)
    assert [(r.gpu, r.near_node, r.far_node) for r in rows] == [(0, 0, 1), (1, 1, 0)]
    assert rows[0].ratio == pytest.approx(30 / 55) and rows[1].ratio == pytest.approx(0.5)
    assert {r.near_basis for r in rows} == {"NVML"}


def test_without_the_gpu_s_node_the_fastest_is_taken_as_near_and_said_so():
    (row,) = near_far([h2d(0, 0, 20.0), h2d(0, 1, 50.0)])
    assert (row.near_node, row.far_node, row.near_basis) == (1, 0, "fastest")
    assert row.ratio == pytest.approx(0.4)


def test_repeats_count_by_median_and_other_results_are_ignored():
    results = [h2d(0, 0, 50.0, gpu_node=0), h2d(0, 0, 54.0, gpu_node=0), h2d(0, 0, 10.0, gpu_node=0),
               h2d(0, 1, 25.0, gpu_node=0), h2d(0, 1, 1.0, status="failed"), h2d(0, 1, 99.0, bench="pcie.d2h"),
               {"bench": "pcie.h2d", "status": "ok", "params": {"gpu": 0, "memory": "pinned", "size": 1},
                "gbps": {"median": 60.0}}]
    (row,) = near_far(results)
    assert row.near_gbps == 50.0 and row.far_gbps == 25.0
    assert near_far([h2d(0, 0, 50.0, gpu_node=0)]) == []  # one node: nothing to compare


def paired_far(gpu, node, gbps, near_node, ratio, near_gbps):
    r = h2d(gpu, node, gbps, gpu_node=near_node)
    r["metadata"]["paired"] = {"against": {"memory": f"numa:{near_node}"}, "median": ratio, "p10": ratio - 0.05,
                               "p90": ratio + 0.05, "against_gbps": {"median": near_gbps}}
    return r


def test_a_far_case_s_paired_ratio_is_the_ratio_not_two_medians_taken_apart():
    # the near case ran at a quiet moment (55), the far one on a busy box: divided, 0.36; paired, 0.52
    (row,) = near_far([h2d(0, 0, 55.0, gpu_node=0), paired_far(0, 1, 20.0, 0, 0.52, 38.0)])
    assert row.paired and row.ratio == pytest.approx(0.52)
    assert (row.near_node, row.far_node, row.near_basis) == (0, 1, "NVML")


def test_the_near_twin_stands_in_for_a_near_case_the_sweep_lacks():
    (row,) = near_far([paired_far(0, 1, 20.0, 0, 0.5, 40.0)])
    assert row.near_gbps == 40.0 and row.paired and row.ratio == pytest.approx(0.5)


def test_a_pair_against_another_node_than_the_gpu_s_is_not_taken_as_near_far():
    r = paired_far(0, 1, 20.0, 0, 0.5, 40.0)
    r["metadata"]["paired"]["against"] = {"memory": "pinned"}
    assert near_far([h2d(0, 0, 50.0, gpu_node=0), r])[0].paired is False
