"""accept, compare, export, tag, history, fleet, report and plot as a user runs them.

Most commands run in this process (`cli`, tests/inproc.py: the same answers without a process's
start-up); the exit statuses a shell sees (1: slower, 3: incomplete) are also checked through real
`kvbench` processes (`run_cli`). Runs of the test suites are measured once per session (`stored_runs`)."""

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from tests.inproc import run_in_process as cli

QUICK = FIXTURES / "runs" / "quick-cpu-vm.json"


def slowed(tmp_path: Path, factor: float = 1.25) -> Path:
    """The stored quick run with every dram.copy sample `factor` slower: a known regression."""
    doc = json.loads(QUICK.read_text())
    new = copy.deepcopy(doc)
    new["run"]["id"] = 99
    for r in new["results"]:
        if r["bench"] == "dram.copy" and r["status"] == "ok":
            r["samples_s"] = [s * factor for s in r["samples_s"]]
            r["gbps"] = {k: v / factor for k, v in r["gbps"].items()}
    path = tmp_path / "slowed.json"
    path.write_text(json.dumps(new))
    return path


def test_compare_finds_the_regression_and_exits_1(tmp_path):
    proc = run_cli("compare", str(QUICK), str(slowed(tmp_path)), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    verdicts = {c["case"]: c["verdict"] for c in doc["comparisons"]}
    assert list(verdicts.values()).count("slower") >= 8  # every steady dram.copy case: -20 %, ranges apart
    assert "case(s) slower from run" in proc.stderr


def test_compare_markdown_for_a_ci_summary(tmp_path):
    proc = cli("compare", str(QUICK), str(slowed(tmp_path)), "--format", "markdown")
    assert proc.stdout.startswith("### run") and "**slower**" in proc.stdout


def test_unchanged_runs_pass(tmp_path):
    proc = cli("compare", str(QUICK), str(slowed(tmp_path, 1.0)))
    assert proc.returncode == 0 and "slower" not in proc.stdout.replace("(slower or faster:", "")



def test_a_drop_measured_on_a_contended_box_is_incomplete_never_a_pass(tmp_path):
    """A regression the statistics see, held back because the new run's box was busy: not judged, so
    exit 3 and one INCOMPLETE line that says to re-measure — a busy CI runner never turns a drop green."""
    path = slowed(tmp_path, 1.6)
    doc = json.loads(path.read_text())
    for r in doc["results"]:
        r.setdefault("metadata", {})["contention"] = {"contended": ["other processes used 94% of the CPUs"],
                                                      "faults": []}
    path.write_text(json.dumps(doc))
    proc = run_cli("compare", str(QUICK), str(path), "--format", "json")
    assert proc.returncode == 3, proc.stderr
    verdicts = [c["verdict"] for c in json.loads(proc.stdout)["comparisons"]]
    assert "ambiguous (contended)" in verdicts and "slower" not in verdicts
    assert proc.stderr.strip().splitlines()[-1].startswith("INCOMPLETE: ") and "re-measure" in proc.stderr
    assert cli("compare", str(QUICK), str(path), "--allow-incomplete").returncode == 0


def test_compare_exits_1_naming_a_case_ok_in_the_base_and_skipped_now(tmp_path):
    doc = json.loads(QUICK.read_text())
    doc["run"]["id"] = 99
    gone = next(r for r in doc["results"] if r["status"] == "ok")
    gone.update(status="skipped", reason="no CUDA device (driver broken)", samples_s=[], gbps=None)
    path = tmp_path / "gone.json"
    path.write_text(json.dumps(doc))
    proc = cli("compare", str(QUICK), str(path))
    assert proc.returncode == 1, proc.stderr
    assert "ok in run" in proc.stderr and gone["bench"] in proc.stderr and "driver broken" in proc.stderr
    assert "lost" in proc.stdout

def test_compare_refuses_another_host(tmp_path):
    other = json.loads(QUICK.read_text())
    other["run"]["host_id"] = "0" * 64
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    proc = cli("compare", str(QUICK), str(path))
    assert proc.returncode == 2 and "different hosts" in proc.stderr and "--cross-host" in proc.stderr
    assert cli("compare", str(QUICK), str(path), "--cross-host").returncode == 0


def test_export_formats(tmp_path):
    gab = json.loads(cli("export", str(QUICK), "--format", "github-action-benchmark").stdout)
    assert gab[0]["unit"] == "GB/s"
    target = tmp_path / "pb.json"
    assert cli("export", str(QUICK), "--format", "pytest-benchmark", "-o", str(target)).returncode == 0
    assert json.loads(target.read_text())["benchmarks"]


def test_accept_judges_a_stored_run_and_writes_junit(tmp_path, stored_runs):
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    run = json.loads(cli("results", "latest", "--format", "json", "--db", db).stdout)
    for result in run["results"]:  # measured on a quiet box, whatever this one is doing (a contended failure is INCOMPLETE)
        result["metadata"].pop("contention", None)
    quiet = tmp_path / "quiet.json"
    quiet.write_text(json.dumps(run))
    rules = tmp_path / "rules.toml"
    rules.write_text('name = "t"\n[[rule]]\nid = "too-fast"\nbench = "dram.copy"\n'
                     'min = { value = 100, unit = "TB/s" }\n[[rule]]\nid = "gpu"\nbench = "hbm.read"\n'
                     'min_fraction_of_peak = 0.9\n')
    junit = tmp_path / "accept.xml"
    proc = cli("accept", "--run", str(quiet), "--rules", str(rules), "--junit", str(junit), "--db", db)
    assert proc.returncode == 1 and "2 case(s) failed 1 acceptance rule(s): too-fast" in proc.stderr
    assert "FAIL" in proc.stdout and "SKIP" in proc.stdout
    root = ET.parse(junit).getroot()
    from kvbench.analyze.accept.health import health_path, load_health

    health = len(load_health(health_path(None)).check)  # the GPU health rules, judged whatever rules file: no GPU, SKIP
    assert root.get("failures") == "3" and root.get("skipped") == str(1 + health)  # two dram.copy cases fail, hbm skips
    assert proc.stderr.strip().splitlines()[-1].startswith("FAIL: ")  # and the overall verdict fails


def test_accept_runs_the_suite_with_the_shipped_rules(tmp_path):
    suite = tmp_path / "acc.toml"
    suite.write_text('name = "acc"\n[settings]\nsamples = 5\nmin_sample_s = 0.002\n[[bench]]\nid = "dram.copy"\n'
                     'params = { size = "8MiB", primitive = "memcpy" }\n')
    proc = cli("accept", "--suite", str(suite), "--db", f"sqlite:///{tmp_path / 'k.sqlite'}")
    assert "hbm-read" in proc.stdout and "SKIP" in proc.stdout
    # no rule names an 8 MiB copy: nothing was judged, which is never a PASS
    assert proc.returncode == 3 and "INCOMPLETE: nothing was judged" in proc.stderr, proc.stderr


def test_a_rules_unit_mismatch_is_bad_input(tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text('name = "t"\n[[rule]]\nid = "lat"\nbench = "dram.copy"\nmin = { value = 3, unit = "us" }\n')
    proc = cli("accept", "--run", "latest", "--rules", str(rules), "--db", f"sqlite:///{tmp_path / 'k.sqlite'}")
    assert proc.returncode == 2 and "unit 'us'" in proc.stderr


def test_tag_baseline_then_compare_and_history(stored_runs):
    db = stored_runs("tests/fixtures/tiny.toml", 2)
    assert "baseline=1" in cli("tag", "1", "baseline", "--db", db).stdout
    proc = cli("compare", "baseline", "latest", "--db", db)
    assert proc.returncode in (0, 1, 3) and "run 1 → run 2" in proc.stdout  # 3: a busy box held a drop back
    hist = cli("history", "dram.copy", "--params", "fragment=4KiB", "--db", db)
    assert hist.returncode == 0, hist.stderr
    assert hist.stdout.count("fragment=4KiB") == 1 and "segment" in hist.stdout


def test_report_and_plot_from_the_database(tmp_path, stored_runs):
    db = stored_runs("tests/fixtures/kv-sweep.toml", 1)
    page = tmp_path / "r.html"
    assert cli("report", "latest", "-o", str(page), "--db", db).returncode == 0
    html = page.read_text()
    assert "data:image/png;base64," in html and "Restore or recompute 8192 tokens of Llama-3.1-70B" in html
    md = cli("report", "latest", "--format", "markdown", "-o", "-", "--db", db)
    assert "| rule | case | verdict |" in md.stdout
    fig = tmp_path / "kv.svg"
    assert cli("plot", "latest", "--bench", "kv.restore", "-o", str(fig), "--db", db).returncode == 0
    assert fig.read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize("args,message", [
    (["report", "-o", "x.html"], "holds no runs yet"),
    (["report", "5"], "holds no runs yet"),
    (["compare", "1", "2"], "holds no runs yet"),
    (["compare", "baseline", "latest"], "no run is tagged as baseline"),
    (["fleet"], "no results in"),
    (["history", "dram.copy"], "no dram.copy results for this host"),
    (["plot", "-o", "x.gif"], "use a .png or .svg file"),
])
def test_analysis_bad_input_on_an_empty_database(tmp_path, args, message):
    from kvbench.store import open_store

    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    open_store(url).dispose()  # a database with no runs in it
    proc = cli(*args, "--db", url)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_every_answer_comes_as_json_too(tmp_path, stored_runs):
    db = stored_runs("tests/fixtures/kv-sweep.toml", 2)
    accepted = cli("accept", "--run", "latest", "--json", "-", "--db", db)
    doc = json.loads(accepted.stdout)
    assert set(doc["counts"]) == {"PASS", "FAIL", "SKIP", "INCOMPLETE"} and doc["verdicts"][0]["verdict"] in doc["counts"]
    hist = json.loads(cli("history", "kv.restore", "--json", "-", "--db", db).stdout)
    assert hist["bench"] == "kv.restore" and all(len(c["runs"]) == 2 for c in hist["cases"])
    assert hist["cases"][0]["runs"][0]["started_at"].endswith("+00:00")
    fleet = json.loads(cli("fleet", "--json", "-", "--db", db).stdout)
    assert fleet["outliers"] == 0 and {r["bench"] for r in fleet["rows"]} == {"kv.restore"}
    fits = json.loads(cli("fit", "--json", "-", "--db", db).stdout)
    assert fits["fits"] and all(set(f) == {"series", "fit"} for f in fits["fits"])
    figure = tmp_path / "history.svg"
    assert cli("history", "kv.restore", "--plot", str(figure), "--db", db).returncode == 0
    assert figure.read_text().lstrip().startswith("<?xml")


def test_the_baseline_is_the_run_named_last_and_a_tag_can_be_removed(stored_runs):
    db = stored_runs("tests/fixtures/tiny.toml", 3)
    assert cli("tag", "2", "baseline", "--db", db).returncode == 0
    assert cli("tag", "1", "baseline", "--db", db).returncode == 0
    assert "run 1 → run 3" in cli("compare", "baseline", "latest", "--db", db).stdout
    assert "baseline removed" in cli("tag", "1", "baseline", "--remove", "--db", db).stdout
    assert "run 2 → run 3" in cli("compare", "baseline", "latest", "--db", db).stdout
    proc = cli("tag", "1", "baseline", "--remove", "--db", db)
    assert proc.returncode == 2 and "has no tag 'baseline'" in proc.stderr


def test_a_report_across_contexts_is_written_and_says_what_changed(tmp_path):
    old = json.loads(QUICK.read_text())
    new = copy.deepcopy(old)
    new["run"]["id"], new["run"]["context_id"] = 99, "f" * 64
    old["context"] = {"id": old["run"]["context_id"], "facts": {"nvidia_driver": "570.86"}}
    new["context"] = {"id": "f" * 64, "facts": {"nvidia_driver": "580.65"}}
    paths = []
    for name, doc in (("old.json", old), ("new.json", new)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(doc))
    page = tmp_path / "r.html"
    proc = cli("report", str(paths[1]), "--baseline", str(paths[0]), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    assert "nvidia_driver: 570.86 → 580.65" in page.read_text()


def test_plan_weighs_restore_against_recompute_and_policy_names_a_strategy(stored_runs):
    db = stored_runs("tests/fixtures/kv-sweep.toml", 1)
    plan = cli("plan", "--model", "Qwen2.5-32B", "--tokens", "8192", "--gpu", "H200", "--json", "-", "--db", db)
    doc = json.loads(plan.stdout)
    assert doc["recompute"]["kind"] == "spec" and doc["recompute"]["source"].startswith("spec: NVIDIA H200")
    (tier,) = doc["tiers"]
    # DRAM → DRAM does not end in GPU memory: a leg, never set against recomputing (issue 36 item 6)
    assert tier["tier"] == "DRAM → DRAM" and tier["faster"] is None and tier["break_even_tokens"] is None
    assert tier["request_ms"]["n"] == 30 and tier["request_ms"]["p50"] <= tier["request_ms"]["p99"]
    assert tier["runs"] == [1] and tier["request_ms"]["run_id"] == 1
    no_rate = cli("plan", "--model", "Qwen2.5-32B", "--tokens", "8192", "--db", db)
    assert no_rate.returncode == 0 and "--tflops X or --gpu NAME" in no_rate.stdout
    # another model's rates and request times are never this model's (issue 24: Llama took DeepSeek-V3's)
    other = cli("plan", "--model", "Llama-3.1-70B", "--tokens", "8192", "--db", db)
    assert other.returncode == 2 and "no kv.restore results of Llama-3.1-70B" in other.stderr
    assert "measured: Qwen2.5-32B" in other.stderr
    policy = json.loads(cli("policy", "--json", "-", "--db", db).stdout)
    assert policy["policies"] and policy["policies"][0]["path"] == "pageable → pageable"
    bad = cli("plan", "--model", "Qwen2.5-32B", "--tokens", "16", "--mfu", "1.5", "--db", db)
    assert bad.returncode == 2 and "bad --mfu 1.5" in bad.stderr
