"""Fail closed: one overall verdict (PASS, FAIL, INCOMPLETE) from the rules and the host's profile.
A GPU server whose driver broke skips every GPU case; that must never read as PASS."""

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvbench.analyze.accept.inventory import inventory_verdicts
from kvbench.analyze.accept.judge import Verdict, judge, rules_for_host
from kvbench.analyze.accept.junit import junit_xml
from kvbench.analyze.accept.profile import (
    Profile,
    expect_from_facts,
    gpus_to_match,
    load_profile,
    profile_path,
    profile_toml,
    shipped_profiles,
)
from kvbench.analyze.accept.verdict import accept_overall, expected_here
from kvbench.errors import BadInput
from kvbench.overall import Overall

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
H200 = {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "bus_id": "0000:17:00.0", "numa_node": 0,
        "link": {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}, "memory_bytes": 141 * 2**30}


def quick(gpus=(), pci=()):
    """The stored CPU run (dram.copy and kv.restore ok, no GPU case), with the GPUs its host shows."""
    doc = json.loads((RUNS / "quick-cpu-vm.json").read_text())
    doc["host"]["facts"].update(gpus=list(gpus), pci=list(pci))
    return doc


def overall_of(doc, profile=None):
    facts = doc["host"]["facts"]
    verdicts = judge(doc, rules_for_host(gpus_to_match(facts, profile)))
    if profile is not None:
        verdicts = inventory_verdicts(profile, facts) + verdicts
    return accept_overall(verdicts, expected_here(facts, profile)), verdicts


def test_a_host_without_gpu_and_without_profile_is_judged_by_its_host_rules_as_before():
    overall, _ = overall_of(quick())
    assert overall.word == "PASS" and overall.exit_status() == 0 and overall.line.startswith("PASS: ")


def test_a_run_lacking_the_cases_of_host_rules_is_incomplete_not_a_pass():
    # hostile trial H14: `accept --run` on a run of small copies said "PASS …; 10 skipped, not expected on
    # this host", though the DRAM rules apply to any host and were skipped only for want of their cases
    doc = quick()
    doc["results"] = [r for r in doc["results"] if r["params"].get("size") != 256 * 2**20]
    overall, verdicts = overall_of(doc)
    unjudged = sorted({v.rule for v in verdicts if v.verdict == "SKIP" and not v.needs})
    assert unjudged and overall.word == "INCOMPLETE" and overall.exit_status() == 3
    assert f"{len(unjudged)} host rule(s) not judged: the run has no case for them ({', '.join(unjudged)})" in overall.line


def test_a_gpu_nvml_sees_whose_cases_all_skipped_is_incomplete_naming_the_gpu_rules():
    overall, _ = overall_of(quick(gpus=[H200]))  # the driver broke after NVML read the GPU: every GPU case skipped
    assert overall.word == "INCOMPLETE" and overall.exit_status() == 3 and overall.exit_status(True) == 0
    assert "GPU rule(s) not judged although NVML sees 1 GPU(s)" in overall.line
    assert "hbm-read" in overall.line and "h200-hbm-read" in overall.line  # the SKU's rules apply too
    assert "multi-gpu-spread" in overall.line  # its cases did not run at all


def test_a_gpu_only_the_pci_bus_shows_makes_gpu_rules_expected_too():
    bus = {"bdf": "0000:17:00.0", "vendor": "0x10de", "device": "0x2335", "pci_class": "0x030200", "numa_node": 0,
           "link": {}}
    nvswitch = {**bus, "bdf": "0000:05:00.0", "pci_class": "0x068000"}
    assert expected_here({"pci": [nvswitch]}, None) == {}
    overall, _ = overall_of(quick(pci=[bus]))
    assert overall.word == "INCOMPLETE" and "the PCI bus shows 1 NVIDIA GPU(s) (0000:17:00.0)" in overall.line
    assert "NVML Shared Library Not Found" in overall.line  # why NVML could not read it


