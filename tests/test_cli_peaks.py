"""`--peaks FILE` (or KVBENCH_PEAKS) is honoured wherever a peak is judged: `accept --run` of a stored run
or an export takes each result's peak again from the file (a copy: half the DRAM bus), on the facts the
run was measured on, and says which file it used; a peaks file with a key kvbench does not know is refused in one line by every
command that takes one."""

import json

import pytest

from kvbench.store import open_store
from kvbench.store.records import result_row
from tests.conftest import FIXTURES, REPO
from tests.inproc import run_in_process as cli

QUICK = FIXTURES / "runs" / "quick-cpu-vm.json"
RULES = str(REPO / "suites" / "rules" / "default.toml")
PEAKS = '[dram]\ngbps = 100.0\nsource = "8 channels x 6400 MT/s x 8 B = 409.6, derated, from the vendor"\n'


def _stored(tmp_path) -> str:
    """The quick export stored as a run of a database, as a `kvbench run` would have left it."""
    doc = json.loads(QUICK.read_text())
    url = f"sqlite:///{tmp_path / 'k.sqlite'}"
    store = open_store(url)
    store.ensure_host(doc["run"]["host_id"], "vm", doc["host"]["facts"])
    store.ensure_context("c" * 64, {})
    run = store.begin_run(host_id=doc["run"]["host_id"], context_id="c" * 64, suite="quick", suite_hash=None,
                          kvbench_version="0", git_sha=None, git_dirty=None, tags={}, system_state={},
                          facts=doc["host"]["facts"])
    rows = [({k: v for k, v in result_row(r).items() if k != "samples"}, [1e-3] * 5) for r in doc["results"]]
    store.add_results(run, rows)
    store.finish_run(run, "complete")
    store.dispose()
    return url


def _efficiency_verdicts(path):
    doc = json.loads(path.read_text())
    return doc, [v for v in doc["verdicts"] if v["rule"] == "dram-copy-efficiency"]


@pytest.mark.parametrize("where", ["stored", "export"])
def test_accept_run_judges_the_dram_efficiency_rule_with_the_peaks_file_s_peak_and_names_the_file(tmp_path, where):
    peaks = tmp_path / "peaks.toml"
    peaks.write_text(PEAKS)
    args = ["--run", "latest", "--db", _stored(tmp_path)] if where == "stored" else ["--run", str(QUICK)]
    out = tmp_path / "a.json"
    cli("accept", *args, "--rules", RULES, "--json", str(out))
    _doc, before = _efficiency_verdicts(out)
    assert before and all(v["verdict"] == "SKIP" and "peak unknown" in v["why"] for v in before)
    proc = cli("accept", *args, "--rules", RULES, "--json", str(out), "--peaks", str(peaks))
    doc, after = _efficiency_verdicts(out)
    assert after and all(v["verdict"] in ("PASS", "FAIL") and "of 50.0 GB/s" in v["measured"] for v in after), after
    assert all(v["unit"] == "fraction of peak" and v["limit"] == 0.3 for v in after)
    assert doc["peaks_file"] == str(peaks.resolve()) and f"peaks from {peaks.resolve()}" in proc.stderr
    env = cli("accept", *args, "--rules", RULES, "--json", str(out), env={"KVBENCH_PEAKS": str(peaks)})
    assert env.returncode == proc.returncode and _efficiency_verdicts(out)[1] == after


@pytest.mark.parametrize("command", [
    ["accept", "--run", str(QUICK)], ["report", str(QUICK), "-o", "REPORT"], ["compare", str(QUICK), str(QUICK)],
    ["plan", "--model", "Llama-3.1-70B", "--tokens", "1024"], ["info"], ["run", "--bench", "dram.copy"],
])
def test_a_peaks_file_with_an_unknown_key_is_refused_in_one_line_by_every_command(tmp_path, command):
    peaks = tmp_path / "peaks.toml"
    peaks.write_text(PEAKS + "gpbs = 30\n")
    command = [str(tmp_path / "r.html") if a == "REPORT" else a for a in command]
    proc = cli(*command, "--peaks", str(peaks))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "unknown key(s) gpbs" in proc.stderr, proc.stderr


def test_a_peak_of_yours_set_too_low_is_named_as_the_likelier_cause(tmp_path):
    """Issue 57 item 17: a copy above the peak --peaks gave fails, and the verdict names that peak as the
    likelier cause, not "a measurement bug"; without --peaks the words stay a measurement bug."""
    low = tmp_path / "low.toml"
    low.write_text('[dram]\ngbps = 2.0\nsource = "typed in a hurry"\n')
    proc = cli("accept", "--run", str(QUICK), "--rules", RULES, "--peaks", str(low), "--json", str(tmp_path / "a.json"))
    assert proc.returncode == 1, proc.stderr
    _, verdicts = _efficiency_verdicts(tmp_path / "a.json")
    failed = [v for v in verdicts if v["verdict"] == "FAIL"]
    assert failed, verdicts
    assert all("your peaks file" in v["why"] and "likelier too low" in v["why"] and "a measurement bug, not"
               not in v["why"] for v in failed), failed
