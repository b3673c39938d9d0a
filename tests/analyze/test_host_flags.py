"""`kvbench info`'s flags: far-NUMA placement from this process's CPUs, and what the host's stored
GPU results recorded (links under load, pinned buffers on a far node, replays during a run)."""

from kvbench.analyze.accept.host_flags import (
    affinity_flags,
    flags_from_store,
    link_flags,
    numa_flags,
    replay_flags,
)
from kvbench.hardware.sysfs import parse_cpulist
from kvbench.report.info import info_document
from kvbench.store import open_store
from tests.hardware.test_sysfs import _facts as h200_facts

NODE0 = parse_cpulist("0-55,112-167")  # the recorded box: GPU 0 on node 0, GPU 1 on node 1


def pcie(run_id, gpu, memory="pinned", link=None, **extra):
    return {"run_id": run_id, "bench": "pcie.h2d", "status": "ok", "params": {"gpu": gpu, "memory": memory},
            "extra": {**({"link": link} if link else {}), **extra}}


FULL = {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "under_load": True}
X8 = {**FULL, "width": 8}


def test_a_process_confined_to_node_0_is_told_gpu_1_is_far():
    (flag,) = affinity_flags(h200_facts(), NODE0)
    assert flag.startswith("GPU 1 (0000:9a:00.0) is attached to NUMA node 1") and "--cpunodebind=1" in flag
    assert affinity_flags(h200_facts(), NODE0 | parse_cpulist("56-111,168-223")) == []


def test_replays_that_rose_during_a_run():
    run = {"id": 4, "system_state": {"pcie_replays": {"0000:1b:00.0": 3, "0000:9a:00.0": 0},
                                     "at_end": {"pcie_replays": {"0000:1b:00.0": 3, "0000:9a:00.0": 12}}}}
    (flag,) = replay_flags(run)
    assert "0000:9a:00.0" in flag and "rose by 12 during run 4" in flag
    assert replay_flags({"id": 5, "system_state": {}}) == []


def test_the_newest_reading_under_load_decides_a_links_flag():
    idle = {**FULL, "gen": 1, "under_load": False}
    results = [pcie(1, 0, link=X8), pcie(2, 0, link=FULL),  # fixed since: no flag
               pcie(1, 1, link=FULL), pcie(2, 1, link=X8), pcie(3, 1, link=idle)]  # idle reading ignored
    (flag,) = link_flags(results)
    assert flag.startswith("GPU 1 link under load is Gen5 x8 of Gen5 x16") and "run 2" in flag


def test_a_gpu_is_told_by_its_bus_id_not_cuda_s_number():
    # run 1 saw every GPU; run 2 ran under CUDA_VISIBLE_DEVICES=1, where that GPU was CUDA's 0
    results = [pcie(1, 0, link=FULL, gpu_bus_id="0000:1b:00.0"), pcie(1, 1, link=X8, gpu_bus_id="0000:9a:00.0"),
               pcie(2, 0, link=FULL, gpu_bus_id="0000:9a:00.0")]
    assert link_flags(results) == []  # 9a's newest reading is at full width; 1b's was never bad
    (flag,) = link_flags([*results, pcie(3, 0, link=X8, gpu_bus_id="0000:1b:00.0")])
    assert flag.startswith("GPU 0 (0000:1b:00.0) link under load is Gen5 x8")


def test_pinned_copies_on_a_far_node_are_flagged_but_a_numa_sweep_is_not():
    results = [pcie(1, 0, gpu_numa_node=0, host_numa_node=1, far_numa=True),
               pcie(1, 1, memory="numa:0", gpu_numa_node=1, host_numa_node=0, far_numa=True)]
    (flag,) = numa_flags(results)
    assert flag.startswith("GPU 0's pinned host memory was on NUMA node 1, the GPU on node 0")


def test_flags_from_a_real_store_reach_the_info_document(db_url):
    store = open_store(db_url)
    host = "h" * 64
    store.ensure_host(host, "gpu-box", {})
    store.ensure_context("c" * 64, {})
    run_id = store.begin_run(host_id=host, context_id="c" * 64, suite="gpu-smoke", suite_hash=None,
                             kvbench_version="0.1", git_sha=None, git_dirty=None, tags={},
                             system_state={"pcie_replays": {"0000:1b:00.0": 0}})
    row = {"bench": "pcie.h2d", "params": {"gpu": 0, "memory": "pinned"}, "case_hash": "c0", "verified": True,
           "status": "ok", "warnings": [], "extra": {"link": X8}}
    store.add_result(run_id, row, [0.01] * 5)
    store.finish_run(run_id, "complete", end_state={"pcie_replays": {"0000:1b:00.0": 2}})
    assert store.run(run_id)["system_state"]["pcie_replays"] == {"0000:1b:00.0": 0}  # the start state is kept
    stored = flags_from_store(store, host)
    assert len(stored) == 2 and "rose by 2" in stored[0] and "Gen5 x8" in stored[1]
    assert flags_from_store(store, "o" * 64) == []  # another host's results are not this one's
    doc = info_document(h200_facts(), NODE0, stored)
    assert doc["flags"][-2:] == stored and any("GPU 1 (0000:9a:00.0)" in f for f in doc["flags"])
