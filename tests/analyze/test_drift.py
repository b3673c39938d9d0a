"""A run's inventory against the box's first run and the run before: each changed fact named once,
with the run it has held since; what merely jitters (a VM's MemTotal) is no change."""

import copy

from kvbench.analyze.accept.drift import box_host_ids, drift_of
from kvbench.store.schema import FACTS_OF_RUN

GPU = {"index": 3, "name": "NVIDIA H200", "uuid": "GPU-3", "serial": "1650000003", "bus_id": "0000:1A:00.0",
       "link": {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}}
BOX = {"gpus": [GPU], "nics": [{"name": "eth2", "rate_gbit": 400.0, "state": "up", "virtual": False},
                              {"name": "eth9", "rate_gbit": 100.0, "state": "up", "virtual": True}],
       "nvme": [{"name": "nvme0", "model": "X"}], "numa": [{"node": 0, "memory_bytes": 25_000_000_000}],
       "dram": {"total_bytes": None}}


def changed(**edits):
    facts = copy.deepcopy(BOX)
    for path, value in edits.items():
        if path == "nic_down":
            facts["nics"][0].update(state="down", rate_gbit=None)
        elif path == "dram":
            facts["numa"][0]["memory_bytes"] = value
        elif path == "serial":
            facts["gpus"][0]["serial"] = value
        elif path == "no_gpu":
            facts["gpus"] = []
    return facts


def history(*facts):
    return [(i + 1, f, FACTS_OF_RUN) for i, f in enumerate(facts)]


def test_nothing_changed_is_no_drift_and_a_vm_s_jittering_memtotal_is_none_either():
    drift = drift_of(history(BOX, changed(dram=25_300_000_000)), 2)
    assert (drift.first_run, drift.previous_run, drift.since_first, drift.since_previous) == (1, 1, (), ())


def test_each_changed_fact_is_named_with_the_run_it_has_held_since():
    runs = history(BOX, BOX, changed(nic_down=1), changed(nic_down=1, dram=11_000_000_000, serial="999"))
    drift = drift_of(runs, 4)
    texts = [c.text for c in drift.since_first]
    assert "NIC eth2 down (was up at 400 Gb/s) since run 3" in texts
    assert "DRAM 25 GB → 11 GB since run 4" in texts
    assert "GPU 3 (0000:1A:00.0) serial 1650000003 → 999 since run 4" in texts
    assert not any("eth9" in t for t in texts)  # an SR-IOV function comes and goes
    assert {c.key for c in drift.since_first} == {"nics", "dram_gb", "gpu_serials"}
    assert [c.fact for c in drift.since_previous] == ["dram", "gpu 0000:1A:00.0 serial"]  # the NIC was down in run 3


def test_a_gpu_taken_out_is_named_once_and_putting_it_back_clears_the_drift():
    drift = drift_of(history(BOX, changed(no_gpu=1)), 2)
    assert [c.text for c in drift.since_first] == ["GPU 3 (0000:1A:00.0) missing (was NVIDIA H200) since run 2"]
    back = drift_of(history(BOX, changed(no_gpu=1), BOX), 3)
    assert back.since_first == () and [c.text for c in back.since_previous] == [
        "GPU 3 (0000:1A:00.0) new (NVIDIA H200) since run 3"]


def test_a_box_s_first_run_and_runs_without_facts_are_no_drift():
    assert drift_of(history(BOX), 1).first_run is None
    assert drift_of([(1, None, None), (2, BOX, FACTS_OF_RUN)], 2).first_run is None


def test_the_box_is_its_id_its_merged_ids_and_the_hosts_of_the_same_chassis():
    hosts = {"a": {"facts": {"system_id": "s", "cpu_model": "c", "sockets": 2}},
             "b": {"facts": {"system_id": "s", "cpu_model": "c", "sockets": 2}},  # the same box, a GPU less
             "c": {"facts": {"system_id": "t", "cpu_model": "c", "sockets": 2}}}
    assert box_host_ids(hosts, {"old": "a"}, "a") == ["a", "b", "old"]
    assert box_host_ids({"x": {"facts": {}}}, {}, "x") == ["x"]
