"""GPU health on the hosts the device lends (issue 55): one GPU without NVLink can PASS, links that are
active but unread stay INCOMPLETE, what a VM does not give is named the VM's limit where the profile says
so (else INCOMPLETE, or FAIL for persistence off), a thermal hold inside the window fails even when it
cleared before the end, and a case whose GPU reading failed is never passed over. The GPU records are
written here as kvbench/hardware/nvml_watch.py records them; nothing is measured."""

import pytest

from kvbench.analyze.accept.health import judge_health, load_health
from kvbench.analyze.accept.pipeline import acceptance_verdicts
from kvbench.analyze.accept.profile import load_profile, shipped_profiles
from kvbench.analyze.accept.verdict import accept_overall, expected_here

BUS = "00000000:17:00.0"
H100 = "NVIDIA H100 80GB HBM3"
# a clean one-GPU VM as the watch records it: counters read and zero, no active NVLink, XID events refused,
# persistence mode off (what the VM's lender sets)
VM_GPU = {"throttle_reasons": ["gpu_idle"], "thermal_held_fraction": 0.0, "power_held_fraction": 0.0,
          "ecc_uncorrected_delta": 0, "row_remap_pending": False, "row_remap_failed": False, "persistence": False,
          "xid_events": False, "nvlink_active": 0}
FACTS = {"gpus": [{"index": 0, "name": H100, "bus_id": BUS, "link": {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}}]}


def doc(*gpus, failed=()):
    """A run of one case per GPU record given (and `failed`: readings that failed, in the watch's words)."""
    results = [{"bench": "pcie.h2d", "params": {"size": 1 << 20}, "case": f"c{i}", "status": "ok",
                "metadata": {"contention": {"gpus": {BUS: gpu}}}} for i, gpu in enumerate(gpus)]
    if failed:
        results.append({"bench": "pcie.h2d", "params": {"size": 2 << 20}, "case": "cx", "status": "ok",
                        "metadata": {"contention": {"reading_failed": list(failed)}}})
    return {"run": {"status": "complete"}, "host": {"facts": FACTS}, "results": results}


def verdicts(run, limits=(), name="VM"):
    return {v.rule: v for v in judge_health(run, load_health(), limits, name)}


def h100_vm():
    return load_profile(shipped_profiles()["h100-sxm-1gpu-vm"])


def test_one_gpu_without_nvlink_can_pass_under_the_lent_vm_s_profile():
    profile = h100_vm()
    found = acceptance_verdicts(doc(VM_GPU, VM_GPU), [], profile, load_health())
    overall = accept_overall(found, expected_here(FACTS, profile))
    assert overall.word == "PASS", (overall, found)
    health = {v.rule: v for v in found if v.rule.startswith("health-")}
    nvlink = health["health-nvlink-errors"]
    assert nvlink.verdict == "SKIP" and nvlink.needs == () and "not applicable: no active NVLink" in nvlink.why
    for rule, limit in (("health-xid", "xid_events"), ("health-persistence", "persistence")):
        assert health[rule].verdict == "SKIP" and health[rule].needs == () and f"lists '{limit}'" in health[rule].why
        assert "the VM's limit" in health[rule].why
    assert {v.verdict for r, v in health.items() if r not in ("health-nvlink-errors", "health-xid",
                                                              "health-persistence")} == {"PASS"}


def test_without_the_vm_s_limits_the_same_readings_are_a_fault_and_a_gap():
    found = verdicts(doc(VM_GPU))
    assert found["health-persistence"].verdict == "FAIL" and BUS in found["health-persistence"].measured
    xid = found["health-xid"]
    assert xid.verdict == "SKIP" and xid.needs == ("gpu",) and f"NVML refused XID events on GPU(s) {BUS}" in xid.why
    overall = accept_overall(list(found.values()), expected_here(FACTS, None))
    assert overall.word == "FAIL"


def test_active_nvlinks_that_are_not_read_stay_incomplete():
    active = {**VM_GPU, "nvlink_active": 18, "persistence": True}  # the counters were not readable: no deltas
    found = verdicts(doc(active), limits=("xid_events",))
    nvlink = found["health-nvlink-errors"]
    assert nvlink.verdict == "SKIP" and nvlink.needs == ("gpu",) and "NVML gave no NVLink errors" in nvlink.why
    overall = accept_overall(list(found.values()), expected_here(FACTS, None))
    assert overall.word == "INCOMPLETE" and any("health-nvlink-errors" in r for r in overall.reasons)
    read = {**active, "nvlink_crc_flit_delta": 0, "nvlink_crc_data_delta": 0, "nvlink_replay_delta": 0,
            "nvlink_recovery_delta": 0}
    assert verdicts(doc(read))["health-nvlink-errors"].verdict == "PASS"
    # one GPU with links and one without: the rule still applies (to the one with links)
    mixed = verdicts(doc(VM_GPU, active))["health-nvlink-errors"]
    assert mixed.verdict == "SKIP" and mixed.needs == ("gpu",)


@pytest.mark.parametrize("held,word", [(0.20, "FAIL"), (0.005, "PASS")])
def test_a_thermal_hold_inside_the_window_fails_even_when_it_cleared_before_the_end(held, word):
    cleared = {**VM_GPU, "throttle_reasons": [], "thermal_held_fraction": held}  # no reason left at the end
    throttle = verdicts(doc(cleared))["health-throttle"]
    assert throttle.verdict == word
    if word == "FAIL":
        assert "held down for heat 20% of the window" in throttle.measured


def test_the_card_s_own_power_cap_is_recorded_not_judged():
    capped = {**VM_GPU, "throttle_reasons": ["sw_power_cap"], "power_held_fraction": 0.6}
    assert verdicts(doc(capped))["health-throttle"].verdict == "PASS"


def test_a_case_whose_gpu_reading_failed_is_not_passed_over():
    failed = "GPUs at the end: NVMLError_Unknown: Unknown Error"
    found = verdicts(doc(VM_GPU, failed=[failed]), limits=("xid_events", "persistence"))
    ecc = found["health-ecc-uncorrected"]
    assert ecc.verdict == "SKIP" and ecc.needs == ("gpu",) and "the GPU reading failed in 1 case(s)" in ecc.why
    assert failed in ecc.why
    only = verdicts(doc(failed=[failed]))["health-ecc-uncorrected"]  # no reading at all: not "no GPU case ran"
    assert only.verdict == "SKIP" and only.needs == ("gpu",) and "the GPU reading failed" in only.why
