"""Issue 57 item 6: the two artifacts of one CI job agree. The documented workflow (docs/github-actions.md)
gives `accept` and `report` the same host profile (KVBENCH_PROFILE), and a report judged without one says so
in its heading. Synthetic stored runs; the profile promises a NIC the box does not have."""

import re
from pathlib import Path

import pytest

from tests.inproc import run_in_process as cli
from tests.one_case_runs import store_one_case_runs

HOST, CTX, CASE = "test-box-i57-6", "c" * 64, "6666cccc6666cccc"
DOC = Path(__file__).resolve().parent.parent / "docs" / "github-actions.md"


def _workflow() -> tuple[dict[str, str], list[str]]:
    """(the job's env, each step's `run` command) of the workflow the doc gives."""
    text = DOC.read_text().split("```yaml", 1)[1].split("```", 1)[0]
    env = dict(re.findall(r"^      (KVBENCH_\w+): (\S+)", text, re.MULTILINE))
    return env, re.findall(r"kvbench (?:report|accept)[^\n]*", text)


def test_the_documented_workflow_gives_report_and_accept_one_profile():
    env, steps = _workflow()
    profiles = {re.search(r"--profile (\S+)", s).group(1) if "--profile" in s else env.get("KVBENCH_PROFILE")
                for s in steps}
    assert len(steps) == 2 and len(profiles) == 1 and None not in profiles, (env, steps)


@pytest.mark.parametrize("how", ["id", "latest", "export"])
def test_report_and_accept_of_the_workflow_say_one_verdict(tmp_path, how):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    store_one_case_runs(db, HOST, CTX, CASE, "quick", [(10.0, {}, {})])
    profile = tmp_path / "node.toml"
    profile.write_text('name = "node"\n[expect]\nnics = 1\n')
    env = {"KVBENCH_HOST_ID": HOST, "COLUMNS": "400", "KVBENCH_DB": db, "KVBENCH_PROFILE": str(profile)}
    ref = {"id": "1", "latest": "latest"}.get(how)
    if ref is None:
        ref = str(tmp_path / "run.json")
        assert cli("export", "1", "-o", ref, env=env).returncode == 0
    accept = cli("accept", "--run", ref, "--junit", str(tmp_path / "accept.xml"), env=env)
    md = tmp_path / "report.md"
    cli("report", ref, "-o", str(md), env=env)
    word = accept.stderr.strip().splitlines()[-1].split(":")[0]
    assert word == "FAIL" and md.read_text().lstrip("# ").startswith(word), md.read_text()[:200]
    assert 'name="overall verdict: FAIL' in (tmp_path / "accept.xml").read_text()
    md2 = tmp_path / "unprofiled.md"
    cli("report", ref, "-o", str(md2), env={k: v for k, v in env.items() if k != "KVBENCH_PROFILE"})
    assert "(no host profile: inventory not judged)" in md2.read_text().splitlines()[0]