def test_a_profile_that_expects_an_h200_fails_its_inventory_on_a_host_without_one():
    profile = Profile.model_validate({"name": "one H200", "expect": {"gpus": 1, "gpu_model": "H200"}})
    overall, verdicts = overall_of(quick(), profile)
    inventory = {v.rule: v for v in verdicts if v.bench == "host"}
    assert inventory["inventory-gpus"].verdict == "FAIL" and "0 GPU(s)" in inventory["inventory-gpus"].measured
    assert inventory["inventory-gpu_model"].verdict == "FAIL"
    assert overall.word == "FAIL" and overall.exit_status(allow_incomplete=True) == 1
    assert "inventory-gpus" in overall.line and "GPU rule(s) not judged although profile 'one H200'" in overall.line


def test_a_profile_that_only_promises_a_gpu_model_is_incomplete_not_fail_on_skips():
    profile = Profile.model_validate({"expect": {"gpu_model": "H200"}})
    overall, _ = overall_of(quick(gpus=[H200]), profile)
    assert overall.word == "INCOMPLETE" and overall.exit_status() == 3


def test_one_gpu_makes_the_multi_gpu_spread_not_applicable_but_two_expected_make_it_required():
    skip = Verdict("multi-gpu-spread", "pcie.h2d", "all", "SKIP", "-", "", "fewer than two values of gpu in one run",
                   ("multi-gpu",))
    passed = Verdict("hbm-read", "hbm.read", "all", "PASS", "90%", "", "", ("gpu",))
    assert accept_overall([passed, skip], expected_here({"gpus": [H200]}, None)).word == "PASS"
    assert accept_overall([passed, skip], expected_here({"gpus": [H200, H200]}, None)).word == "INCOMPLETE"


def test_nothing_judged_is_incomplete_and_a_failed_case_fails_even_without_a_rule():
    assert accept_overall([], {}).line == "INCOMPLETE: nothing was judged: no rule applies"
    skipped = Verdict("r", "dram.copy", "all", "SKIP", "-", "", "skipped: no room")
    assert accept_overall([skipped], {}).word == "INCOMPLETE"
    overall = accept_overall([skipped], {}, failed_cases="run 3: 1 case(s) failed")
    assert overall.word == "FAIL" and "run 3: 1 case(s) failed" in overall.line


def test_inventory_rules_pass_on_the_host_they_were_written_from_and_name_what_differs():
    facts = {"gpus": [H200, {**H200, "index": 1, "bus_id": "0000:18:00.0",
                             "link": {"gen": 4, "width": 8, "max_gen": 4, "max_width": 8}}],
             "nics": [{"name": "mlx5_0/1", "rate_gbit": 400.0}, {"name": "mlx5_1/1", "rate_gbit": 400.0},
                      {"name": "eno1", "rate_gbit": 1.0}, {"name": "vf0", "rate_gbit": 400.0, "virtual": True}],
             "nvme": [{"name": "nvme0"}], "numa": [{"node": 0, "memory_bytes": 10**12}, {"node": 1, "memory_bytes": 10**12}],
             "dram": {"total_bytes": 2 * 10**12, "channels": 16}}
    expect = expect_from_facts(facts)
    assert expect == {"gpus": 2, "gpu_model": "H200", "pcie_gen": 4, "pcie_width": 8, "nics": 2, "nic_gbps": 400.0,
                      "nvme": 1, "numa_nodes": 2, "dram_gb": 2000, "dram_channels": 16}
    assert all(v.verdict == "PASS" for v in inventory_verdicts(Profile.model_validate({"expect": expect}), facts))
    wanted = Profile.model_validate({"expect": {**expect, "pcie_gen": 5, "nics": 3, "dram_gb": 2200, "nvme": 2}})
    found = {v.rule: v for v in inventory_verdicts(wanted, facts)}
    assert found["inventory-pcie_gen"].verdict == "FAIL" and "0000:18:00.0 Gen4" in found["inventory-pcie_gen"].measured
    assert found["inventory-nics"].verdict == "FAIL" and "2 up at ≥ 400 Gb/s" in found["inventory-nics"].measured
    assert found["inventory-dram_gb"].verdict == "FAIL" and found["inventory-nvme"].verdict == "FAIL"
    assert found["inventory-gpus"].verdict == "PASS" and found["inventory-numa_nodes"].verdict == "PASS"
    # 5 % either side of the DRAM figure passes (firmware reserves some of it)
    assert inventory_verdicts(Profile.model_validate({"expect": {"dram_gb": 2090}}), facts)[0].verdict == "PASS"


