"""One profile for every output of a CI job: `accept` and `report` on the same run, with the profile
given once (KVBENCH_PROFILE), say the same word — also where the verdict turns on an uncertain ratio
or on the host's inventory — so report.md can never contradict accept.xml."""

import json

import pytest

from tests.analyze.test_uncertain import STRADDLING, with_ratios
from tests.analyze.rules import quick_run
from tests.inproc import run_in_process as cli


@pytest.mark.parametrize("case", ["uncertain-ratio", "inventory-fail", "plain"])
def test_accept_and_report_on_one_run_with_the_profile_given_once_say_the_same_word(tmp_path, case):
    doc = with_ratios(quick_run(), STRADDLING) if case == "uncertain-ratio" else quick_run()
    run = tmp_path / "run.json"
    run.write_text(json.dumps(doc))
    profile = tmp_path / "node.toml"
    profile.write_text('name = "n"\n[expect]\nnuma_nodes = 1\n' + ("gpus = 1\n" if case == "inventory-fail" else ""))
    env = {"KVBENCH_PROFILE": str(profile)}
    accepted = cli("accept", "--run", str(run), "--junit", str(tmp_path / "accept.xml"), env=env)
    word = accepted.stderr.strip().splitlines()[-1].split(":")[0]
    assert word == {"uncertain-ratio": "INCOMPLETE", "inventory-fail": "FAIL", "plain": "PASS"}[case], accepted.stderr
    assert cli("report", str(run), "-o", str(tmp_path / "report.md"), env=env).returncode == 0
    assert (tmp_path / "report.md").read_text().startswith(f"# {word} — kvbench report")
    assert f"overall verdict: {word}" in (tmp_path / "accept.xml").read_text()
