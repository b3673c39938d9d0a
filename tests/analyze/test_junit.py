"""JUnit XML from acceptance verdicts, as CI systems read it."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from kvbench.analyze.accept.judge import judge, rules_for_host
from kvbench.analyze.accept.junit import junit_xml

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
    assert float(root.get("time")) > 0
    props = {p.get("name"): p.get("value") for p in root.find("properties")}
    assert props["timestamp"] == str(doc["run"]["started_at"]) and props["hostname"] == doc["host"]["hostname"]
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


# What both the Surefire XSD (maven-surefire's surefire-test-report.xsd) and the Jenkins junit plugin's
# XSD (junit-10.xsd) accept, encoded here: the attributes each element may carry in both, the ones
# Surefire requires, and Surefire's order of a testcase's children.
SUITE_ATTRIBUTES = {"name", "tests", "failures", "errors", "skipped", "time", "version"}
SUITE_REQUIRED = {"name", "tests", "failures", "errors", "skipped"}
CASE_ATTRIBUTES = {"name", "classname", "time", "group"}
CASE_CHILDREN = ["failure", "skipped", "error", "system-out", "system-err"]  # in this order, failure repeatable


def _check_both_xsds(root: ET.Element) -> None:
    assert root.tag == "testsuite"  # Surefire's root; Jenkins takes it bare too
    assert SUITE_REQUIRED <= set(root.attrib) <= SUITE_ATTRIBUTES, root.attrib
    float(root.get("time"))
    children = [c.tag for c in root]
    assert children == sorted(children, key=lambda t: ["properties", "testcase"].index(t))
    for prop in root.iter("property"):
        assert set(prop.attrib) == {"name", "value"}
    for case in root.findall("testcase"):
        assert {"name", "time"} <= set(case.attrib) <= CASE_ATTRIBUTES, case.attrib
        float(case.get("time"))
        tags = [c.tag for c in case]
        assert tags == sorted(tags, key=CASE_CHILDREN.index), tags
        assert tags.count("skipped") <= 1 and tags.count("system-out") <= 1
        for failure in case.findall("failure"):
            assert failure.get("type") and set(failure.attrib) <= {"message", "type"}
        for skipped in case.findall("skipped"):
            assert set(skipped.attrib) <= {"message"}


def test_junit_is_valid_for_surefire_and_jenkins():
    from kvbench.overall import Overall

    doc = quick()
    verdicts = judge(doc, rules_for_host([]))
    _check_both_xsds(ET.fromstring(junit_xml(verdicts, doc)))
    for word in ("PASS", "FAIL", "INCOMPLETE"):
        overall = Overall(word, (f"{word.lower()} for the test",) if word != "PASS" else ())
        _check_both_xsds(ET.fromstring(junit_xml(verdicts, doc, overall=overall)))
