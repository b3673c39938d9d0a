"""JUnit XML from acceptance verdicts, as CI systems read it."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from kvbench.analyze.accept import judge, rules_for_host
from kvbench.analyze.junit import junit_xml

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


def quick():
    doc = json.loads((RUNS / "quick-cpu-vm.json").read_text())
    doc["context"] = {"id": doc["run"]["context_id"], "facts": {"nvidia_driver": "580.65.06", "cuda_driver": "13.0"}}
    return doc


def test_one_testsuite_with_the_run_s_time_start_host_and_properties():
    doc = quick()
    verdicts = judge(doc, rules_for_host([]))
    root = ET.fromstring(junit_xml(verdicts, doc))
    assert root.tag == "testsuite" and int(root.get("tests")) == len(verdicts)
    assert int(root.get("skipped")) == sum(v.verdict == "SKIP" for v in verdicts)
    assert float(root.get("time")) > 0 and root.get("timestamp") == str(doc["run"]["started_at"])
    assert root.get("hostname") == doc["host"]["hostname"]
    props = {p.get("name"): p.get("value") for p in root.find("properties")}
    assert props["run_id"] == str(doc["run"]["id"]) and props["host_id"] == doc["run"]["host_id"]
    assert props["gpu"] == "none" and props["driver"] == "580.65.06"


def test_every_case_carries_its_measured_value_and_a_class_name_that_splits_cleanly():
    doc = quick()
    root = ET.fromstring(junit_xml(judge(doc, rules_for_host([])), doc))
    cases = root.findall("testcase")
    passed = [c for c in cases if c.find("failure") is None and c.find("skipped") is None]
    assert passed and all("measured" in c.find("system-out").text for c in passed)
    for case in cases:
        package, _, cls = case.get("classname").rpartition(".")
        assert package == "kvbench.accept" and "." not in cls  # dram.copy → dram_copy, whole
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert all(c.find("skipped").get("message") for c in skipped)
