"""`kvbench accept` fails closed, as a CI runs it: one last line with the verdict word first, the same
verdict in JSON, JUnit and the report's first heading, and exit 0 PASS / 1 FAIL / 3 INCOMPLETE. The
first INCOMPLETE is seen through a real `kvbench` process (`run_cli`), the rest in this process (`cli`,
tests/inproc.py), which answers alike without a process's start-up."""

import json
import xml.etree.ElementTree as ET

from tests.conftest import FIXTURES, run_cli
from tests.inproc import run_in_process as cli

QUICK = FIXTURES / "runs" / "quick-cpu-vm.json"
H200 = {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "bus_id": "0000:17:00.0", "numa_node": 0,
        "link": {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}, "memory_bytes": 141 * 2**30}


def broken_gpu_run(tmp_path):
    """The stored CPU run as if its host had an H200 that NVML saw but whose cases all skipped."""
    doc = json.loads(QUICK.read_text())
    doc["host"]["facts"]["gpus"] = [H200]
    path = tmp_path / "broken-gpu.json"
    path.write_text(json.dumps(doc))
    return path


def last_line(proc):
    return proc.stderr.strip().splitlines()[-1]


def test_a_gpu_host_whose_gpu_rules_all_skipped_is_incomplete_everywhere(tmp_path):
    run = str(broken_gpu_run(tmp_path))
    junit, report = tmp_path / "accept.xml", tmp_path / "report.md"
    proc = run_cli("accept", "--run", run, "--json", str(tmp_path / "a.json"), "--junit", str(junit))
    assert proc.returncode == 3, proc.stderr
    line = last_line(proc)
    assert line.startswith("INCOMPLETE: ") and "GPU rule(s) not judged although NVML sees 1 GPU(s)" in line
    assert "hbm-read" in line
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["verdict"] == "INCOMPLETE" and doc["exit_status"] == 3 and "hbm-read" in doc["reasons"][0]
    root = ET.parse(junit).getroot()
    assert [c for c in root.findall("testcase") if c.get("name") == "overall verdict: INCOMPLETE"
            and c.find("failure") is not None]
    assert cli("accept", "--run", run, "--allow-incomplete").returncode == 0
    assert cli("report", run, "--format", "markdown", "-o", str(report)).returncode == 0
    assert report.read_text().startswith("# INCOMPLETE — kvbench report")


def test_a_profile_expecting_an_h200_fails_a_host_without_gpu_and_names_the_gpu_rules(tmp_path):
    profile = tmp_path / "node.toml"
    profile.write_text('name = "one H200"\n[expect]\ngpus = 1\ngpu_model = "H200"\n')
    proc = cli("accept", "--run", str(QUICK), "--json", "-", env={"KVBENCH_PROFILE": str(profile)})
    assert proc.returncode == 1, proc.stderr
    line = last_line(proc)
    assert line.startswith("FAIL: ") and "inventory-gpus" in line
    assert "GPU rule(s) not judged although profile 'one H200' expects 1 H200 GPU(s)" in line
    assert "h200-hbm-read" in line and "not run" in line
    doc = json.loads(proc.stdout)  # the JSON document on stdout stays whole: the verdict line is on stderr
    assert doc["verdict"] == "FAIL" and doc["verdicts"][0]["rule"] == "inventory-gpus"
    assert doc["verdicts"][0]["verdict"] == "FAIL" and "0 GPU(s)" in doc["verdicts"][0]["measured"]
    html = tmp_path / "r.html"
    assert cli("report", str(QUICK), "-o", str(html), "--profile", str(profile)).returncode == 0
    assert "<h1>FAIL — kvbench report" in html.read_text()


def test_a_cpu_host_without_profile_passes_on_its_host_rules(tmp_path):
    proc = cli("accept", "--run", str(QUICK))
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc).startswith("PASS: ") and "skipped, not expected on this host" in last_line(proc)


def test_host_profile_writes_this_host_s_inventory_and_it_passes_here(tmp_path, stored_runs):
    profile = tmp_path / "node.toml"
    proc = cli("host", "profile", "-o", str(profile))
    assert proc.returncode == 0, proc.stderr
    text = profile.read_text()
    assert "[expect]" in text and "gpus = " in text and "measured on" in text
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    proc = cli("accept", "--run", "latest", "--db", db, "--profile", str(profile), "--rules",
                   str(FIXTURES.parent.parent / "suites" / "rules" / "default.toml"))
    inventory = [line for line in proc.stdout.splitlines() if "inventory-" in line]
    assert inventory and all("PASS" in line for line in inventory), proc.stdout
    bad = cli("accept", "--run", "latest", "--db", db, "--profile", "no-such-profile")
    assert bad.returncode == 2 and "unknown profile 'no-such-profile'" in bad.stderr


def test_an_integrity_failed_case_fails_its_rules_in_table_json_and_junit_stored_or_exported(tmp_path, stored_runs):
    import sqlalchemy as sa

    db = stored_runs("tests/fixtures/tiny.toml", 1)
    engine = sa.create_engine(db)
    with engine.begin() as conn:  # the fragmented case's bytes did not verify
        conn.execute(sa.text("UPDATE result SET status = 'failed', reason = 'integrity: destination differs at "
                             "byte 4096' WHERE params LIKE '%4096%'"))
    engine.dispose()
    rules = tmp_path / "rules.toml"
    rules.write_text('name = "t"\n[[rule]]\nid = "floor"\nbench = "dram.copy"\nmin = { value = 1, unit = "MB/s" }\n'
                     '[[rule]]\nid = "spread"\nbench = "dram.copy"\nspread = { over = "fragment", max = 0.9 }\n')
    export = tmp_path / "export.json"
    assert cli("export", "latest", "--format", "json", "-o", str(export), "--db", db).returncode == 0
    for ref in ("latest", str(export)):
        junit = tmp_path / "a.xml"
        proc = cli("accept", "--run", ref, "--rules", str(rules), "--db", db, "--junit", str(junit),
                       "--json", str(tmp_path / "a.json"))
        assert proc.returncode == 1, proc.stderr
        assert last_line(proc).startswith("FAIL: 2 case(s) failed 2 acceptance rule(s): floor, spread")
        doc = json.loads((tmp_path / "a.json").read_text())
        failed = {v["rule"]: v for v in doc["verdicts"] if v["verdict"] == "FAIL"}
        assert set(failed) == {"floor", "spread"} and "differs at byte 4096" in failed["spread"]["why"]
        assert "FAIL" in proc.stdout and "differs at byte 4096" in proc.stdout
        failures = [c.get("name") for c in ET.parse(junit).getroot().findall("testcase") if c.find("failure") is not None]
        assert any(n.startswith("floor [") for n in failures) and any(n.startswith("spread [") for n in failures)