def test_an_expectation_the_run_recorded_no_fact_for_is_skipped_and_makes_the_verdict_incomplete():
    profile = Profile.model_validate({"expect": {"dram_channels": 8}})
    (verdict,) = inventory_verdicts(profile, {"dram": {"reason": "dmidecode is not installed"}})
    assert verdict.verdict == "SKIP" and "dmidecode" in verdict.why
    assert accept_overall([verdict], expected_here({}, profile)).word == "INCOMPLETE"
    (verdict,) = inventory_verdicts(profile, None)
    assert verdict.verdict == "SKIP" and "no host facts" in verdict.why


def test_a_written_profile_reads_back_and_bad_ones_are_one_line(tmp_path, monkeypatch):
    facts = {"hostname": "gpu-7", "gpus": [H200], "nics": [], "nvme": [], "numa": [{"node": 0, "memory_bytes": 10**11}],
             "dram": {}}
    path = tmp_path / "node.toml"
    path.write_text(profile_toml(facts, 'measured on "gpu-7"'))
    profile = load_profile(path)
    assert profile.name == "gpu-7" and profile.source == 'measured on "gpu-7"'
    assert profile.expect.gpus == 1 and profile.expect.gpu_model == "H200" and profile.expect.dram_gb == 100
    path.write_text("[expect]\ngpus = -1\n")
    with pytest.raises(BadInput, match="key 'expect.gpus'"):
        load_profile(path)
    path.write_text("[expect]\ngpu = 1\n")
    with pytest.raises(BadInput, match="key 'expect.gpu'"):
        load_profile(path)
    monkeypatch.setenv("KVBENCH_PROFILE", str(path))
    assert profile_path(None) == path and profile_path("other.toml") == Path("other.toml")
    monkeypatch.setenv("KVBENCH_PROFILE", "")
    with pytest.raises(BadInput, match="bad KVBENCH_PROFILE ''"):
        profile_path(None)
    with pytest.raises(BadInput, match="unknown profile 'h300'"):
        profile_path("h300")


def test_the_shipped_spec_profiles_read_and_say_they_are_spec():
    shipped = shipped_profiles()
    assert {"h200-sxm-8gpu", "b200-8gpu", "h100-sxm-8gpu", "h100-sxm-1gpu-vm", "h200-sxm-1gpu-vm"} <= set(shipped)
    for name, path in shipped.items():
        profile = load_profile(path)
        assert profile.source.startswith("spec: ") and "(spec)" in profile.name
        # an 8-GPU server, or the one-GPU VM the device tool lends (whose VM limits the profile names)
        assert profile.expect.gpus == 8 or (profile.expect.gpus == 1 and name.endswith("-1gpu-vm") and profile.vm_limits)
        assert profile_path(name) == path


def test_junit_has_a_failing_testcase_for_an_incomplete_acceptance():
    doc = quick(gpus=[H200])
    overall, verdicts = overall_of(doc)
    root = ET.fromstring(junit_xml(verdicts, doc, overall=overall))
    (whole,) = [c for c in root.findall("testcase") if c.get("name").startswith("overall verdict")]
    assert whole.get("name") == "overall verdict: INCOMPLETE" and whole.find("failure").get("type") == "incomplete"
    assert int(root.get("failures")) == 1 + sum(v.verdict == "FAIL" for v in verdicts)
    assert {p.get("name"): p.get("value") for p in root.find("properties")}["verdict"] == "INCOMPLETE"
    passed = Overall("PASS", ("2 rule(s) passed",))
    root = ET.fromstring(junit_xml(verdicts, copy.deepcopy(doc), overall=passed))
    (whole,) = [c for c in root.findall("testcase") if c.get("name").startswith("overall verdict")]
    assert whole.find("failure") is None
