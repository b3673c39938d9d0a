"""Accept's verdicts are data, not prose (issue 23 item 5): the measured value and the threshold as
numbers with one unit, the exact cases a verdict judged (ids and parameters), and the cases of its
benchmark it did not judge, each with why — in JSON and in JUnit properties alike."""

import xml.etree.ElementTree as ET

from kvbench.analyze.accept.judge import judge, load_rules, rules_for_host
from kvbench.analyze.accept.junit import junit_xml
from kvbench.overall import Overall
from kvbench.report.json_docs import accept_doc
from tests.analyze.rules import quick_run


def test_the_dram_floor_names_the_one_case_it_judged_and_why_it_left_the_others():
    doc = quick_run()
    (floor,) = [v for v in judge(doc, rules_for_host([])) if v.rule == "dram-copy-floor"]
    assert floor.case != "all" and floor.case.startswith("size=256MiB threads=1")  # not a claim on every case
    assert floor.unit == "GB/s" and floor.limit == 5.0 and floor.limit_max is None
    assert abs(floor.value - float(floor.measured.split()[0])) < 0.01
    (judged,) = floor.cases
    params = next(r["params"] for r in doc["results"] if r["case"] == judged)
    assert params["size"] == 256 << 20 and params["threads"] == 1 and params["fragment"] == 0
    others = {r["case"] for r in doc["results"] if r["bench"] == "dram.copy"} - {judged}
    assert {case for case, _ in floor.not_judged} == others
    assert all(why.startswith("not named by the rule: ") and "(the rule names " in why for _, why in floor.not_judged)


def test_every_kind_gives_numbers_in_one_unit(tmp_path):
    doc = quick_run()
    path = tmp_path / "rules.toml"
    path.write_text('name = "t"\n'
                    '[[rule]]\nid = "eff"\nbench = "dram.copy"\nparams = { size = "256MiB" }\nmin_fraction_of_peak = 0.3\n'
                    '[[rule]]\nid = "mb"\nbench = "dram.copy"\nparams = { size = "256MiB" }\n'
                    'min = { value = 900, unit = "MB/s" }\n'
                    '[[rule]]\nid = "ratio"\nbench = "kv.restore"\n'
                    'ratio = { of = { strategy = "host" }, to = { strategy = "contiguous" }, min = 0.5, max = 2.0 }\n'
                    '[[rule]]\nid = "spread"\nbench = "dram.copy"\nparams = { size = "256MiB", fragment = 0 }\n'
                    'spread = { over = "threads", max = 0.9 }\n')
    for r in doc["results"]:
        if r["bench"] == "dram.copy" and r["params"]["size"] == 256 << 20:
            r.update(efficiency=0.4, peak_gbps=r["gbps"]["median"] / 0.4)
    verdicts = {v.rule: v for v in judge(doc, [load_rules(path)])}
    assert (verdicts["eff"].unit, verdicts["eff"].limit, verdicts["eff"].value) == ("fraction of peak", 0.3, 0.4)
    mb = verdicts["mb"]
    assert mb.unit == "MB/s" and mb.limit == 900 and mb.value > 1000  # the value in the rule's own unit
    ratio = verdicts["ratio"]
    assert (ratio.unit, ratio.limit, ratio.limit_max) == ("x", 0.5, 2.0) and 0.5 < ratio.value < 2.0
    assert len(ratio.cases) == 2  # both sides of the pair
    spread = verdicts["spread"]
    assert spread.unit == "fraction below the fastest" and spread.limit_max == 0.9 and 0 <= spread.value < 0.9


def test_a_skipped_case_is_listed_as_not_judged_with_its_reason():
    doc = quick_run()
    target = next(r for r in doc["results"] if r["bench"] == "dram.copy" and r["params"]["size"] == 256 << 20
                  and r["params"]["threads"] == 1 and r["params"]["fragment"] == 0)
    target.update(status="skipped", reason="no room for 2 x 256 MiB", gbps=None)
    (floor,) = [v for v in judge(doc, rules_for_host([])) if v.rule == "dram-copy-floor"]
    assert floor.verdict == "SKIP" and floor.value is None and floor.cases == ()
    assert dict(floor.not_judged)[target["case"]] == "skipped: no room for 2 x 256 MiB"


def test_json_and_junit_carry_the_same_fields():
    doc = quick_run()
    verdicts = judge(doc, rules_for_host([]))
    data = accept_doc(doc, verdicts, Overall("PASS"))
    floor = next(v for v in data["verdicts"] if v["rule"] == "dram-copy-floor")
    assert floor["unit"] == "GB/s" and floor["limit"] == 5.0 and isinstance(floor["value"], float)
    assert floor["judged"][0]["params"]["size"] == 256 << 20 and floor["judged"][0]["bench"] == "dram.copy"
    assert floor["not_judged"] and all({"case", "bench", "params", "why"} == set(n) for n in floor["not_judged"])
    root = ET.fromstring(junit_xml(verdicts, doc))
    name = next(c.get("name") for c in root.findall("testcase") if c.get("name").startswith("dram-copy-floor"))
    props = {p.get("name").removeprefix(f"{name}."): p.get("value") for p in root.find("properties")
             if p.get("name").startswith(f"{name}.")}  # suite properties: the schemas allow none in a testcase
    assert props["unit"] == "GB/s" and float(props["limit"]) == 5.0 and float(props["value"]) > 5
    assert props["judged"] == floor["judged"][0]["case"] and "not named by the rule" in props["not_judged"]
