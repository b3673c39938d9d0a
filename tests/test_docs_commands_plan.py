"""The newcomer's trip (issue 57 item 13): every `kvbench run --bench … --set …` the docs and the README
show plans as written (docs/mooncake.md's first command gave `--set block_size=1MiB,16MiB`, refused); the
README's regression recipe makes a baseline of the suite it compares; docs/cluster.md says how `python`
and `kvbench` are found; a token count's k is 1024; every file option says FILE."""

import re
import shlex

import pytest

from kvbench.cli.common import pairs
from kvbench.run.suite_run import RunRequest, plan_request
from kvbench.benches.params import coerce_text
from tests.conftest import REPO
from tests.inproc import run_in_process as cli

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _run_lines() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for line in doc.read_text().splitlines():
            text = line.strip().removeprefix("$ ").split("  #")[0].strip()
            if re.match(r"^kvbench run .*--bench ", text) and "…" not in text and "<" not in text and "[" not in text and "$" not in text:
                found.append((doc.name, text))
    return found


@pytest.mark.parametrize("doc,line", _run_lines())
def test_every_documented_run_of_benches_plans_as_written(doc, line):
    args = shlex.split(line)[2:]
    benches = [args[i + 1] for i, a in enumerate(args) if a == "--bench"]
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    overrides = {k: coerce_text(v) for k, v in pairs(sets, "--set").items()}
    cases, _, _ = plan_request(RunRequest(benches=tuple(benches), overrides=overrides))
    assert cases, (doc, line)


def test_the_mooncake_page_is_among_them():
    assert any(doc == "mooncake.md" for doc, _ in _run_lines())


def test_the_readme_makes_a_baseline_of_the_suite_it_compares():
    text = (REPO / "README.md").read_text()
    recipe = text[text.index("**Catch a regression**"):text.index("**Report**")]
    assert "kvbench run --suite quick --tag baseline=1" in recipe and "kvbench compare baseline latest" in recipe


def test_the_cluster_page_says_where_python_and_kvbench_come_from():
    text = (REPO / "docs" / "cluster.md").read_text()
    assert "make shell" in text and ".venv/bin/python -m kvbench.cluster.launch" in text


@pytest.mark.parametrize("text", ["8k", "8K", "8Ki", "8ki", "8192"])
def test_an_8k_context_is_8192_tokens(text):
    from kvbench.units import parse_count

    assert parse_count(text, "--tokens") == 8192


def test_every_option_that_takes_a_file_says_file():
    reference = (REPO / "docs" / "cli.md").read_text()
    assert "`--health FILE`" in reference and "`--plot FILE`" in reference and "`--db DB`" not in reference


def test_the_report_states_dram_in_the_unit_host_profile_and_accept_use(tmp_path):
    import json

    from kvbench.analyze.accept.profile import expect_from_facts

    quick = REPO / "tests" / "fixtures" / "runs" / "quick-cpu-vm.json"
    facts = json.loads(quick.read_text())["host"]["facts"]
    html = tmp_path / "r.html"
    assert cli("report", str(quick), "-o", str(html)).returncode == 0
    numa = re.findall(r"node\d+ (\d+) (GB|GiB)", html.read_text())
    assert numa and all(unit == "GB" for _, unit in numa), numa
    assert sum(int(n) for n, _ in numa) == expect_from_facts(facts)["dram_gb"]
    info = cli("info")
    assert "GiB (cpus" not in info.stdout
